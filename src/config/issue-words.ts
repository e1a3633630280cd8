// A schema problem in our words, never the schema library's ("Invalid input: expected number,
// received string"): what the value must be, with the allowed range or choices, and for an
// unknown key the closest key allowed there ("did you mean"), found in the configuration's JSON
// Schema. The value itself is never quoted (it may be a key pasted in the wrong place).

import { z } from 'zod';
import { didYouMean } from '../core/suggest.ts';

type Issue = z.core.$ZodIssue;

const KINDS: Record<string, string> = {
  number: 'a number',
  int: 'a whole number',
  string: 'text',
  boolean: 'true or false',
  array: 'a list',
  object: 'a mapping (key: value)',
  record: 'a mapping (key: value)',
  literal: 'a given value',
  bigint: 'a whole number',
};

/** The unit a key's name carries (`shutdown_timeout_ms`, `max_bytes`), for ranges. */
function unit(key: PropertyKey | undefined): string {
  const k = String(key ?? '');
  if (k.endsWith('_ms')) return ' ms';
  if (k.endsWith('_bytes')) return ' bytes';
  return '';
}

const list = (values: readonly unknown[]): string => values.map((v) => (typeof v === 'string' ? `"${v}"` : String(v))).join(', ');

/** The schema library's own wording; a message the schema gives (`.min(1, 'needs a path')`) is ours already. */
const LIBRARY = /^(Too (small|big):|Invalid (input|option|union|key|element|string|format|value)\b|Invalid [a-z]+:)/;

/** What `issue` says about the value at its path, in a sentence without the value. */
export function inOurWords(issue: Issue): string {
  if (!LIBRARY.test(issue.message)) return issue.message;
  const key = issue.path.at(-1);
  switch (issue.code) {
    case 'invalid_type': {
      const kind = KINDS[issue.expected] ?? issue.expected;
      return /received undefined/.test(issue.message) ? `is required (${kind})` : `must be ${kind}`;
    }
    case 'too_small': {
      const n = Number(issue.minimum);
      if (issue.origin === 'string') return n <= 1 ? 'must not be empty' : `must be at least ${n} characters long`;
      if (issue.origin === 'array' || issue.origin === 'set') return `must have at least ${n} item${n === 1 ? '' : 's'}`;
      return issue.inclusive ? `must be at least ${n}${unit(key)}` : `must be more than ${n}${unit(key)}`;
    }
    case 'too_big': {
      const n = Number(issue.maximum);
      if (issue.origin === 'string') return `must be at most ${n} characters long`;
      if (issue.origin === 'array' || issue.origin === 'set') return `must have at most ${n} item${n === 1 ? '' : 's'}`;
      return issue.inclusive ? `must be at most ${n}${unit(key)}` : `must be less than ${n}${unit(key)}`;
    }
    case 'invalid_value':
      return issue.values.length === 1 ? `must be ${list(issue.values)}` : `must be one of ${list(issue.values)}`;
    case 'invalid_format':
      return issue.format === 'regex' ? 'has characters or a form it may not have (see the reference)' : `must be ${issue.format === 'url' ? 'a URL' : `a valid ${issue.format}`}`;
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    case 'invalid_union':
      return 'is none of the forms accepted here (see the reference)';
    case 'invalid_key':
      return 'has a key of a kind not accepted here';
    case 'invalid_element':
      return 'has an entry of a kind not accepted here';
    default:
      // Our own refinements (custom) say it in our words already.
      return issue.message;
  }
}

type JsonSchema = { properties?: Record<string, JsonSchema>; items?: JsonSchema; anyOf?: JsonSchema[]; oneOf?: JsonSchema[]; allOf?: JsonSchema[]; $ref?: string; $defs?: Record<string, JsonSchema>; additionalProperties?: JsonSchema | boolean };

/** The keys a schema allows at `path` (every branch of a union), from its JSON Schema. */
export function keysAllowed(schema: JsonSchema, path: readonly PropertyKey[]): string[] {
  const defs = schema.$defs ?? {};
  const expand = (s: JsonSchema): JsonSchema[] => {
    if (s.$ref) {
      const d = defs[s.$ref.replace('#/$defs/', '')];
      return d ? expand(d) : [];
    }
    const branches = [...(s.anyOf ?? []), ...(s.oneOf ?? []), ...(s.allOf ?? [])];
    return branches.length > 0 ? [s, ...branches.flatMap(expand)] : [s];
  };
  let at: JsonSchema[] = expand(schema);
  for (const p of path) {
    at = at.flatMap((s) => {
      if (typeof p === 'number') return s.items ? expand(s.items) : [];
      const next = s.properties?.[String(p)] ?? (typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined);
      return next ? expand(next) : [];
    });
  }
  return [...new Set(at.flatMap((s) => Object.keys(s.properties ?? {})))];
}

const cache = new WeakMap<z.ZodType, JsonSchema>();

function jsonOf(schema: z.ZodType): JsonSchema {
  let json = cache.get(schema);
  if (!json) cache.set(schema, (json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema));
  return json;
}

/** `unknown key "max_event"` with the closest key allowed at its place. */
export function unknownKey(schema: z.ZodType, path: readonly PropertyKey[], key: string): string {
  return `unknown key "${key}"${didYouMean(key, keysAllowed(jsonOf(schema), path))}`;
}

/** `type must be one of "udp", "tcp", ...`: the values a union's discriminator takes at `path`. */
export function unknownKind(schema: z.ZodType, path: readonly PropertyKey[], discriminator: string): string {
  const values = new Set<string>();
  const visit = (s: JsonSchema & { const?: unknown; enum?: unknown[] }): void => {
    if (s.const !== undefined) values.add(String(s.const));
    for (const v of s.enum ?? []) values.add(String(v));
  };
  const json = jsonOf(schema);
  for (const k of [discriminator]) {
    // The branches at the path, each with its discriminator's value.
    const branches = (function at(): JsonSchema[] {
      const all: JsonSchema[] = [];
      const walk = (s: JsonSchema, rest: readonly PropertyKey[]): void => {
        const alts = [...(s.anyOf ?? []), ...(s.oneOf ?? [])];
        if (alts.length > 0) return alts.forEach((a) => walk(a, rest));
        if (rest.length === 0) return void all.push(s);
        const [p, ...more] = rest;
        const next = typeof p === 'number' ? s.items : s.properties?.[String(p)];
        if (next) walk(next, more);
      };
      // The issue may sit on the discriminator itself (…inputs[0].type): its object is one up.
      walk(json, path.at(-1) === discriminator ? path.slice(0, -1) : path);
      return all;
    })();
    for (const b of branches) {
      const d = b.properties?.[k] as (JsonSchema & { const?: unknown; enum?: unknown[] }) | undefined;
      if (d) visit(d);
    }
  }
  const subject = path.at(-1) === discriminator ? '' : `${discriminator} `;
  return values.size > 0 ? `${subject}must be one of ${list([...values])}` : `${subject}must be one of the known types`;
}
