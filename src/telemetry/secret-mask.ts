// The secrets this thread must never show (intake keys, bearer tokens), masked wherever text
// leaves the process: every log line (pino's last step, whatever logged it, in any thread), the
// tap, /status. The main thread adds every key of every configuration it ran, and gives the whole
// list to each worker at its start and at each reload, so a worker masks the keys of intakes it does
// not run too. A key a reload rotated out stays masked for the life of the process: events that
// quote it may still be queued, on disk or in a sender's window.

/** Shorter values would mask ordinary words; no intake key or token is this short. */
const MIN_SECRET_LENGTH = 6;
/** Fields of a resolved configuration that hold a secret. */
const SECRET_FIELDS = new Set(['intakeKey', 'intake_key', 'bearer_token']);

export class SecretMask {
  readonly #secrets = new Set<string>();
  /** Longest first, so that a secret containing another goes whole. */
  #sorted: string[] = [];

  /** Every secret so far. */
  get secrets(): readonly string[] {
    return this.#sorted;
  }

  add(values: Iterable<string>): void {
    let added = false;
    for (const v of values) {
      if (v.length < MIN_SECRET_LENGTH || this.#secrets.has(v)) continue;
      this.#secrets.add(v);
      added = true;
    }
    if (added) this.#sorted = [...this.#secrets].sort((a, b) => b.length - a.length);
  }

  /** `text` with every secret replaced by `by`. */
  mask(text: string, by = '[redacted]'): string {
    let out = text;
    for (const s of this.#sorted) if (out.includes(s)) out = out.replaceAll(s, by);
    return out;
  }
}

/** This thread's mask (each worker thread has its own, given the main thread's list). */
export const secretMask = new SecretMask();

/** The secret values a resolved configuration holds (intake keys, bearer tokens), wherever they are in it. */
export function secretsOf(config: unknown): string[] {
  const out: string[] = [];
  const walk = (v: unknown, depth: number): void => {
    if (depth > 12 || v === null || typeof v !== 'object' || Buffer.isBuffer(v)) return;
    if (Array.isArray(v)) {
      for (const x of v) walk(x, depth + 1);
      return;
    }
    for (const [k, x] of Object.entries(v)) {
      if (typeof x === 'string' && SECRET_FIELDS.has(k)) out.push(x);
      else walk(x, depth + 1);
    }
  };
  walk(config, 0);
  return out;
}
