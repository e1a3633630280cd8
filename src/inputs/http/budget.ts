// The memory budget an HTTP listener's requests share: bytes of bodies as received, as inflated,
// and as being parsed, for all requests in flight at once. A request takes from it as its bytes
// arrive and gives everything back once its events are queued (the queue bounds them from there)
// or it is refused, so concurrent large bodies and gzip bombs cannot grow memory past it. What does
// not fit now is refused (429, to retry); what could never fit, even alone, is refused for good (413).

/** ok: taken; later: not now, the others hold too much; never: more than the whole budget. */
export type TakeResult = 'ok' | 'later' | 'never';

/** One request's share: what it holds is given back by `end`, whatever happened. */
export interface BudgetLease {
  readonly capacity: number;
  /** Whether `bytes` more would fit now, without taking them (a declared Content-Length). */
  fits(bytes: number): TakeResult;
  take(bytes: number): TakeResult;
  give(bytes: number): void;
  end(): void;
}

export class BodyBudget {
  readonly capacity: number;
  #used = 0;
  #saturated = false;

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get used(): number {
    return this.#used;
  }

  /**
   * A request was refused for want of room, and the budget has not been below half full since:
   * the listener is turning requests away (readiness says so; the hysteresis keeps it from flapping).
   */
  get saturated(): boolean {
    return this.#saturated;
  }

  lease(): BudgetLease {
    let held = 0;
    const fits = (bytes: number): TakeResult => {
      if (held + bytes > this.capacity) return 'never';
      if (this.#used + bytes > this.capacity) {
        this.#saturated = true;
        return 'later';
      }
      return 'ok';
    };
    return {
      capacity: this.capacity,
      fits,
      take: (bytes) => {
        const r = fits(bytes);
        if (r === 'ok') {
          this.#used += bytes;
          held += bytes;
        }
        return r;
      },
      give: (bytes) => {
        const n = Math.min(bytes, held);
        held -= n;
        this.#release(n);
      },
      end: () => {
        this.#release(held);
        held = 0;
      },
    };
  }

  #release(bytes: number): void {
    this.#used -= bytes;
    if (this.#used <= this.capacity / 2) this.#saturated = false;
  }
}
