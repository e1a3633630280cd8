// The official forwarder's `extended_conf` directory: raw rsyslog configuration files it adds to its
// own. intake-relay does not run rsyslog, so it reads none of them as configuration; it names them,
// and for the platform's documented recipe (several technologies on one port, port514.conf: one
// template per intake key, an input per protocol, a ruleset of `if <property> <op> "value" then
// { action(... Template=...) stop }` and a catch-all action) it writes the native equivalent: a
// shared listener per input with its routes, and the intakes the templates name. Keys never leave
// the file: each intake reads its key from an environment variable named after its template.
// What it cannot translate is listed, line by line, never dropped silently.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A file of the directory and what could be made of it. */
export interface ExtendedConfFile {
  readonly file: string;
  /** The native equivalent (YAML: intakes and listeners), when the file had inputs to translate. */
  readonly equivalent?: string;
  /** Intake name -> the environment variable its key is read from, and the template it came from. */
  readonly keys: readonly { readonly intake: string; readonly variable: string; readonly template: string }[];
  /** What was not translated, as `line N: text`. */
  readonly untranslated: readonly string[];
}

/** The *.conf files of `dir` (as the forwarder includes them), or none when it is absent or empty. */
export function extendedConfFiles(dir: string): string[] {
  try {
    return readdirSync(dir).filter((f) => f.endsWith('.conf')).sort();
  } catch {
    return [];
  }
}

export function translateExtendedConf(dir: string): ExtendedConfFile[] {
  return extendedConfFiles(dir).map((file) => {
    let text: string;
    try {
      text = readFileSync(join(dir, file), 'utf8');
    } catch (err) {
      return { file, keys: [], untranslated: [`cannot read it: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`] };
    }
    return { file, ...translate(text) };
  });
}

// ---- tokens -----------------------------------------------------------------------------------

interface Token {
  readonly kind: 'word' | 'string' | 'punct';
  readonly text: string;
  readonly line: number;
}

function tokenize(text: string): Token[] {
  const out: Token[] = [];
  let line = 1;
  for (let i = 0; i < text.length; ) {
    const c = text[i] as string;
    if (c === '\n') {
      line++;
      i++;
    } else if (/\s/.test(c)) i++;
    else if (c === '#') while (i < text.length && text[i] !== '\n') i++;
    else if (c === '"' || c === "'") {
      let s = '';
      const at = line;
      for (i++; i < text.length && text[i] !== c; i++) {
        if (text[i] === '\\' && i + 1 < text.length) s += text[++i];
        else s += text[i];
        if (text[i] === '\n') line++;
      }
      i++;
      out.push({ kind: 'string', text: s, line: at });
    } else if (/[A-Za-z0-9_$.%\-]/.test(c)) {
      const m = /^[A-Za-z0-9_$.%\-!]+/.exec(text.slice(i)) as RegExpExecArray;
      out.push({ kind: 'word', text: m[0], line });
      i += m[0].length;
    } else {
      const two = text.slice(i, i + 2);
      const p = ['==', '!=', '<>'].includes(two) ? two : c;
      out.push({ kind: 'punct', text: p, line });
      i += p.length;
    }
  }
  return out;
}

// ---- statements ---------------------------------------------------------------------------------

type Params = Map<string, string>;
type Cond = { readonly prop: string; readonly op: string; readonly value: string } | { readonly all: Cond[] } | { readonly any: Cond[] } | { readonly not: Cond };
type Stmt =
  | { readonly kind: 'object'; readonly name: string; readonly params: Params; readonly line: number; readonly block?: Stmt[] }
  | { readonly kind: 'if'; readonly cond: Cond; readonly then: Stmt[]; readonly otherwise: Stmt[]; readonly line: number }
  | { readonly kind: 'stop'; readonly line: number }
  | { readonly kind: 'other'; readonly text: string; readonly line: number };

class Parser {
  #i = 0;
  readonly #t: Token[];

  constructor(tokens: Token[]) {
    this.#t = tokens;
  }

  get done(): boolean {
    return this.#i >= this.#t.length;
  }

  #peek(): Token | undefined {
    return this.#t[this.#i];
  }

  #next(): Token {
    const t = this.#t[this.#i++];
    if (!t) throw new Error('unexpected end of file');
    return t;
  }

  #expect(text: string): void {
    const t = this.#next();
    if (t.text !== text) throw new Error(`line ${t.line}: expected "${text}", found "${t.text}"`);
  }

  statements(until?: string): Stmt[] {
    const out: Stmt[] = [];
    while (!this.done && this.#peek()?.text !== until) out.push(this.statement());
    if (until) this.#expect(until);
    return out;
  }

  statement(): Stmt {
    const t = this.#next();
    if (t.kind === 'word' && t.text === 'stop') return { kind: 'stop', line: t.line };
    if (t.kind === 'word' && t.text === 'if') {
      const cond = this.#or();
      this.#expect('then');
      const then = this.#body();
      let otherwise: Stmt[] = [];
      if (this.#peek()?.text === 'else') {
        this.#next();
        otherwise = this.#body();
      }
      return { kind: 'if', cond, then, otherwise, line: t.line };
    }
    if (t.kind === 'word' && this.#peek()?.text === '(') {
      const params = this.#params();
      const block = this.#peek()?.text === '{' ? (this.#next(), this.statements('}')) : undefined;
      return { kind: 'object', name: t.text.toLowerCase(), params, line: t.line, ...(block ? { block } : {}) };
    }
    // Anything else (legacy $Directives, property filters): skipped to the end of its line.
    let text = t.text;
    while (!this.done && (this.#peek() as Token).line === t.line) text += ` ${this.#next().text}`;
    return { kind: 'other', text, line: t.line };
  }

  #body(): Stmt[] {
    if (this.#peek()?.text === '{') {
      this.#next();
      return this.statements('}');
    }
    return [this.statement()];
  }

  #params(): Params {
    this.#expect('(');
    const p: Params = new Map();
    while (this.#peek()?.text !== ')') {
      const key = this.#next().text.toLowerCase();
      this.#expect('=');
      const v = this.#next();
      if (v.text === '[') {
        const list: string[] = [];
        while (this.#peek()?.text !== ']') {
          const x = this.#next();
          if (x.text !== ',') list.push(x.text);
        }
        this.#next();
        p.set(key, list.join(','));
      } else p.set(key, v.text);
    }
    this.#next();
    return p;
  }

  #or(): Cond {
    const parts = [this.#and()];
    while (this.#peek()?.text === 'or') {
      this.#next();
      parts.push(this.#and());
    }
    return parts.length === 1 ? (parts[0] as Cond) : { any: parts };
  }

  #and(): Cond {
    const parts = [this.#unary()];
    while (this.#peek()?.text === 'and') {
      this.#next();
      parts.push(this.#unary());
    }
    return parts.length === 1 ? (parts[0] as Cond) : { all: parts };
  }

  #unary(): Cond {
    const t = this.#peek();
    if (t?.text === 'not') {
      this.#next();
      return { not: this.#unary() };
    }
    if (t?.text === '(') {
      this.#next();
      const c = this.#or();
      this.#expect(')');
      return c;
    }
    const prop = this.#next();
    const op = this.#next();
    const value = this.#next();
    if (!prop.text.startsWith('$') || value.kind !== 'string') throw new Error(`line ${prop.line}: a condition "${prop.text} ${op.text} ${value.text}" of a kind not translated`);
    return { prop: prop.text.slice(1).toLowerCase(), op: op.text.toLowerCase(), value: value.text };
  }
}

// ---- translation -----------------------------------------------------------------------------

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** A route's match for one condition, or why not. */
function matchOf(c: Cond): Record<string, string> | string {
  if ('all' in c) {
    const out: Record<string, string> = {};
    for (const p of c.all) {
      const m = matchOf(p);
      if (typeof m === 'string') return m;
      for (const [k, v] of Object.entries(m)) {
        if (k in out) return `two conditions on ${k}`;
        out[k] = v;
      }
    }
    return out;
  }
  if ('any' in c) return '"or" (write one route per alternative)';
  if ('not' in c) return '"not"';
  const field = ({ 'fromhost-ip': 'sender', hostname: 'hostname', source: 'hostname', 'app-name': 'app_name', programname: 'app_name', syslogtag: 'app_name', msg: 'message', rawmsg: 'message' } as Record<string, string>)[c.prop];
  if (!field) return `the property $${c.prop}`;
  const v = c.value;
  if (field === 'sender') return c.op === 'isequal' || c.op === '==' ? { sender: v } : `$fromhost-ip ${c.op} (only isequal)`;
  // $syslogtag is the tag with its colon ("%ASA-4-106023:"): the relay matches the APP-NAME before it.
  const value = field === 'app_name' && c.prop === 'syslogtag' ? v.replace(/:$/, '') : v;
  if (field === 'message') {
    // A route's message is a regular expression without flags: contains_i has no equivalent.
    const pattern = ({ isequal: `^${escapeRe(value)}$`, '==': `^${escapeRe(value)}$`, startswith: `^${escapeRe(value)}`, contains: escapeRe(value) } as Record<string, string>)[c.op];
    return pattern === undefined ? `${c.op} on $${c.prop}` : { message: pattern };
  }
  const plain = !/[*/]/.test(value);
  switch (c.op) {
    case 'isequal':
    case '==':
      return { [field]: plain ? value : `/^${escapeRe(value)}$/` };
    case 'startswith':
      return { [field]: plain ? `${value}*` : `/^${escapeRe(value)}/` };
    case 'contains':
      return { [field]: `/${escapeRe(value)}/` };
    case 'contains_i':
      return { [field]: `/${escapeRe(value)}/i` };
    default:
      return `${c.op} on $${c.prop}`;
  }
}

/** Tmpl_PaloAlto -> paloalto (the intake's name) and PALOALTO_INTAKE_KEY (its key's variable). */
function intakeName(template: string): string {
  const base = template.replace(/^(tmpl|template|sekoiaio)[_-]?/i, '').replace(/[_-]?(tmpl|template)$/i, '') || template;
  return base.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '').toLowerCase() || 'intake';
}

const yamlString = (s: string): string => (/^[A-Za-z0-9_.\-*]+$/.test(s) && !/^[-*]/.test(s) ? s : JSON.stringify(s));

function translate(text: string): Omit<ExtendedConfFile, 'file'> {
  const untranslated: string[] = [];
  let stmts: Stmt[];
  try {
    stmts = new Parser(tokenize(text)).statements();
  } catch (err) {
    return { keys: [], untranslated: [`not understood: ${(err as Error).message}`] };
  }
  const templates = new Map<string, string>();
  for (const s of stmts) {
    if (s.kind === 'object' && s.name === 'template') {
      const name = s.params.get('name') ?? '';
      if (/intake_key=/.test(s.params.get('string') ?? '')) templates.set(name.toLowerCase(), name);
      else untranslated.push(`line ${s.line}: template "${name}" names no intake key`);
    }
  }
  const rulesets = new Map(stmts.flatMap((s) => (s.kind === 'object' && s.name === 'ruleset' ? [[(s.params.get('name') ?? '').toLowerCase(), s] as const] : [])));
  const used = new Map<string, string>();
  const intakeOf = (template: string | undefined, line: number): string | undefined => {
    const t = template ? templates.get(template.toLowerCase()) : undefined;
    if (!t) {
      untranslated.push(`line ${line}: an action whose template ${template ? `"${template}" ` : ''}carries no intake key`);
      return undefined;
    }
    const name = intakeName(t);
    used.set(name, t);
    return name;
  };
  const listeners: string[] = [];
  for (const s of stmts) {
    if (s.kind === 'other') untranslated.push(`line ${s.line}: ${s.text}`);
    if (s.kind !== 'object' || s.name !== 'input') continue;
    const type = ({ imtcp: 'tcp', imudp: 'udp', imrelp: 'relp', imptcp: 'tcp' } as Record<string, string>)[s.params.get('type') ?? ''];
    const port = s.params.get('port');
    const rs = rulesets.get((s.params.get('ruleset') ?? '').toLowerCase());
    if (!type || !port || !rs?.block) {
      untranslated.push(`line ${s.line}: input(type="${s.params.get('type') ?? ''}"${port ? ` port="${port}"` : ''}) ${rs ? '' : 'without a ruleset in this file'}`.trimEnd());
      continue;
    }
    const routes: string[] = [];
    let dflt = 'drop';
    for (const st of rs.block) {
      if (st.kind === 'if') {
        const action = st.then.find((x) => x.kind === 'object' && x.name === 'action');
        const m = matchOf(st.cond);
        if (typeof m === 'string' || !action || action.kind !== 'object' || st.otherwise.length > 0) {
          untranslated.push(`line ${st.line}: an if with ${typeof m === 'string' ? m : st.otherwise.length > 0 ? 'an else' : 'no action'}`);
          continue;
        }
        if (!st.then.some((x) => x.kind === 'stop')) untranslated.push(`line ${st.line}: an if without "stop" (rsyslog goes on to the next rules; a route stops at the first match)`);
        const intake = intakeOf(action.params.get('template'), action.line);
        if (!intake) continue;
        const match = Object.entries(m).map(([k, v]) => `${k}: ${yamlString(v)}`).join(', ');
        routes.push(`      - { match: { ${match} }, intake: ${intake} }`);
      } else if (st.kind === 'object' && st.name === 'action') {
        dflt = intakeOf(st.params.get('template'), st.line) ?? dflt;
      } else if (st.kind !== 'stop') untranslated.push(`line ${st.line}: ${st.kind === 'other' ? st.text : st.kind === 'object' ? `${st.name}(...)` : 'a statement'} in ruleset "${rs.params.get('name')}"`);
    }
    if (routes.length === 0) {
      untranslated.push(`line ${s.line}: input on port ${port} has no route to translate`);
      continue;
    }
    listeners.push(`  - type: ${type}\n    name: ${type}-${port}\n    port: ${port}\n    routes:\n${routes.join('\n')}\n    default: ${dflt}`);
  }
  const keys = [...used].map(([intake, template]) => ({ intake, template, variable: `${intake.toUpperCase().replace(/-/g, '_')}_INTAKE_KEY` }));
  if (listeners.length === 0) return { keys: [], untranslated };
  const intakes = keys.map((k) => `  - name: ${k.intake}\n    intake_key: \${${k.variable}}   # the key in template ${k.template}`).join('\n');
  return { equivalent: `intakes:\n${intakes}\nlisteners:\n${listeners.join('\n')}\n`, keys, untranslated };
}
