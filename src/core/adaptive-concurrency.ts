// Adaptive request concurrency (AIMD, in the spirit of TCP congestion control and Vector's ARC):
// the limit grows by one per round of fast, successful requests made while it was the bottleneck,
// and shrinks by a factor when the intake throttles, fails, or answers much slower than its
// baseline. At most one decrease per baseline round trip, so one burst of errors is one decrease.

export interface Outcome {
  readonly rttMs: number;
  /** Throttled (429/503), timed out, or failed at the connection. */
  readonly overloaded: boolean;
  /** Requests in flight when this one finished, itself included. */
  readonly inFlight: number;
}

const DECREASE = 0.7;
const SLOW_FACTOR = 2;
const EWMA = 0.2;

export class AdaptiveConcurrency {
  readonly #min: number;
  readonly #max: number;
  #limit: number;
  #credit = 0;
  /** Smoothed round trip of successful requests, the intake's "unloaded" pace. */
  #baselineMs = 0;
  #lastDecrease = 0;

  constructor(min: number, max: number, initial = min) {
    this.#min = min;
    this.#max = max;
    this.#limit = Math.min(max, Math.max(min, initial));
  }

  get limit(): number {
    return this.#limit;
  }

  /** Feed one finished request; returns the new limit. */
  record(o: Outcome, now = Date.now()): number {
    const slow = this.#baselineMs > 0 && o.rttMs > this.#baselineMs * SLOW_FACTOR;
    if (o.overloaded || slow) {
      if (now - this.#lastDecrease >= Math.max(this.#baselineMs, 50)) {
        this.#limit = Math.max(this.#min, Math.floor(this.#limit * DECREASE));
        this.#lastDecrease = now;
        this.#credit = 0;
      }
      // A slow answer still tells something about the pace, but an overload does not.
      if (!o.overloaded) this.#baselineMs += (o.rttMs - this.#baselineMs) * (EWMA / 4);
      return this.#limit;
    }
    this.#baselineMs = this.#baselineMs === 0 ? o.rttMs : this.#baselineMs + (o.rttMs - this.#baselineMs) * EWMA;
    // Grow only when the limit is what holds the output back.
    if (o.inFlight >= this.#limit && this.#limit < this.#max) {
      this.#credit += 1 / this.#limit;
      if (this.#credit >= 1) {
        this.#credit = 0;
        this.#limit++;
      }
    }
    return this.#limit;
  }
}
