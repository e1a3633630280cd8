// Drop rules in the platform's optimization-rule shape (../shared/intake-platform-spec.md:
// `filters` of {field, operator: "==" | "in", value}, combined with AND, `enabled`), applied in the
// relay before events leave. Fields are the syslog header's (hostname, app_name, procid, msgid,
// facility, severity, pri, sender) or dotted paths into a JSON message, parsed at most once per
// event. A field that does not exist never matches, so a rule on it drops nothing.

import type { LogEvent } from '../core/event.ts';
import { messageText } from '../core/event.ts';
import { FACILITIES, SEVERITIES } from '../syslog/priorities.ts';
import type { FilterRuleConfig } from './schema.ts';

type Scalar = string | number | boolean;
type Get = (e: LogEvent, json: () => unknown) => Scalar | undefined;

const HEADER: Record<string, Get> = {
  hostname: (e) => e.hostname || undefined,
  app_name: (e) => e.appName || undefined,
  procid: (e) => e.procId || undefined,
  msgid: (e) => e.msgId || undefined,
  sender: (e) => e.sender || undefined,
  pri: (e) => e.pri,
  facility: (e) => e.pri >> 3,
  severity: (e) => e.pri & 7,
};

function getter(field: string): Get {
  const h = HEADER[field];
  if (h) return h;
  const steps = field.split('.');
  return (_e, json) => {
    let v: unknown = json();
    for (const s of steps) {
      if (typeof v !== 'object' || v === null || !Object.hasOwn(v, s)) return undefined;
      v = (v as Record<string, unknown>)[s];
    }
    return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? v : undefined;
  };
}

/** A configured value as the field compares it: facility/severity names become numbers. */
function normal(field: string, v: Scalar): Scalar {
  if (field === 'facility' && typeof v === 'string' && FACILITIES.includes(v as never)) return FACILITIES.indexOf(v as never);
  if (field === 'severity' && typeof v === 'string' && SEVERITIES.includes(v as never)) return SEVERITIES.indexOf(v as never);
  return v;
}

function same(a: Scalar, b: Scalar): boolean {
  return a === b || (typeof a !== typeof b && String(a) === String(b));
}

interface CompiledRule {
  readonly index: number;
  readonly test: (e: LogEvent, json: () => unknown) => boolean;
}

export class FilterSet {
  readonly #rules: readonly CompiledRule[];
  readonly #names: readonly string[];

  constructor(rules: readonly FilterRuleConfig[]) {
    this.#names = rules.map((r) => r.description);
    this.#rules = rules.flatMap((r, index) => {
      if (!r.enabled) return [];
      const conds = r.filters.map((f) => {
        const get = getter(f.field);
        const values = (Array.isArray(f.value) ? f.value : [f.value]).map((v) => normal(f.field, v));
        return (e: LogEvent, json: () => unknown): boolean => {
          const v = get(e, json);
          return v !== undefined && values.some((want) => same(v, want));
        };
      });
      return [{ index, test: (e: LogEvent, json: () => unknown) => conds.every((c) => c(e, json)) }];
    });
  }

  /** The rule's name in metrics: its description. */
  name(index: number): string {
    return this.#names[index] ?? String(index);
  }

  get empty(): boolean {
    return this.#rules.length === 0;
  }

  /** Index of the first enabled rule that drops `e`, or -1. */
  match(e: LogEvent): number {
    let parsed: unknown;
    let done = false;
    const json = (): unknown => {
      if (!done) {
        done = true;
        const text = messageText(e).trim();
        if (text.startsWith('{')) {
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = undefined;
          }
        }
      }
      return parsed;
    };
    for (const r of this.#rules) if (r.test(e, json)) return r.index;
    return -1;
  }
}
