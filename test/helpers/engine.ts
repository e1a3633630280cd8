// A real container engine for the tests: podman (with runc, as scripts/install-test-peers.sh sets
// it up), its Docker API served on a socket for testcontainers, the Dockerfile's base images made
// from Debian's packages (scripts/container-bases.sh: no registry is reachable), and the image
// built from the real Dockerfile. Where no engine can start, `engine()` says why, and the tests
// that need it are skipped with that reason.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';

export const IMAGE = 'localhost/intake-relay:test';
export const BUILD_BASE = 'localhost/intake-relay-base/build:24-bookworm';
export const RUNTIME_BASE = 'localhost/intake-relay-base/runtime:cc-debian12';
export const SOCKET = '/run/podman/podman.sock';
/** Serializes the base images' making and the image's build across test files. */
const LOCK = '/run/lock/intake-relay-image-build.lock';
const ROOT = new URL('../..', import.meta.url).pathname;

export type Engine = { readonly ok: true; readonly revision: string } | { readonly ok: false; readonly why: string };

function answers(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(socket, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

/** podman's Docker API on SOCKET (test/global-setup.ts starts it for the run). */
async function apiService(): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if (await answers(SOCKET)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

/**
 * The CA bundle the machine's npm trusts (NODE_EXTRA_CA_CERTS or npm's cafile): given to the build
 * as the build_ca secret where TLS is intercepted on the way to the registry, as a user would.
 */
function buildCa(): string | undefined {
  const candidates = [process.env.NODE_EXTRA_CA_CERTS, spawnSync('npm', ['config', 'get', 'cafile'], { encoding: 'utf8' }).stdout?.trim()];
  return candidates.find((f) => f && f !== 'null' && existsSync(f));
}

let ready: Promise<Engine> | undefined;

/** The engine, its API, the base images and the image, once per test file; or why not. */
export function engine(): Promise<Engine> {
  ready ??= (async (): Promise<Engine> => {
    if (spawnSync('podman', ['--version']).status !== 0) return { ok: false, why: 'podman is not installed (scripts/install-test-peers.sh installs it)' };
    // One build at a time across the test files that run in parallel (each waits, then reuses the cache).
    const bases = spawnSync('flock', [LOCK, 'bash', `${ROOT}scripts/container-bases.sh`], { encoding: 'utf8', cwd: ROOT });
    if (bases.status !== 0) return { ok: false, why: `the base images could not be made: ${(bases.stderr || bases.stdout).trim().split('\n').slice(-3).join(' ')}` };
    const started = spawnSync('podman', ['run', '--rm', BUILD_BASE, 'true'], { encoding: 'utf8' });
    if (started.status !== 0) return { ok: false, why: `podman cannot start a container here: ${started.stderr.trim().split('\n').at(-1)}` };
    const revision = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const ca = buildCa();
    const build = spawnSync('flock', [LOCK, 'podman',
      'build', '--force-rm', '--format', 'docker', '-t', IMAGE,
      '--build-arg', `BUILD_IMAGE=${BUILD_BASE}`, '--build-arg', `RUNTIME_IMAGE=${RUNTIME_BASE}`, '--build-arg', `REVISION=${revision}`,
      ...(ca ? ['--secret', `id=build_ca,src=${ca}`] : []),
      ROOT,
    ], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    // A failed build is a failure of the tests, not a reason to skip them.
    if (build.status !== 0) throw new Error(`podman build failed:\n${(build.stdout + build.stderr).split('\n').slice(-30).join('\n')}`);
    if (!(await apiService())) return { ok: false, why: `podman's Docker API does not answer on ${SOCKET} (test/global-setup.ts starts it)` };
    process.env.DOCKER_HOST = `unix://${SOCKET}`;
    process.env.TESTCONTAINERS_RYUK_DISABLED = 'true';
    return { ok: true, revision };
  })();
  return ready;
}

/**
 * `podman ...args`, to its end, without blocking this process: a peer it runs (the test intake)
 * must go on answering meanwhile (a relay's stop waits for the intake to confirm what it holds).
 */
export function podmanAsync(args: readonly string[]): Promise<{ status: number | null; stdout: string; stderr: string; ms: number }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const p = spawn('podman', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('close', (status) => resolve({ status, stdout, stderr, ms: Date.now() - t0 }));
  });
}

/** `podman ...args`, to its end. */
export function podman(args: readonly string[], timeoutMs = 60_000): { status: number | null; stdout: string; stderr: string; ms: number } {
  const t0 = Date.now();
  const r = spawnSync('podman', args, { encoding: 'utf8', timeout: timeoutMs });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr.split('\n').filter((l) => !/unable to get systemd connection/.test(l)).join('\n'), ms: Date.now() - t0 };
}
