// The CLI's `--help` text read back into a model (commands, their options, examples, exit status),
// so that the man page and the shell completion are generated from what the binary says, not
// written beside it. Throws when the text no longer has the shape this reads, instead of guessing.

export interface OptionUse {
  /** As written in a usage line: `-c`, `--watch-config`. */
  readonly flag: string;
  /** Its argument's placeholder (`FILE`, `N`) or choices (`json|text`), if it takes one. */
  readonly arg?: string;
  /** The choices, when the argument is a list of them. */
  readonly choices?: readonly string[];
}

export interface Command {
  /** `['run']`, `['rules', 'push']`. */
  readonly words: readonly string[];
  /** The usage line after the command words: `[-c FILE] [--watch-config]`. */
  readonly usage: string;
  readonly options: readonly OptionUse[];
  /** Whether it takes operands besides its options (`send ... MESSAGE...`). */
  readonly operands: boolean;
  readonly description: string;
}

export interface OptionDoc {
  readonly short?: string;
  readonly long: string;
  readonly arg?: string;
  readonly description: string;
}

export interface HelpModel {
  /** The first line after `intake-relay: `. */
  readonly summary: string;
  readonly commands: readonly Command[];
  /** Usage lines that are not commands (`--version | --help`). */
  readonly other: readonly string[];
  readonly options: readonly OptionDoc[];
  readonly examples: readonly string[];
  /** `0 ok, 1 runtime failure, ...` as pairs. */
  readonly exitStatus: readonly (readonly [code: string, meaning: string])[];
}

/** An option in a usage line, with its argument: a placeholder (FILE) or choices (json|text). */
const OPTION = /(--?[a-z][\w-]*)(?: ([A-Z][A-Z_]*(?![.\w])|[a-z0-9][\w-]*(?:\|[a-z0-9][\w-]*)+))?/g;

function fail(why: string): never {
  throw new Error(`The --help text does not have the expected shape: ${why}.`);
}

/** The lines of the block that starts with `title` (e.g. `Usage:`), up to the next unindented line. */
function block(lines: readonly string[], title: string): string[] {
  const start = lines.findIndex((l) => l.startsWith(title));
  if (start < 0) fail(`no "${title}" section`);
  const out: string[] = [];
  for (const l of lines.slice(start + 1)) {
    if (l !== '' && !l.startsWith(' ')) break;
    out.push(l);
  }
  return out;
}

const indent = (l: string): number => l.length - l.trimStart().length;

function parseCommand(head: string, description: string): Command | undefined {
  const tokens = head.split(/\s+/);
  const words: string[] = [];
  while (tokens.length > 0 && /^[a-z][\w-]*$/.test(tokens[0]!)) words.push(tokens.shift()!);
  if (words.length === 0) return undefined;
  const usage = tokens.join(' ');
  const options = [...usage.matchAll(OPTION)].map((m): OptionUse => {
    if (!m[2]) return { flag: m[1]! };
    return m[2].includes('|') ? { flag: m[1]!, arg: m[2], choices: m[2].split('|') } : { flag: m[1]!, arg: m[2] };
  });
  // Operands are the placeholders no option claims: `--intake NAME MESSAGE...` has one.
  const operands = usage.replace(OPTION, '').replace(/[[\]|]/g, ' ').trim() !== '';
  return { words, usage, options, operands, description };
}

export function parseHelp(text: string): HelpModel {
  const lines = text.replace(/\r/g, '').split('\n');
  const first = /^intake-relay: (.+?)\.?$/.exec(lines[0] ?? '');
  if (!first) fail('the first line is not "intake-relay: <summary>"');

  const commands: Command[] = [];
  const other: string[] = [];
  const options: OptionDoc[] = [];
  let entry: { head: string; body: string[]; kind: 'usage' | 'option' } | undefined;
  const flush = (): void => {
    if (!entry) return;
    const body = entry.body.join(' ');
    if (entry.kind === 'usage') {
      const c = parseCommand(entry.head, body);
      if (c) commands.push(c);
      else other.push(entry.head);
    } else {
      const m = /^(?:(-\w), )?(--[\w-]+)(?: ([A-Z]+))?\s{2,}(.*)$/.exec(entry.head);
      if (!m) fail(`cannot read the option line "${entry.head}"`);
      const desc = [m[4]!, body].filter(Boolean).join(' ');
      options.push({ ...(m[1] ? { short: m[1] } : {}), long: m[2]!, ...(m[3] ? { arg: m[3] } : {}), description: desc });
    }
    entry = undefined;
  };
  for (const l of block(lines, 'Usage:')) {
    if (l.trim() === '') {
      flush();
      continue;
    }
    if (l.startsWith('  intake-relay ')) {
      flush();
      // The description either follows on the same line after a wide gap, or on the next lines.
      const [head, ...rest] = l.slice('  intake-relay '.length).split(/\s{3,}(?=[a-z])/);
      entry = { head: head!.trim(), body: rest, kind: 'usage' };
    } else if (/^ {2}-/.test(l)) {
      flush();
      entry = { head: l.trim(), body: [], kind: 'option' };
    } else if (entry && indent(l) > 2) {
      entry.body.push(l.trim());
    } else {
      fail(`cannot place the line "${l}"`);
    }
  }
  flush();
  if (commands.length === 0) fail('no commands under "Usage:"');

  const examples = block(lines, 'Examples:').map((l) => l.trim()).filter(Boolean);
  const exitLine = lines.find((l) => l.startsWith('Exit status:'));
  if (!exitLine) fail('no "Exit status:" line');
  const exitStatus = exitLine
    .slice('Exit status:'.length)
    .replace(/\.$/, '')
    .split(',')
    .map((p) => {
      const m = /^\s*(\d+) (.+)$/.exec(p);
      if (!m) fail(`cannot read the exit status "${p.trim()}"`);
      return [m[1]!, m[2]!] as const;
    });
  return { summary: first[1]!, commands, other, options, examples, exitStatus };
}

/** Every spelling of `flag` the help documents (`-c` is also `--config`). */
export function spellings(model: HelpModel, flag: string): string[] {
  const doc = model.options.find((o) => o.short === flag || o.long === flag);
  return doc ? [doc.short, doc.long].filter((s): s is string => s !== undefined) : [flag];
}
