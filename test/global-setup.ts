// One temporary directory for the whole run: every file a test, a peer or a relay under test
// creates through the system's temporary directory (os.tmpdir(), mkdtemp, $TMPDIR in child
// processes) goes under it, and it is removed when the run ends, passed or failed. Directories
// from tempDir() (test/helpers/cleanup.ts) go when their test ends; this catches the rest (a
// suite's directory, a relay's or a peer's kept for reading after it stopped, what a failed or
// timed-out test left), so that runs do not fill the machine's /tmp.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  // A short name: a longer run of letters and digits in a path reads as a credential to the
  // configuration's secret scrubber, and the messages tests compare would show [redacted].
  const dir = mkdtempSync(join(tmpdir(), 'relay-tests-'));
  // Test files run in forked workers started after this, with this environment.
  process.env.TMPDIR = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
