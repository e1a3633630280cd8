// The process's memory, given back once it is idle. Each thread's V8 heap is its own: a thread
// collects it (a memory-reducing full collection: platform/v8-gc.ts) once its outputs are idle,
// once per lull, and once shortly after it started (the start's garbage). What the C library keeps
// of a burst's freed memory (tens of MB at rest) is process-wide: given back once every output of
// the process is idle, not by each thread (malloc_trim walks every heap of the process). Each
// thread counts its outputs' activity (the runners say busy and idle); a worker reports whether it
// is idle with its state each second; the main thread trims once its own outputs and every worker
// are idle, once per lull.

import type { Activity } from '../core/runner.ts';
import { releaseFreeMemory } from '../platform/native-addon.ts';
import { memoryReducingGc } from '../platform/v8-gc.ts';

/** After the start, the thread's heap is collected this much later if its outputs are idle then. */
export const START_COLLECT_MS = 2_000;

export class Housekeeping {
  #busy = 0;
  #trimmed = true;
  /**
   * This thread's heap was collected since its last burst. True until the start is over: a worker's
   * report while the others start must not collect in the middle of it (started() clears it).
   */
  #collected = true;
  /** The other threads are idle too (the main thread: every worker's last report); undefined in a worker, which never trims. */
  readonly #others: (() => boolean) | undefined;
  readonly #trim: () => unknown;
  readonly #collect: (() => unknown) | undefined;
  #startTimer: NodeJS.Timeout | undefined;

  constructor(others: (() => boolean) | undefined, trim: () => unknown = releaseFreeMemory, collect: (() => unknown) | undefined = memoryReducingGc()) {
    this.#others = others;
    this.#trim = trim;
    this.#collect = collect;
  }

  /** The thread has started: its heap is collected START_COLLECT_MS later, if its outputs are idle then (else at their lull). */
  started(): void {
    clearTimeout(this.#startTimer);
    this.#startTimer = setTimeout(() => {
      this.#collected = false;
      this.check();
    }, START_COLLECT_MS);
    this.#startTimer.unref();
  }

  /** The thread stops: no collection for the start any more. */
  stop(): void {
    clearTimeout(this.#startTimer);
    this.#startTimer = undefined;
  }

  /** One output's activity, for its runner. */
  activity(): Activity {
    let busy = false;
    return {
      busy: () => {
        if (busy) return;
        busy = true;
        this.#busy++;
        this.#trimmed = false;
        this.#collected = false;
      },
      idle: () => {
        if (!busy) return;
        busy = false;
        this.#busy--;
        this.check();
      },
    };
  }

  /** Every output of this thread is idle. */
  get idle(): boolean {
    return this.#busy === 0;
  }

  /**
   * With this thread's outputs idle: collects its heap if not done since its last burst; then trims
   * if every output of the process is idle and nothing was trimmed since the last burst (also when
   * a worker reports). The collection first: the buffers it frees are the C library's to give back.
   */
  check(): void {
    if (this.#busy > 0) return;
    if (!this.#collected) {
      this.#collected = true;
      this.#collect?.();
    }
    if (this.#trimmed || !this.#others || !this.#others()) return;
    this.#trimmed = true;
    this.#trim();
  }

  /** A worker was busy in its last report: the next lull trims again. */
  othersBusy(): void {
    this.#trimmed = false;
  }
}
