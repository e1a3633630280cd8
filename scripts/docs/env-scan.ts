// Finds the environment variables the program reads, from its text: src/ (process.env.X, env.X,
// env['X'], a helper that reads env[name] called with 'X', and the Node.js and undici calls that
// read variables themselves) and the ${VAR} references of the configurations it ships. What the
// environment reference must list (test/unit/docs-reference.test.ts).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

export interface EnvRead {
  readonly name: string;
  /** `file:line`, relative to the checkout. */
  readonly where: string;
}

/** The configurations the program ships (the container image's, the Debian package's): their ${VAR} are read as the code's are. */
export const SHIPPED_CONFIGURATIONS = ['config/intake-relay.yaml', 'deploy/debian/intake-relay.yaml'];

/** process.env.X, process.env['X'], and any `env` object read by a constant name: env.X, r.env['X']. */
const DIRECT = /\b(?:process\.env|env)(?:\??\.([A-Za-z_]\w*)|\[\s*['"]([A-Za-z_]\w*)['"]\s*\])/g;
/** A helper that takes a name and reads env[name]: `const set = (name: string) => ... env[name] ...`. */
const HELPER = /(?:const|function)\s+(\w+)\s*=?\s*\(\s*(\w+)\s*:\s*string\s*\)[^\n]*\benv\[\s*\2\s*\]/g;
/** Calls that read variables themselves. */
const INDIRECT: readonly { readonly call: RegExp; readonly names: readonly string[] }[] = [
  // os.tmpdir(): TMPDIR (then TMP, TEMP on Windows only).
  { call: /\btmpdir\(\)/, names: ['TMPDIR'] },
  // undici's EnvHttpProxyAgent: the lower-case spelling first, as curl does.
  { call: /\bnew EnvHttpProxyAgent\(/, names: ['http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY', 'no_proxy', 'NO_PROXY'] },
];
/** The loader's ${VAR} and ${VAR:-default}; $${ is a literal. */
const REFERENCE = /\$\$\{|\$\{([A-Za-z_]\w*)(?::-[^}]*)?\}/g;

function lineOf(text: string, index: number): number {
  let n = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < index; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/**
 * The text with comments that begin a line blanked (kept as empty lines, so that line numbers
 * hold). Only at a line's start: a glob in a string ('/var/log/*.log') must not open a comment.
 */
function code(text: string): string {
  return text.replace(/^[ \t]*\/\*[\s\S]*?\*\//gm, (c) => c.replace(/[^\n]/g, '')).replace(/^[ \t]*\/\/.*$/gm, '');
}

/** The variables one TypeScript file reads. Property names that are not constants (env.metrics) are not variables. */
export function sourceReads(file: string, text: string): EnvRead[] {
  const body = code(text);
  const out: EnvRead[] = [];
  const add = (name: string, index: number): void => {
    out.push({ name, where: `${file}:${lineOf(body, index)}` });
  };
  for (const m of body.matchAll(DIRECT)) {
    const name = m[1] ?? m[2];
    // env.metrics is a field; process.env.https_proxy is a variable.
    if (name !== undefined && (m[0].startsWith('process.') || /^[A-Z][A-Z0-9_]*$/.test(name))) add(name, m.index);
  }
  for (const h of body.matchAll(HELPER)) {
    for (const m of body.matchAll(new RegExp(`\\b${h[1]}\\(\\s*['"]([A-Za-z_]\\w*)['"]\\s*\\)`, 'g'))) add(m[1]!, m.index);
  }
  for (const { call, names } of INDIRECT) {
    const m = call.exec(body);
    if (m) for (const name of names) add(name, m.index);
  }
  return out;
}

/** The ${VAR} of one YAML configuration, comments aside (an example in a comment is not read). */
export function configurationReads(file: string, text: string): EnvRead[] {
  const body = text.replace(/(^|\s)#.*$/gm, '$1');
  return [...body.matchAll(REFERENCE)].flatMap((m) => (m[1] === undefined ? [] : [{ name: m[1], where: `${file}:${lineOf(body, m.index)}` }]));
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Every read in the checkout at `root`: src/ and the shipped configurations. */
export function environmentReads(root: string): EnvRead[] {
  return [
    ...tsFiles(join(root, 'src')).flatMap((f) => sourceReads(relative(root, f), readFileSync(f, 'utf8'))),
    ...SHIPPED_CONFIGURATIONS.flatMap((f) => configurationReads(f, readFileSync(join(root, f), 'utf8'))),
  ];
}
