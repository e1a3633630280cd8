// Adaptive request concurrency (AIMD, in the spirit of TCP Vegas and Vector's ARC). Answers are
// observed in intervals of about one round trip; the intake's unloaded pace is the lowest interval
// mean round trip of the last minute. At the end of each interval:
// - back pressure (the intake throttled: 429/503, or a timeout) halves the limit;
// - a mean round trip above 1.5 times the unloaded pace, or 2.5 deviations above the past mean (a
//   sudden jump), cuts a tenth: requests queue at the intake, which is saturated;
// - with the limit reached and a mean round trip within 1.1 times the unloaded pace, one more;
// - in between, the limit holds: latency rises a step with every request too many, so it settles
//   just above the intake's capacity instead of creeping up while latency climbs.
// Only successful requests measure the round trip: a fast error answer says nothing of the pace.

export interface Outcome {
  readonly rttMs: number;
  /** Delivered (2xx): its round trip counts. */
  readonly ok: boolean;
  /** Back pressure: throttled (429/503), timed out, or its outcome unknown. */
  readonly overloaded: boolean;
  /** Requests in flight when this one finished, itself included. */
  readonly inFlight: number;
}

/** A cut for latency rising: by a tenth (at least one). */
const DECREASE = 0.9;
/** A cut for explicit throttling: by half. */
const THROTTLED_DECREASE = 0.5;
/** Latency above the past mean by this many deviations is saturation. */
const DEVIATION_SCALE = 2.5;
/** Weight of the newest interval in the past mean and deviation. */
const EWMA = 0.4;
/** Shortest interval: a fast intake is still judged on a few answers together. */
const MIN_INTERVAL_MS = 50;
/** Within this of the unloaded pace (times, plus a little for a fast intake's jitter): room for one more. */
const GROW_WITHIN = 1.1;
/** Beyond this of it: saturated. */
const SATURATED_BEYOND = 1.5;
const JITTER_MS = 1;
/** The unloaded pace is the lowest of this long: a path or an intake that became slower for good is followed. */
const FLOOR_WINDOW_MS = 60_000;

export class AdaptiveConcurrency {
  readonly #min: number;
  readonly #max: number;
  #limit: number;
  /** The past: mean and mean deviation of the intervals' round trips (0 before the first). */
  #meanMs = 0;
  #deviationMs = 0;
  /** The unloaded pace: the lowest interval mean since `#floorAt` (0 before the first). */
  #floorMs = 0;
  #floorAt = 0;
  // The interval being observed.
  #startedAt = -1;
  #rttSum = 0;
  #rttCount = 0;
  #reachedLimit = false;
  #backPressure = false;

  constructor(min: number, max: number, initial = min) {
    this.#min = min;
    this.#max = max;
    this.#limit = Math.min(max, Math.max(min, initial));
  }

  get limit(): number {
    return this.#limit;
  }

  /** The past mean round trip of successful requests (ms; 0 before any). */
  get meanMs(): number {
    return this.#meanMs;
  }

  /** Feed one finished request; returns the limit, changed at the end of an interval. */
  record(o: Outcome, now = performance.now()): number {
    if (this.#startedAt < 0) this.#startedAt = now;
    if (o.overloaded) this.#backPressure = true;
    else if (o.ok) {
      this.#rttSum += o.rttMs;
      this.#rttCount++;
    }
    if (o.inFlight >= this.#limit) this.#reachedLimit = true;
    if (now - this.#startedAt >= Math.max(MIN_INTERVAL_MS, this.#meanMs)) this.#adjust(now);
    return this.#limit;
  }

  #adjust(now: number): void {
    const current = this.#rttCount > 0 ? this.#rttSum / this.#rttCount : undefined;
    const past = this.#meanMs;
    if (current !== undefined && (this.#floorMs === 0 || current <= this.#floorMs || now - this.#floorAt > FLOOR_WINDOW_MS)) {
      this.#floorMs = current;
      this.#floorAt = now;
    }
    const floor = this.#floorMs;
    if (this.#backPressure) {
      this.#limit = Math.max(this.#min, Math.min(this.#limit - 1, Math.floor(this.#limit * THROTTLED_DECREASE)));
    } else if (current !== undefined && past > 0 && (current > floor * SATURATED_BEYOND + JITTER_MS || current > past + DEVIATION_SCALE * this.#deviationMs + JITTER_MS)) {
      this.#limit = Math.max(this.#min, Math.min(this.#limit - 1, Math.floor(this.#limit * DECREASE)));
    } else if (current !== undefined && this.#reachedLimit && current <= floor * GROW_WITHIN + JITTER_MS && this.#limit < this.#max) {
      this.#limit++;
    }
    if (current !== undefined) {
      if (past === 0) this.#meanMs = current;
      else {
        this.#deviationMs += (Math.abs(current - past) - this.#deviationMs) * EWMA;
        this.#meanMs += (current - past) * EWMA;
      }
    }
    this.#startedAt = now;
    this.#rttSum = 0;
    this.#rttCount = 0;
    this.#reachedLimit = false;
    this.#backPressure = false;
  }
}
