// The CLI's --help, as this checkout's src/main.ts prints it, read into the model the man page and
// the completion use (scripts/deb/help-model.ts): the reference says what the program says.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseHelp, type HelpModel } from '../deb/help-model.ts';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

export function helpModel(): HelpModel {
  // Nothing of the caller's environment: $INTAKE_RELAY_CONFIG would change the default it prints.
  const r = spawnSync(process.execPath, [MAIN, '--help'], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' } });
  if (r.error || r.status !== 0) throw new Error(`node src/main.ts --help failed (${r.error?.message ?? `exit status ${r.status}`}): ${r.stderr}`);
  return parseHelp(r.stdout);
}
