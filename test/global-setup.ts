// One temporary directory for the whole run: every file a test, a peer or a relay under test
// creates through the system's temporary directory (os.tmpdir(), mkdtemp, $TMPDIR in child
// processes) goes under it, and it is removed when the run ends, passed or failed. Directories
// from tempDir() (test/helpers/cleanup.ts) go when their test ends; this catches the rest (a
// suite's directory, a relay's or a peer's kept for reading after it stopped, what a failed or
// timed-out test left), so that runs do not fill the machine's /tmp. And podman's Docker API, where
// podman is installed, for the container tests; when the run ends, the images it built go too (the
// test image and every intermediate layer of its build: kept, each run left 1.5 GB in podman's
// store, and the CI machine's disk filled). The base images stay: they are named, made once, and
// the next run builds on them.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The engine's Docker API for testcontainers (test/helpers/engine.ts), once for the whole run. */
const PODMAN_SOCKET = '/run/podman/podman.sock';

function answers(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(socket, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

/** The test image's tag (test/helpers/engine.ts). */
const TEST_IMAGE = 'localhost/intake-relay:test';

/** Every image in podman's store, intermediate ones included, with its names; undefined without podman. */
function podmanImages(): Map<string, string[]> | undefined {
  const r = spawnSync('podman', ['images', '--all', '--no-trunc', '--format', '{{.ID}} {{.Repository}}:{{.Tag}}'], { encoding: 'utf8' });
  if (r.status !== 0) return undefined;
  const images = new Map<string, string[]>();
  for (const line of r.stdout.split('\n')) {
    const [id, name] = line.split(' ');
    if (!id || !name) continue;
    const names = images.get(id) ?? [];
    if (name !== '<none>:<none>') names.push(name);
    images.set(id, names);
  }
  return images;
}

/**
 * Removes the images made since `before`: unnamed ones (the build's layers) and the test image.
 * Named images made meanwhile (the base images, on a machine's first run) are kept.
 */
function sweepImages(before: Map<string, string[]>): void {
  const after = podmanImages();
  if (!after) return;
  const made = [...after].filter(([id, names]) => !before.has(id) && names.every((n) => n === TEST_IMAGE)).map(([id]) => id);
  if (made.length === 0) return;
  // One call: podman removes children before their parents.
  const r = spawnSync('podman', ['rmi', '--ignore', ...made], { encoding: 'utf8', timeout: 300_000 });
  if (r.status !== 0) process.stderr.write(`global-setup: ${made.length} images this run built were not all removed: ${r.stderr.trim().split('\n').at(-1)}\n`);
}

async function podmanApi(): Promise<ChildProcess | undefined> {
  if (spawnSync('podman', ['--version']).status !== 0 || (await answers(PODMAN_SOCKET))) return undefined;
  mkdirSync('/run/podman', { recursive: true });
  // A socket file left by a service that ended: podman would not listen on it.
  rmSync(PODMAN_SOCKET, { force: true });
  return spawn('podman', ['system', 'service', '--time=0', `unix://${PODMAN_SOCKET}`], { stdio: 'ignore' });
}

export default async function setup(): Promise<() => void> {
  // A short name: a longer run of letters and digits in a path reads as a credential to the
  // configuration's secret scrubber, and the messages tests compare would show [redacted].
  const dir = mkdtempSync(join(tmpdir(), 'relay-tests-'));
  // Test files run in forked workers started after this, with this environment.
  process.env.TMPDIR = dir;
  const images = podmanImages();
  const api = await podmanApi();
  return () => {
    api?.kill();
    if (images) sweepImages(images);
    rmSync(dir, { recursive: true, force: true });
  };
}
