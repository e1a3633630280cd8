// The process's memory: what the C library keeps of a burst's freed memory (tens of MB at rest) is
// given back once every output of the process is idle, not by each one (malloc_trim walks every
// heap of the process). Each thread counts its outputs' activity (the runners say busy and idle);
// a worker reports whether it is idle with its state each second; the main thread trims once its
// own outputs and every worker are idle, once per lull.

import type { Activity } from '../core/runner.ts';
import { releaseFreeMemory } from '../platform/native-addon.ts';

export class Housekeeping {
  #busy = 0;
  #trimmed = true;
  /** The other threads are idle too (the main thread: every worker's last report); undefined in a worker, which never trims. */
  readonly #others: (() => boolean) | undefined;
  readonly #trim: () => unknown;

  constructor(others: (() => boolean) | undefined, trim: () => unknown = releaseFreeMemory) {
    this.#others = others;
    this.#trim = trim;
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

  /** Trims if every output of the process is idle and nothing was trimmed since the last burst (also when a worker reports). */
  check(): void {
    if (this.#trimmed || !this.#others || this.#busy > 0 || !this.#others()) return;
    this.#trimmed = true;
    this.#trim();
  }

  /** A worker was busy in its last report: the next lull trims again. */
  othersBusy(): void {
    this.#trimmed = false;
  }
}
