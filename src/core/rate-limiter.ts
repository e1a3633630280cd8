// A rate limiter for log lines that could otherwise fire per event or per request.

/**
 * Lets one log line per key through every `intervalMs`; the next one that passes carries how many
 * were suppressed in between, so a flood of errors costs one line per interval and loses no count.
 */
export class RateLimiter {
  readonly #intervalMs: number;
  readonly #last = new Map<string, { at: number; suppressed: number }>();

  constructor(intervalMs = 10_000) {
    this.#intervalMs = intervalMs;
  }

  /** Returns undefined to suppress, or the number of lines suppressed since the last one. */
  allow(key: string, now = performance.now()): number | undefined {
    const s = this.#last.get(key);
    if (s && now - s.at < this.#intervalMs) {
      s.suppressed++;
      return undefined;
    }
    const suppressed = s?.suppressed ?? 0;
    this.#last.set(key, { at: now, suppressed: 0 });
    return suppressed;
  }
}
