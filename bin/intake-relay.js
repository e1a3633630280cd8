#!/usr/bin/env -S node --max-semi-space-size=8 --min-semi-space-size=8
// The `intake-relay` command. Runs the compiled dist/main.js (`npm run build`); in a source checkout
// without a build it falls back to src/main.ts through Node's type stripping.
// --max-semi-space-size=8: an 8 MiB young generation measured less CPU per event and a smaller
// peak RSS than 16 MiB since readers are held to a short queue (events die young either way), and
// a smaller peak on TCP than 4 MiB (README, "Performance").
// --min-semi-space-size=8: the young generation at that size from the start. Grown from V8's 1 MiB
// under a first burst, it cost 26 ms of scavenges in the load's first 100 ms, and UDP at 100,000
// datagrams/s lost 182 to 6,208 of 500,000 then (a 4 MiB socket buffer holds about 75 ms); with it,
// 0 in 3 runs, and 4.2-4.6 us of CPU per datagram instead of 5.3-5.5 (docs/performance.md). The
// price: about 5 MiB more anonymous memory at rest (31 instead of 26 MiB).
//
// Node.js first, before anything is imported: an older one crashes inside a dependency with a stack
// trace (undici on 22.12), or cannot read the sources at all (Node 20). The floor is the oldest Node
// of each line on which the whole test suite passes; package.json `engines` and src/version.ts say
// the same (test/unit/node-floor.test.ts checks that they agree).
const FLOOR = { 22: [22, 19, 0], 24: [24, 0, 0] };
const [major = 0, minor = 0, patch = 0] = process.versions.node.split('.').map(Number);
const floor = major === 22 ? FLOOR[22] : major >= 24 ? FLOOR[24] : undefined;
if (!floor || (major === floor[0] && (minor < floor[1] || (minor === floor[1] && patch < floor[2])))) {
  process.stderr.write(
    `intake-relay needs Node.js ${FLOOR[22].join('.')} or later 22.x, or ${FLOOR[24].join('.')} or later (this is ${process.versions.node}): ` +
      'install Node.js 24 LTS from https://nodejs.org/en/download or your distribution, or use the intake-relay binary, which needs no Node.js.\n',
  );
  process.exit(1);
}

const { existsSync } = await import('node:fs');
const dist = new URL('../dist/main.js', import.meta.url);
await import(existsSync(dist) ? dist.href : new URL('../src/main.ts', import.meta.url).href);
