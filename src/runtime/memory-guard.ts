// Holds the process's anonymous memory (RssAnon: what the kernel cannot take back, and what a
// container's limit counts) near memory_bytes under load. The bounds derived from memory_bytes
// (memory-budget.ts) hold the live events; what they cannot bound is garbage. Buffers of events
// already written that lived long enough to be promoted wait in V8's old generation for a full
// collection, which V8 starts once its heap has grown to a multiple of what was live (or 64 MiB of
// such buffers have piled up); the C library keeps what they freed. Under a flood to an HTTPS
// intake, that put the relay at 114-132 MiB with the default 128 MiB budget, and at 114-121 with
// memory_bytes 64 MiB (measured on the neutral harness).
//
// While an output is busy, RssAnon is read every SAMPLE_MS. At PRESSURE of memory_bytes, every
// thread collects its heap and, once all have (COLLECT_WAIT_MS at most: a worker answers when its
// loop gets to it) and a moment later (the buffers a collection finds dead are freed
// concurrently), the C library gives its free memory back. That costs CPU, and only near the
// budget: a relay whose budget is generous for its load never collects. Collections are MIN_GAP_MS
// apart at least. One that freed little means what is live is near the mark (a queue filled in an
// outage, which its own bound holds): the next waits SLOW_GAP_MS. One that freed much means garbage
// is made fast (a flood): the next may come at MIN_GAP_MS, even if what is live is above the mark.

import { closeSync, openSync, readSync } from 'node:fs';

/** Read RssAnon this often while an output is busy. */
export const SAMPLE_MS = 50;
/** Collect at this share of memory_bytes. */
export const PRESSURE = 0.9;
/** The shortest time between two collections, and after one that freed less than FREED_LITTLE of memory_bytes. */
export const MIN_GAP_MS = 200;
export const SLOW_GAP_MS = 800;
const FREED_LITTLE = 0.05;
/** The longest the trim waits for every thread's collection. */
export const COLLECT_WAIT_MS = 250;
/** After the collections, the C library's free memory is given back this much later. */
export const TRIM_DELAY_MS = 25;

export interface MemoryGuardOptions {
  /** memory_bytes now (a reload may change it). */
  readonly budgetBytes: () => number;
  /** Whether anything is busy: at rest nothing grows, and nothing is read. */
  readonly busy: () => boolean;
  /** Collects every thread's heap: this one's before it returns, the workers' when the promise resolves. */
  readonly collect: () => void | Promise<unknown>;
  /** Gives the C library's free memory back. */
  readonly trim: () => void;
  /** RssAnon in bytes, or undefined where it cannot be read (default: /proc/self/status). */
  readonly anon?: () => number | undefined;
  /** Told after each collection and trim: RssAnon before and after. */
  readonly collected?: (beforeBytes: number, afterBytes: number) => void;
  /** Milliseconds on a monotonic clock (default: performance.now()): a step of the wall clock is no gap. */
  readonly now?: () => number;
}

export class MemoryGuard {
  readonly #o: MemoryGuardOptions;
  readonly #anon: () => number | undefined;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined;
  /** A collection's wait for the workers and its trim; undefined when none is under way. */
  #trimTimer: NodeJS.Timeout | undefined;
  #collecting = false;
  /** Bumped at each collection and at stop: a late answer of an earlier one does nothing. */
  #round = 0;
  #lastAt = -Infinity;
  #gapMs = MIN_GAP_MS;

  constructor(o: MemoryGuardOptions) {
    this.#o = o;
    this.#anon = o.anon ?? rssAnon();
    this.#now = o.now ?? (() => performance.now());
  }

  /** Starts watching; false where RssAnon cannot be read (not Linux). */
  start(): boolean {
    if (this.#timer) return true;
    if (this.#anon() === undefined) return false;
    this.#timer = setInterval(() => this.check(), SAMPLE_MS);
    this.#timer.unref();
    return true;
  }

  stop(): void {
    clearInterval(this.#timer);
    clearTimeout(this.#trimTimer);
    this.#timer = this.#trimTimer = undefined;
    this.#collecting = false;
    this.#round++;
  }

  /** One look: collects at the pressure mark if the last collection is far enough back. */
  check(): void {
    if (this.#collecting || !this.#o.busy()) return;
    const budget = this.#o.budgetBytes();
    const before = this.#anon();
    if (before === undefined || before < budget * PRESSURE || this.#now() - this.#lastAt < this.#gapMs) return;
    this.#collecting = true;
    const round = ++this.#round;
    const workers = this.#o.collect();
    this.#lastAt = this.#now();
    let scheduled = false;
    const trimSoon = (): void => {
      if (scheduled || round !== this.#round) return;
      scheduled = true;
      clearTimeout(this.#trimTimer);
      this.#trimTimer = setTimeout(() => {
        this.#trimTimer = undefined;
        this.#collecting = false;
        this.#o.trim();
        const after = this.#anon() ?? before;
        this.#gapMs = before - after < budget * FREED_LITTLE ? SLOW_GAP_MS : MIN_GAP_MS;
        this.#o.collected?.(before, after);
      }, TRIM_DELAY_MS);
      this.#trimTimer.unref();
    };
    if (!workers) return trimSoon();
    // The trim waits for the workers' collections, or COLLECT_WAIT_MS at most.
    this.#trimTimer = setTimeout(trimSoon, COLLECT_WAIT_MS);
    this.#trimTimer.unref();
    void workers.then(trimSoon, trimSoon);
  }
}

let shared: (() => number | undefined) | undefined;

/** The process's RssAnon in bytes, read from /proc/self/status (one file kept open for the process); undefined off Linux. */
export function rssAnon(): () => number | undefined {
  shared ??= statusReader('/proc/self/status');
  return shared;
}

/** Reads RssAnon from a status file, opened once and read again each time. */
export function statusReader(path: string): () => number | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
  } catch {
    return () => undefined;
  }
  // 16 KiB: a process with many supplementary groups has a long Groups: line before RssAnon.
  const buf = Buffer.allocUnsafe(16384);
  return () => {
    if (fd === undefined) return undefined;
    let n: number;
    try {
      n = readSync(fd, buf, 0, buf.length, 0);
    } catch {
      closeSync(fd);
      fd = undefined;
      return undefined;
    }
    const at = buf.subarray(0, n).indexOf('RssAnon:', 0, 'latin1');
    if (at < 0) return undefined;
    let i = at + 8;
    while (i < n && (buf[i] === 0x20 || buf[i] === 0x09)) i++;
    let kb = 0;
    let digits = 0;
    for (; i < n && (buf[i] as number) >= 0x30 && (buf[i] as number) <= 0x39; i++, digits++) kb = kb * 10 + (buf[i] as number) - 0x30;
    return digits > 0 ? kb * 1024 : undefined;
  };
}
