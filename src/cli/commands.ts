// The command line's one model: every command with its usage, what it does, the options it takes
// (each explained) and an example. `--help` (which the man page and the completion are generated
// from: scripts/deb/help-model.ts), `intake-relay help CMD` and `CMD --help` are written from it,
// and the arguments are checked against it: an unknown command or option, or one the command does
// not take, is one line with a suggestion (exit 64).

import { didYouMean } from '../core/suggest.ts';

export const DEFAULT_CONFIG_PATH = '/etc/intake-relay/intake-relay.yaml';

/** Every option any command takes, as node:util parseArgs reads them. */
export const OPTIONS = {
  config: { type: 'string', short: 'c' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
  port: { type: 'string' },
  host: { type: 'string' },
  'cert-file': { type: 'string' },
  'key-file': { type: 'string' },
  quiet: { type: 'boolean', short: 'q' },
  intake: { type: 'string' },
  'api-key': { type: 'string' },
  'api-url': { type: 'string' },
  'dry-run': { type: 'boolean' },
  print: { type: 'boolean' },
  'watch-config': { type: 'boolean' },
  input: { type: 'string' },
  limit: { type: 'string' },
  rate: { type: 'string' },
  format: { type: 'string' },
  once: { type: 'boolean' },
  json: { type: 'boolean' },
} as const;

export type OptionName = keyof typeof OPTIONS;

/** What each option means, for a command's own help. */
const OPTION_HELP: Record<OptionName, string> = {
  config: `the configuration file (default: $INTAKE_RELAY_CONFIG, else ${DEFAULT_CONFIG_PATH}); the official forwarder's intakes.yaml is read as it is`,
  help: 'this help',
  version: 'the version, commit and Node.js version',
  port: 'the port to listen on (default 10514)',
  host: 'the address to listen on (default 127.0.0.1)',
  'cert-file': 'the TLS certificate to serve (default: a self-signed one for localhost)',
  'key-file': 'the key of --cert-file',
  quiet: 'print refused messages only',
  intake: 'the intake (by name) to act on',
  'api-key': 'the platform API key (default: $INTAKE_RELAY_API_KEY)',
  'api-url': 'another API base than the region\'s',
  'dry-run': 'say what would be created, create nothing',
  print: 'print the effective configuration as YAML (defaults filled in, keys redacted)',
  'watch-config': 'reload when the file changes, as on SIGHUP',
  input: 'the input (by name) to watch',
  limit: 'stop after N events (default 0: until interrupted)',
  rate: 'at most N events a second (default 100; what is skipped is counted on stderr)',
  format: 'text (one readable line per event; the default on a terminal) or json (the default when piped)',
  once: 'print one snapshot and exit (what it does without a terminal)',
  json: 'with --once: the snapshot as JSON, as /snapshot serves it',
};

export interface CommandSpec {
  /** `['run']`, `['rules', 'push']`. */
  readonly words: readonly string[];
  /** The usage after the command words, as --help prints it. */
  readonly usage: string;
  /** What it does, in the lines --help prints under the usage. */
  readonly what: readonly string[];
  readonly options: readonly OptionName[];
  readonly example: string;
}

export const COMMANDS: readonly CommandSpec[] = [
  {
    words: ['run'], usage: '[-c FILE] [--watch-config]', options: ['config', 'watch-config'],
    what: ['run the daemon; SIGHUP (or, with --watch-config, a change of', 'the file) reloads the configuration'],
    example: 'INTAKE_KEY=... intake-relay run -c config/intake-relay.yaml',
  },
  {
    words: ['validate'], usage: '[-c FILE] [--print]', options: ['config', 'print'],
    what: ['check a configuration; print a summary, or with --print the', 'effective configuration as YAML (keys redacted)'],
    example: 'intake-relay validate -c /etc/intake-relay/intake-relay.yaml',
  },
  {
    words: ['emulate'], usage: '[--port N] [--host ADDR] [--cert-file F --key-file F] [--quiet]', options: ['port', 'host', 'cert-file', 'key-file', 'quiet'],
    what: ['run a local intake emulator that checks what it receives'],
    example: 'intake-relay emulate --port 10514',
  },
  {
    words: ['check'], usage: '[-c FILE] [--api-key KEY] [--api-url URL]', options: ['config', 'api-key', 'api-url'],
    what: [
      'for every intake: name resolution, TCP connect and TLS handshake',
      '(certificate and host name verified) to its endpoint, and',
      'for RELP the session\'s open on each host name it may use,',
      'each reported; with an API key (or $INTAKE_RELAY_API_KEY),',
      'GET /v1/me (--api-url: another API base than the region\'s)',
    ],
    example: 'intake-relay check -c /etc/intake-relay/intake-relay.yaml',
  },
  {
    words: ['send'], usage: '[-c FILE] --intake NAME MESSAGE...', options: ['config', 'intake'],
    what: ['send test events through the intake\'s real output, and wait', 'until they are acknowledged'],
    example: 'intake-relay send --intake firewalls "a test event"',
  },
  {
    words: ['rules', 'push'], usage: '[-c FILE] [--intake NAME] [--api-key KEY] [--api-url URL] [--dry-run]', options: ['config', 'intake', 'api-key', 'api-url', 'dry-run'],
    what: ['create the intakes\' filters on the platform as optimization', 'rules (the API key needs SIC_WRITE_CONF_INTAKES; it may also', 'come from $INTAKE_RELAY_API_KEY)'],
    example: 'INTAKE_RELAY_API_KEY=... intake-relay rules push --dry-run',
  },
  {
    words: ['healthcheck'], usage: '[-c FILE]', options: ['config'],
    what: ['exit 0 when the daemon running this configuration answers', '200 on /readyz, else 1 (the container image\'s HEALTHCHECK)'],
    example: 'intake-relay healthcheck && echo ready',
  },
  {
    words: ['tap'], usage: '[-c FILE] [--intake NAME] [--input NAME] [--limit N] [--rate N] [--format json|text]', options: ['config', 'intake', 'input', 'limit', 'rate', 'format'],
    what: ['print the events the running daemon receives, live, as they', 'leave the parser (at most --rate a second, default 100;', '--limit: stop after N); from its operations port, local only'],
    example: 'intake-relay tap --intake firewalls --limit 20',
  },
  {
    words: ['top'], usage: '[-c FILE] [--once [--json]]', options: ['config', 'once', 'json'],
    what: ['a live view of the running daemon, refreshed every second:', 'per intake events/s in and out, queue, backlog and time', 'left, drops, output state; inputs; threads (q quits,', 's sorts, up/down pick an intake); from its operations port'],
    example: 'intake-relay top --once',
  },
  {
    words: ['help'], usage: '[COMMAND]', options: [],
    what: ['this help, or a command\'s own: its options and an example'],
    example: 'intake-relay help tap',
  },
];

const EXIT_STATUS = 'Exit status: 0 ok, 1 runtime failure, 64 usage error, 70 internal error, 73 state in use by another relay, 78 configuration error.';
const DESCRIPTION_COLUMN = 41;

/** The whole --help text. */
export function helpText(defaultConfig: string): string {
  const usage = COMMANDS.flatMap((c) => [
    `  intake-relay ${c.words.join(' ').padEnd(8)} ${c.usage}`,
    ...c.what.map((l) => `${' '.repeat(DESCRIPTION_COLUMN)}${l}`),
  ]);
  return `intake-relay: forwards syslog to a security platform's intake over TLS.

Usage:
${usage.join('\n')}
  intake-relay --version | --help

  -c, --config FILE   configuration (default: $INTAKE_RELAY_CONFIG or ${defaultConfig}).
                      Also accepts the official forwarder's intakes.yaml as it is.

Examples:
  intake-relay validate -c /etc/intake-relay/intake-relay.yaml
  INTAKE_KEY=... intake-relay run -c config/intake-relay.yaml
  intake-relay emulate --port 10514

${EXIT_STATUS}`;
}

/** The command `positionals` names (`rules push` takes two words), or undefined. */
export function commandOf(positionals: readonly string[]): CommandSpec | undefined {
  return COMMANDS.find((c) => c.words.every((w, i) => positionals[i] === w));
}

/** Words of `text` in lines of at most `width` columns, the first after `first`, the rest after `indent` spaces. */
function wrap(text: string, width: number, first: string, indent: number): string[] {
  const lines: string[] = [];
  let line = first;
  for (const word of text.split(' ')) {
    const room = line.length > (lines.length === 0 ? first.length : indent);
    if (room && line.length + 1 + word.length > width) {
      lines.push(line);
      line = `${' '.repeat(indent)}${word}`;
    } else line = room ? `${line} ${word}` : `${line}${word}`;
  }
  lines.push(line);
  return lines;
}

/** One command's help, in 80 columns: usage, what it does, its options, an example. */
export function commandHelp(c: CommandSpec): string {
  const placeholder = (o: OptionName): string => {
    const short = (OPTIONS[o] as { short?: string }).short;
    return new RegExp(`(?:--${o}${short ? `|-${short}` : ''}) (\\S+?)\\]?(?: |$)`).exec(c.usage)?.[1] ?? 'VALUE';
  };
  const flag = (o: OptionName): string => {
    const spec = OPTIONS[o] as { type: string; short?: string };
    return `${spec.short ? `-${spec.short}, ` : '    '}--${o}${spec.type === 'string' ? ` ${placeholder(o)}` : ''}`;
  };
  const opts = [...c.options, 'help' as const].flatMap((o) => wrap(OPTION_HELP[o], 80, `  ${flag(o).padEnd(22)} `, 25));
  return [
    ...wrap(`${c.words.join(' ')} ${c.usage}`.trimEnd(), 80, 'Usage: intake-relay ', 20),
    '',
    ...wrap(`${c.what.join(' ').replace(/^./, (ch) => ch.toUpperCase())}.`, 80, '', 0),
    '',
    'Options:',
    ...opts,
    '',
    'Example:',
    `  ${c.example}`,
  ].join('\n');
}

const WORDS = COMMANDS.map((c) => c.words.join(' '));

/** What is wrong with a command line, as one line (with a suggestion), or undefined. */
export function usageProblem(positionals: readonly string[], given: readonly string[]): string | undefined {
  const c = commandOf(positionals);
  if (!c) {
    const asked = positionals[0] === 'rules' ? positionals.slice(0, 2).join(' ') : (positionals[0] ?? '');
    return `Unknown command "${asked}"${didYouMean(asked, WORDS)}: intake-relay --help lists them.`;
  }
  const wrong = given.filter((o) => o !== 'help' && !(c.options as readonly string[]).includes(o));
  if (wrong.length > 0) return `intake-relay ${c.words.join(' ')} does not take --${wrong[0]}: intake-relay ${c.words.join(' ')} --help lists its options.`;
  return undefined;
}

/** parseArgs' "Unknown option '--limt'" as one line with a suggestion. */
export function unknownOption(message: string, positionals: readonly string[]): string {
  const m = /Unknown option '(-{1,2}[^']*)'/.exec(message);
  if (!m) return message;
  const c = commandOf(positionals);
  const allowed = (c ? [...c.options, 'help'] : Object.keys(OPTIONS)).map((o) => `--${o}`);
  const where = c ? `intake-relay ${c.words.join(' ')} --help` : 'intake-relay --help';
  return `Unknown option "${m[1]}"${didYouMean(m[1] as string, allowed)}: ${where} lists the options.`;
}
