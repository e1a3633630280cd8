// docs/reference/exit-codes.md: the exit statuses --help lists, each with what leads to it and what
// to do, so that a service manager's "exited with status 78" can be looked up.
import type { HelpModel } from '../deb/help-model.ts';
import { code, pageHead, table } from './markdown.ts';

/**
 * What each status means in more words, by status. Hand-kept beside the help's short words: the
 * page refuses to generate when a status here is not in --help, or one in --help is not here.
 */
const MEANINGS: Readonly<Record<string, string>> = {
  '0': 'Done: `run` stopped on SIGTERM or SIGINT (memory queues drained, a disk queue keeping the rest for the next start); `validate` found the file valid; `check`, `send` and `rules push` succeeded in every step; `healthcheck` got 200 from `/readyz`; `tap` reached its `--limit` or was stopped.',
  '1': 'A runtime failure: `run` could not start (a port in use, or one it may not bind) or a second signal cut its drain short; a step of `check`, `send` or `rules push` failed; `healthcheck` got no 200 (or the configuration is unusable: a health check knows only 0 and 1); `tap` could not reach the daemon, or the daemon refused it. The message on standard error says which.',
  '64': 'A usage error (EX_USAGE): an unknown command or option, an option value out of range, `send` without `--intake` or a message, `rules push` without an API key or for an intake it does not know, a `tap` query the daemon calls malformed. The usage or the reason is printed.',
  '70': 'An internal error (EX_SOFTWARE): `run` met an error it did not expect, logged it at level fatal with its stack, and exited so that the service manager restarts it (the systemd unit\'s `Restart=on-failure`; in a container, its restart policy). What the queues held is kept by a disk queue; a memory queue loses it. Please report it with that log line.',
  '73': 'The state directory (`data_dir`) is in use by another relay (EX_CANTCREAT): two relays must not share disk queues or file checkpoints. Stop the other one, or give this one its own `data_dir`. `validate` says so too. Restarting does not help while the other runs: the systemd unit does not restart on it (`RestartPreventExitStatus=78 73`).',
  '78': 'A configuration error (EX_CONFIG): every problem is printed at once as `file:line:column: key.path: problem`, unset environment variables included. Restarting does not help (the systemd unit does not restart on it: `RestartPreventExitStatus=78 73`): fix the file or the environment, then `intake-relay validate`.',
};

export function exitCodesPage(model: HelpModel): string {
  const said = model.exitStatus.map(([status]) => status);
  const unknown = Object.keys(MEANINGS).filter((s) => !said.includes(s));
  const missing = said.filter((s) => !(s in MEANINGS));
  if (unknown.length > 0 || missing.length > 0) {
    throw new Error(`scripts/docs/exit-codes-page.ts and --help disagree: ${[...missing.map((s) => `${s} has no meaning here`), ...unknown.map((s) => `${s} is not in --help`)].join('; ')}.`);
  }
  return `${pageHead('Exit status', 'the `Exit status:` line of `intake-relay --help` ([src/main.ts](../../src/main.ts)) and the meanings in [scripts/docs/exit-codes-page.ts](../../scripts/docs/exit-codes-page.ts)')}
Every command of [cli.md](cli.md) ends with one of these; the numbers above 1 are those of
\`sysexits.h\`, which service managers and scripts recognise.

${table(['status', '--help says', 'what it means'], model.exitStatus.map(([status, short]) => [code(status), short, MEANINGS[status] ?? '']))}
`;
}
