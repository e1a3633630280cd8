// The npm package as a user gets it: `npm pack` (prepack builds dist/), `npm install -g` of the
// tarball into a temporary prefix, then the installed `intake-relay` run with Node 24 first on PATH,
// and with the machine's older Node, which must get the one-line floor message.
// The pack runs in a copy of the checkout, so that its prepack never rebuilds the checkout's dist/
// under another test.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeFloorProblem, VERSION } from '../../src/version.ts';
import { FLOOD_BUDGET, floodToFullQueue } from '../helpers/memory-flood.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
/** Node 24 (the one running the tests) first, then the system's tools. */
const PATH24 = `${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`;
/** What never goes into the copy the pack is made from: build outputs, dependencies, history. */
const NOT_COPIED = new Set(['node_modules', '.git', 'dist', 'build', 'coverage', 'state', 'tmp', '.vitest']);

let dir: string;
let prefix: string;
let files: string[];

function installed(args: readonly string[], path = PATH24): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(join(prefix, 'bin', 'intake-relay'), args, { encoding: 'utf8', env: { PATH: path, HOME: dir } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'npm-package-'));
  const src = join(dir, 'src');
  cpSync(ROOT, src, { recursive: true, filter: (from) => !NOT_COPIED.has(from.slice(ROOT.length).split('/')[0] as string) });
  symlinkSync(join(ROOT, 'node_modules'), join(src, 'node_modules'));
  mkdirSync(join(dir, 'pack'));
  const env = { ...process.env, PATH: PATH24, npm_config_update_notifier: 'false' };
  const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', join(dir, 'pack')], { cwd: src, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })) as { filename: string; files: { path: string }[] }[];
  files = packed[0]!.files.map((f) => f.path);
  prefix = join(dir, 'prefix');
  // The dependencies come from npm's cache when `npm ci` has filled it, else from the registry.
  execFileSync('npm', ['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', join(dir, 'pack', packed[0]!.filename)], { env, stdio: ['ignore', 'pipe', 'pipe'] });
}, 240_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('npm package', () => {
  it('holds what the command needs, and no tests, fixtures, keys or sources', () => {
    for (const f of ['package.json', 'README.md', 'LICENSE', 'bin/intake-relay.js', 'dist/main.js', 'dist/build-info.json', 'config/intake-relay.yaml', 'deploy/intake-relay.service', 'native/addon.c', 'native/addon.h', 'native/udp-recvmmsg.c', 'native/process.c', 'native/copy-runs.c', 'native/compile.mjs']) expect(files).toContain(f);
    // The native UDP receive is built where the package is installed, never shipped as a binary.
    expect(files.filter((f) => f.endsWith('.node'))).toEqual([]);
    const unwanted = files.filter((f) => /^(test|src|scripts|bench|build|node_modules)\/|fixtures|\.(key|pem|crt|p12|tgz)$|key\.pem|\.ts$/.test(f));
    expect(unwanted).toEqual([]);
  });

  it('builds the native UDP receive at install (its install script, with this machine\'s compiler)', () => {
    expect(existsSync(join(prefix, 'lib', 'node_modules', 'intake-relay', 'native', 'build', 'relay.node'))).toBe(true);
  });

  it('installs a working `intake-relay`: --version, and validate of the shipped config', () => {
    const v = installed(['--version']);
    // The copy has no .git: the commit is unknown (from a checkout, `npm pack` records it).
    expect(v).toEqual({ code: 0, stdout: `intake-relay ${VERSION} (commit unknown, Node.js ${process.version})\n`, stderr: '' });
    const config = join(prefix, 'lib', 'node_modules', 'intake-relay', 'config', 'intake-relay.yaml');
    const r = installed(['validate', '-c', config]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain(`${config}: valid`);
    expect(r.code).toBe(0);
  });

  it('run with memory_bytes: 64 MiB, its intake down and its memory queue filled by a TCP flood, stays under 64 MiB of anonymous memory', async () => {
    const peak = await floodToFullQueue(join(prefix, 'bin', 'intake-relay'), { ...process.env, PATH: PATH24 });
    console.log(`installed package, memory_bytes 64 MiB, queue full: peak anonymous memory ${(peak / 1024 / 1024).toFixed(1)} MiB`);
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThan(FLOOD_BUDGET);
  }, 90_000);

  // The Node.js of the distribution (20 on Debian 12's runners) is older than the floor.
  const oldNode = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => existsSync(p) && nodeFloorProblem(spawnSync(p, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim()));
  it.skipIf(!oldNode)(`on the machine's older Node (${oldNode}), says which Node it needs in one line and exits 1`, () => {
    const version = spawnSync(oldNode!, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim();
    const r = installed(['validate', '-c', '/nonexistent.yaml'], `${dirname(oldNode!)}:/usr/bin:/bin`);
    expect(r).toEqual({ code: 1, stdout: '', stderr: `${nodeFloorProblem(version)}\n` });
  });
});
