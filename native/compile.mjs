// Builds native/build/relay.node, the relay's native addon (addon.c, which registers the calls of
// each concern: udp-recvmmsg.c, the UDP input's batched receive; process.c, the C library's free
// memory and state directory locks; copy-runs.c, the batch formatter's copies and the JSON body's escapes), with the machine's C compiler and the Node-API headers of the
// Node running this script. Run by
// `npm ci` / `npm install` (the install script, also in an installed npm package: plain JavaScript,
// since Node does not strip types under node_modules), `npm run build` and `npm run package`.
// Where it cannot build (not Linux, no compiler, no headers), it says so in one line and exits 0:
// the UDP input then uses Node's dgram, and nothing is trimmed. `--strict` makes that an error.
//   node native/compile.mjs [--strict]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SOURCES = ['addon.c', 'udp-recvmmsg.c', 'process.c', 'copy-runs.c'].map((f) => join(ROOT, 'native', f));
const HEADER = join(ROOT, 'native', 'addon.h');
const NATIVE_OUT = join(ROOT, 'native', 'build', 'relay.node');

/** Directories that may hold node_api.h: beside this Node, the node@24 devDependency, the system's. */
function headerDirs() {
  return [
    process.env.NODE_API_INCLUDE,
    join(dirname(process.execPath), '..', 'include', 'node'),
    join(ROOT, 'node_modules', 'node', 'node_modules', `node-linux-${process.arch}`, 'include', 'node'),
    '/usr/include/node',
  ].filter((d) => d !== undefined && existsSync(join(d, 'node_api.h')) && existsSync(join(d, 'uv.h')));
}

/** @returns {{ built: boolean, reason: string }} */
function buildNative() {
  if (process.platform !== 'linux') return { built: false, reason: `the native addon is Linux only (this is ${process.platform})` };
  const newest = Math.max(...[...SOURCES, HEADER].map((f) => statSync(f).mtimeMs));
  if (existsSync(NATIVE_OUT) && statSync(NATIVE_OUT).mtimeMs >= newest) return { built: true, reason: 'up to date' };
  const include = headerDirs()[0];
  if (!include) return { built: false, reason: 'no Node-API headers found (set NODE_API_INCLUDE to a directory with node_api.h and uv.h)' };
  const cc = process.env.CC ?? 'cc';
  mkdirSync(dirname(NATIVE_OUT), { recursive: true });
  const tmp = `${NATIVE_OUT}.tmp`;
  try {
    execFileSync(cc, ['-O2', '-Wall', '-Wextra', '-shared', '-fPIC', '-fvisibility=hidden', '-pthread', `-I${include}`, '-o', tmp, ...SOURCES], { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = /** @type {NodeJS.ErrnoException & { stderr?: Buffer }} */ (err);
    const why = e.code === 'ENOENT' ? `no C compiler (${cc}); install gcc and libc6-dev` : (e.stderr?.toString().trim().split('\n').slice(-3).join(' ') ?? e.message);
    return { built: false, reason: why };
  }
  renameSync(tmp, NATIVE_OUT);
  return { built: true, reason: `built with ${cc} against ${include}` };
}

// stderr: `npm pack --json` (prepack builds) prints JSON on stdout.
const r = buildNative();
if (r.built) {
  if (r.reason !== 'up to date') console.error(`intake-relay: native addon ${r.reason}: ${NATIVE_OUT}.`);
} else {
  console.warn(`intake-relay: native addon not built: ${r.reason}. UDP inputs use Node's dgram (slower per datagram), batches are copied event by event, memory freed after a burst is not trimmed, and state directories are locked with flock(1) where it exists.`);
  if (process.argv.includes('--strict')) process.exit(1);
}
