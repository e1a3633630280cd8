// docs/reference/cli.md: every command and option, from the --help model the man page and the bash
// completion are generated from (scripts/deb/help-model.ts).
import { spellings, type Command, type HelpModel } from '../deb/help-model.ts';
import { code, pageHead, table } from './markdown.ts';

/** The help's fragments as sentences: "run the daemon; ..." begins a paragraph here. */
const sentence = (s: string): string => `${s.charAt(0).toUpperCase()}${s.slice(1)}${/[.!?]$/.test(s) ? '' : '.'}`;

const usage = (words: readonly string[], rest: string): string => ['intake-relay', ...words, rest].filter(Boolean).join(' ');

function command(model: HelpModel, c: Command): string {
  const options = c.options.map((o) => spellings(model, o.flag).map((s) => code(o.arg ? `${s} ${o.arg}` : s)).join(' or '));
  return [
    `### ${code(c.words.join(' '))}`,
    '',
    '```sh',
    usage(c.words, c.usage),
    '```',
    '',
    sentence(c.description),
    ...(options.length > 0 ? ['', `Options: ${options.join(', ')}${c.operands ? '; then its operands.' : '.'}`] : []),
  ].join('\n');
}

export function cliPage(model: HelpModel): string {
  const options = model.options.map((o) => [[o.short, o.long].filter((s): s is string => s !== undefined).map((s) => code(o.arg ? `${s} ${o.arg}` : s)).join(', '), sentence(o.description)]);
  return `${pageHead('Command-line reference', '`intake-relay --help` (the usage text in [src/main.ts](../../src/main.ts), read by [scripts/deb/help-model.ts](../../scripts/deb/help-model.ts) as for the man page)')}
intake-relay: ${model.summary}.

## Synopsis

\`\`\`sh
${[...model.commands.map((c) => usage(c.words, c.usage)), ...model.other.map((o) => usage([], o))].join('\n')}
\`\`\`

## Commands

${model.commands.map((c) => command(model, c)).join('\n\n')}

## Options

${table(['option', 'meaning'], [
    ...options,
    [code('--help'), 'Print the usage and exit.'],
    [code('--version'), 'Print the version, the commit and the Node.js version, and exit.'],
  ])}

## Examples

\`\`\`sh
${model.examples.join('\n')}
\`\`\`

## Exit status

${model.exitStatus.map(([status, meaning]) => `${code(status)} ${meaning}`).join(', ')}: see [exit-codes.md](exit-codes.md).
`;
}
