// One temporary directory for the whole run: every file a test, a peer or a relay under test
// creates through the system's temporary directory (os.tmpdir(), mkdtemp, $TMPDIR in child
// processes) goes under it, and it is removed when the run ends, passed or failed. Directories
// from tempDir() (test/helpers/cleanup.ts) go when their test ends; this catches the rest (a
// suite's directory, a relay's or a peer's kept for reading after it stopped, what a failed or
// timed-out test left), so that runs do not fill the machine's /tmp. And podman's Docker API, where
// podman is installed, for the container tests.
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
  const api = await podmanApi();
  return () => {
    api?.kill();
    rmSync(dir, { recursive: true, force: true });
  };
}
