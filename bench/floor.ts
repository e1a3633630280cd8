// `npm run bench:floor`: how much of the single executable's memory at rest is the relay's own.
// Starts the executable (RELAY_BIN, else build/intake-relay-linux-<arch>: `npm run package` first)
// with one TCP and one UDP input and a TLS output connected to a local intake, records which of
// Node's built-in modules it loaded, then builds a "floor" executable the same way (the same Node,
// a code cache) whose script only requires those modules and waits, and reads both processes' RSS
// side by side after 10 s at rest. As root the page cache is dropped before both start, as after a
// reboot (--keep-caches to leave it): pages of an executable are mapped in 64 KiB runs around each
// page touched when they are cached, so file-backed figures move with the cache; anonymous memory
// does not. The relay lets go of the executable's pages its start used (src/core/native-addon.ts),
// the floor does not: compare their anonymous memory. For reading, never asserted by tests.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { IntakeEmulator } from '../src/emulator/intake-emulator.ts';
import { selfSignedCertificate } from '../src/emulator/self-signed.ts';
import { freePort } from './ports.ts';
import { useRunTempDir } from './temp-dir.ts';

const root = new URL('..', import.meta.url).pathname;
const require = createRequire(import.meta.url);
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});
const dir = useRunTempDir('floor-run-');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

const relayBin = process.env.RELAY_BIN ?? join(root, 'build', `intake-relay-linux-${process.arch}`);
if (!existsSync(relayBin)) {
  process.stderr.write(`${relayBin} does not exist: run \`npm run package -- --arch ${process.arch}\` first, or set RELAY_BIN.\n`);
  process.exit(1);
}
// Only with the cache dropped do the two executables start alike: the floor was just written (all
// of it cached), the relay's executable was not (or was, and holds a larger blob).
const dropCaches = process.getuid?.() === 0 && !process.argv.includes('--keep-caches');

/** RSS, anonymous and file-backed, in MiB, from /proc/PID/status. */
function memory(pid: number): { rss: number; anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'latin1');
  const mib = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? Number.NaN) / 1024;
  return { rss: mib('VmRSS'), anon: mib('RssAnon'), file: mib('RssFile') };
}

function start(exe: string, args: string[], env: NodeJS.ProcessEnv = process.env): ChildProcess {
  const proc = spawn(exe, args, { stdio: ['ignore', 'inherit', 'inherit'], env });
  children.add(proc);
  return proc;
}

async function waitFor(what: string, ready: () => boolean): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (ready()) return;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

// 1. The relay, with a preload that writes the public built-in modules it has loaded.
const { cert, key } = selfSignedCertificate();
const intake = new IntakeEmulator({ port: 0, cert, key, checkEvery: 1000, onMessage: () => {}, onProtocolError: () => {} });
await intake.start();
writeFileSync(join(dir, 'ca.pem'), intake.caPem);
const [tcpPort, udpPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
writeFileSync(
  join(dir, 'relay.yaml'),
  `log_level: warn
data_dir: ${join(dir, 'state')}
metrics: { address: 127.0.0.1, port: ${metricsPort} }
intakes:
  - name: floor
    intake_key: FloorKey0123456789abcdefABCDEF01
    inputs:
      - { type: tcp, address: 127.0.0.1, port: ${tcpPort} }
      - { type: udp, address: 127.0.0.1, port: ${udpPort} }
    output: { type: syslog, host: 127.0.0.1, port: ${intake.port}, server_name: localhost, ca_file: ${join(dir, 'ca.pem')} }
`,
);
const loadedFile = join(dir, 'builtins.json');
writeFileSync(
  join(dir, 'record-builtins.cjs'),
  `setTimeout(() => require('node:fs').writeFileSync(${JSON.stringify(loadedFile)}, JSON.stringify(process.moduleLoadList)), 3000).unref();\n`,
);

// 2. The floor: the same Node, a script that requires what the relay loaded, and waits.
async function buildFloor(modules: string[]): Promise<string> {
  writeFileSync(join(dir, 'floor.cjs'), `for (const m of ${JSON.stringify(modules)}) require(m);\nsetInterval(() => {}, 60000);\n`);
  writeFileSync(join(dir, 'sea.json'), JSON.stringify({ main: join(dir, 'floor.cjs'), output: join(dir, 'floor.blob'), disableExperimentalSEAWarning: true, useCodeCache: true }));
  execFileSync(process.execPath, ['--experimental-sea-config', join(dir, 'sea.json')], { stdio: 'ignore' });
  const exe = join(dir, 'floor');
  execFileSync('cp', [join(dirname(require.resolve('node/package.json')), 'bin', 'node'), exe]);
  execFileSync(join(root, 'node_modules', '.bin', 'postject'), [exe, 'NODE_SEA_BLOB', join(dir, 'floor.blob'), '--sentinel-fuse', SEA_FUSE], { stdio: 'ignore' });
  return exe;
}

const probe = start(relayBin, [`--node-options=--require=${join(dir, 'record-builtins.cjs')}`, 'run', '-c', join(dir, 'relay.yaml')]);
await waitFor('the relay to list its modules', () => existsSync(loadedFile));
probe.kill('SIGTERM');
const publicNames = new Set(builtinModules);
const modules = [...new Set((JSON.parse(readFileSync(loadedFile, 'utf8')) as string[])
  .filter((m) => m.startsWith('NativeModule '))
  .map((m) => m.slice('NativeModule '.length))
  .filter((m) => publicNames.has(m) && !m.startsWith('_')))]
  .map((m) => `node:${m}`);
const floorExe = await buildFloor(modules);
await new Promise((resolve) => (probe.exitCode === null ? probe.once('exit', resolve) : resolve(undefined)));

// 3. Both at rest, side by side.
if (dropCaches) {
  execFileSync('sync');
  writeFileSync('/proc/sys/vm/drop_caches', '1');
}
const relay = start(relayBin, ['run', '-c', join(dir, 'relay.yaml')]);
const floor = start(floorExe, []);
await sleep(10_000);
const [r, f] = [memory(relay.pid as number), memory(floor.pid as number)];
const line = (name: string, m: { rss: number; anon: number; file: number }): string =>
  `${name}: RSS ${m.rss.toFixed(1)} MiB (anonymous ${m.anon.toFixed(1)}, file ${m.file.toFixed(1)})`;
process.stdout.write(
  `built-in modules the relay loaded (${modules.length}): ${modules.map((m) => m.slice(5)).join(' ')}\n` +
    `page cache: ${dropCaches ? 'dropped before the start' : 'NOT dropped (not root, or --keep-caches): the file-backed figures compare the cache, not the programs'}\n` +
    `${line('relay at rest', r)}\n${line('Node with those modules, at rest', f)}\n` +
    `the relay's own: ${(r.anon - f.anon).toFixed(1)} MiB anonymous; file-backed (mostly the executable's pages): ${(r.file - f.file).toFixed(1)} MiB (the relay lets go of the executable's pages its start used, the floor keeps them)\n`,
);
relay.kill('SIGTERM');
floor.kill('SIGTERM');
await intake.stop();
process.exit(0);
