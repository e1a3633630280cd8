// Routing on a shared listener: ordered routes, first match wins, then the default. Compiled once:
// exact, prefix and suffix matches are string comparisons, CIDRs a native BlockList, facility and
// severity bit masks; a regular expression only where the user wrote one, and the message (which
// must be decoded) is looked at last. Events from one source carry the very same header strings
// (the parser reuses them), so when no route reads the message the decisions for the last sixteen
// sources are remembered and reused after identity comparisons.

import { addressList } from '../core/address-list.ts';
import type { LogEvent } from '../core/event.ts';
import { messageText } from '../core/event.ts';
import { FACILITIES, SEVERITIES } from '../syslog/priorities.ts';
import type { RouteConfig } from './schema.ts';

/** Where an event goes: an intake index, or one of the drops. */
export const ROUTE_DROP = -1;
export const NO_ROUTE = -2;

type Test = (e: LogEvent, msg: () => string) => boolean;

export interface RouteProblem {
  readonly path: PropertyKey[];
  readonly message: string;
}

/** A regular expression as the match fields write one: "/re/flags". */
const REGEX_PATTERN = /^\/(.*)\/([a-z]*)$/s;

/**
 * A match field's pattern as a test on a string. "/re/flags" is a regular expression (in every
 * field); otherwise `text` says what plain text means: `exact` ("exact", "prefix*", "*suffix":
 * hostname, app_name) or `contains` (the message). Throws on a regular expression that does not compile.
 */
export function textMatcher(pattern: string, text: 'exact' | 'contains' = 'exact'): (s: string) => boolean {
  const re = REGEX_PATTERN.exec(pattern);
  if (re) {
    const r = new RegExp(re[1] as string, re[2]);
    return (s) => r.test(s);
  }
  if (text === 'contains') return (s) => s.includes(pattern);
  if (pattern.length > 1 && pattern.endsWith('*') && !pattern.slice(0, -1).includes('*')) {
    const prefix = pattern.slice(0, -1);
    return (s) => s.startsWith(prefix);
  }
  if (pattern.length > 1 && pattern.startsWith('*') && !pattern.slice(1).includes('*')) {
    const suffix = pattern.slice(1);
    return (s) => s.endsWith(suffix);
  }
  return (s) => s === pattern;
}

/** Regular expression syntax in text: an escape (\d, \.), a class, a group, an anchor, .* or .+ inside. */
const LOOKS_LIKE_REGEX = /\\[dDwWsSbB.\\/]|\[[^\]]+\]|\((?:\?|[^)]*\|)|^\^|[^\\]\$$|\.[*+](?=.)/;

/** Why a pattern written as text was likely meant as a regular expression (a delimiter missing or misplaced), or undefined. */
export function patternWarning(pattern: string): string | undefined {
  if (REGEX_PATTERN.test(pattern)) return undefined;
  if (pattern.startsWith('/') || /^[^/]+\/[a-z]*$/.test(pattern) && pattern.endsWith('/')) {
    return `"${pattern}" is matched as text: a regular expression is written "/expression/flags", with a / at each end`;
  }
  if (LOOKS_LIKE_REGEX.test(pattern)) return `"${pattern}" looks like a regular expression but is matched as text: write "/${pattern}/" for one`;
  return undefined;
}

function anyOf(patterns: string | string[], text: 'exact' | 'contains' = 'exact'): (s: string) => boolean {
  const list = (Array.isArray(patterns) ? patterns : [patterns]).map((p) => textMatcher(p, text));
  return list.length === 1 ? (list[0] as (s: string) => boolean) : (s: string) => list.some((m) => m(s));
}

/**
 * `test`, remembering its last input: header fields repeat as the very same string objects (the
 * parser reuses them) and a connection's sender is one string, so a repeat costs one comparison.
 */
function remembered(test: (s: string) => boolean): (s: string) => boolean {
  let last: string | undefined;
  let result = false;
  return (s) => {
    if (s !== last) {
      last = s;
      result = test(s);
    }
    return result;
  };
}

function mask(values: (string | number)[] | string | number, names: readonly string[]): number {
  let m = 0;
  for (const v of Array.isArray(values) ? values : [values]) m |= 1 << (typeof v === 'number' ? v : names.indexOf(v));
  return m;
}

/** Compiles routes; problems (bad CIDR, bad regex, unknown intake) and warnings (a pattern likely meant as a regex) are returned, not thrown. */
export function compileRoutes(
  routes: readonly RouteConfig[],
  dflt: string,
  intakeIndex: (name: string) => number,
): { router: Router; problems: RouteProblem[]; warnings: RouteProblem[] } {
  const problems: RouteProblem[] = [];
  const warnings: RouteProblem[] = [];
  const compiled: { test: Test; target: number }[] = [];
  let readsMessage = false;
  routes.forEach((r, i) => {
    const tests: Test[] = [];
    const m = r.match;
    if (m.sender !== undefined) {
      const { list, bad } = addressList(Array.isArray(m.sender) ? m.sender : [m.sender]);
      for (const s of bad) problems.push({ path: ['routes', i, 'match', 'sender'], message: `"${s}" is not an IP address or CIDR` });
      const inList = remembered((sender) => sender !== '' && list.has(sender));
      tests.push((e) => inList(e.sender));
    }
    const text = (key: 'hostname' | 'app_name' | 'message'): ((s: string) => boolean) | undefined => {
      const v = m[key];
      if (v === undefined) return undefined;
      for (const p of Array.isArray(v) ? v : [v]) {
        const w = patternWarning(p);
        if (w) warnings.push({ path: ['routes', i, 'match', key], message: w });
      }
      try {
        // Header fields repeat (remembered); messages differ.
        return key === 'message' ? anyOf(v, 'contains') : remembered(anyOf(v));
      } catch (err) {
        problems.push({ path: ['routes', i, 'match', key], message: `invalid regular expression: ${(err as Error).message}` });
        return undefined;
      }
    };
    const host = text('hostname');
    if (host) tests.push((e) => host(e.hostname));
    const app = text('app_name');
    if (app) tests.push((e) => app(e.appName));
    if (m.facility !== undefined) {
      const f = mask(m.facility, FACILITIES);
      tests.push((e) => ((1 << (e.pri >> 3)) & f) !== 0);
    }
    if (m.severity !== undefined) {
      const s = mask(m.severity, SEVERITIES);
      tests.push((e) => ((1 << (e.pri & 7)) & s) !== 0);
    }
    // Last: the message is decoded only when the rest matched. Not remembered (messages differ).
    const messageTest = m.message === undefined ? undefined : text('message');
    if (messageTest) {
      readsMessage = true;
      tests.push((_e, msg) => messageTest(msg()));
    }
    let target = ROUTE_DROP;
    if (r.intake !== undefined) {
      target = intakeIndex(r.intake);
      if (target < 0) problems.push({ path: ['routes', i, 'intake'], message: `no intake is named "${r.intake}"` });
    }
    const test: Test = tests.length === 0 ? () => true : tests.length === 1 ? (tests[0] as Test) : (e, msg) => tests.every((t) => t(e, msg));
    compiled.push({ test, target });
  });
  let fallback = NO_ROUTE;
  if (dflt !== 'drop') {
    fallback = intakeIndex(dflt);
    if (fallback < 0) problems.push({ path: ['default'], message: `no intake is named "${dflt}" (or use drop)` });
  }
  return { router: new Router(compiled, fallback, !readsMessage), problems, warnings };
}

/** Decisions remembered, by header identity: a collector's stream interleaves a few sources. */
const MEMO = 16;

export class Router {
  readonly #routes: readonly { test: Test; target: number }[];
  readonly #fallback: number;
  readonly #memo: boolean;
  readonly #seen: (LogEvent | undefined)[] = new Array<LogEvent | undefined>(MEMO);
  readonly #seenTarget = new Int32Array(MEMO);
  #next = 0;
  // The memo measures itself: when it rarely hits (many distinct sources), looking costs more
  // than it saves, so it rests for a while and then tries again.
  #lookups = 0;
  #hits = 0;
  #restUntil = 0;
  #count = 0;

  constructor(routes: readonly { test: Test; target: number }[], fallback: number, memo: boolean) {
    this.#routes = routes;
    this.#fallback = fallback;
    this.#memo = memo;
  }

  /** An intake index, ROUTE_DROP, or NO_ROUTE. */
  route(e: LogEvent): number {
    if (!this.#memo) return this.#walk(e);
    if (++this.#count < this.#restUntil) return this.#walk(e);
    for (let i = 0; i < MEMO; i++) {
      const l = this.#seen[i];
      if (l !== undefined && l.hostname === e.hostname && l.appName === e.appName && l.sender === e.sender && l.pri === e.pri) {
        this.#hits++;
        this.#tally();
        return this.#seenTarget[i] as number;
      }
    }
    this.#tally();
    const target = this.#walk(e);
    this.#seen[this.#next] = e;
    this.#seenTarget[this.#next] = target;
    this.#next = (this.#next + 1) % MEMO;
    return target;
  }

  #tally(): void {
    if (++this.#lookups < 1024) return;
    if (this.#hits < 512) this.#restUntil = this.#count + 16_384;
    this.#lookups = 0;
    this.#hits = 0;
  }

  #walk(e: LogEvent): number {
    let text: string | undefined;
    const msg = this.#memo ? NO_MESSAGE : (): string => (text ??= messageText(e));
    for (const r of this.#routes) if (r.test(e, msg)) return r.target;
    return this.#fallback;
  }
}

/** Routes that do not read the message never call it. */
const NO_MESSAGE = (): string => '';
