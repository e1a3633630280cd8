// One temporary directory per bench run: the relays' configurations and state, the peers' work
// directories and the files written for the file scenario go under it (TMPDIR, which os.tmpdir()
// and the forked receivers read), and it is removed when the run ends: normally, on an error, on
// Ctrl-C or on TERM (not on KILL).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Call after the handler that kills the run's child processes, so that this one runs after it. */
export function useRunTempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  process.env.TMPDIR = dir;
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  // Interrupted (Ctrl-C, a timeout's TERM): exit handlers run (children killed, this removed).
  process.once('SIGINT', () => process.exit(130));
  process.once('SIGTERM', () => process.exit(143));
  return dir;
}
