#!/usr/bin/env -S node --max-semi-space-size=2 --heap-growing-percent=50 --expose-gc --no-allocation-site-pretenuring
// The `intake-relay` command. Runs the compiled dist/main.js (`npm run build`); in a source checkout
// without a build it falls back to src/main.ts through Node's type stripping.
// --max-semi-space-size=2: 2 MiB semi-spaces (a 4 MiB young generation). Events die young: on the
// TCP, UDP and file paths what survives a scavenge is the queue's two batches, and the buffers of
// the reads they came from die at the scavenge after them, so a scavenge twice as often halves
// those too. Against 4 MiB semi-spaces (which measured 10-21 MiB less than 8, once readers were
// held to a queue of two batches, src/core/queue.ts): 4-6 MiB less peak anonymous memory on TCP, UDP
// and file; with the flag below, the same CPU per event on TCP and UDP, 10-18% more on file
// (docs/performance.md).
// --heap-growing-percent=50: with the smaller young generation, more of an HTTPS batch's events
// (alive until the intake answers) reach the old generation, 34 MB per million against 11, and V8
// let the old generation grow to several times what was live before a full collection: HTTPS peaks
// of 85-99 MiB. A full collection once the old generation has grown by half of what was live
// holds them at 55-60 MiB, for 6-9 full collections per million events instead of 1-3 (about 10%
// more CPU per event on that path, and on the RELP output 3.3-3.5 us per event against 2.9).
// The young generation grows from V8's 1 MiB under the first burst. Starting it at 8 MiB
// (--min-semi-space-size=8, from 0.2.0 until the UDP input got its reader thread) kept that
// growth's scavenges from stalling a UDP socket's reads; the reader thread now drains the socket
// through any stall, and without the flag the same CPU per event was measured on TCP, UDP and file
// paths, with 25 MiB of anonymous memory at rest instead of 30-31 (docs/performance.md).
// --expose-gc: the housekeeping's memory-reducing collection when the outputs fall idle and after
// the start (src/platform/v8-gc.ts): 19-20 MiB at rest instead of 24-25.
// --no-allocation-site-pretenuring: V8 otherwise learns, from a burst in which most events
// outlive a scavenge, to make the objects of an allocation site (events, their reads' buffers) in
// the old generation at once, where only a full collection frees them. Under an HTTPS flood it did,
// and the buffers of events long written piled up to the memory guard's mark at every turn; a file
// run did the same or not from one run to the next. Without it: HTTPS peaks of 84-91 MiB instead of
// 116, 1 full collection instead of 9-13, and less CPU per event; TCP, UDP and file unchanged or
// better (docs/performance.md, "Memory near the budget").
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
