// Capped exponential backoff with full jitter (AWS architecture blog, "Exponential Backoff And Jitter").

export interface BackoffOptions {
  readonly initialMs: number;
  readonly maxMs: number;
}

/** Delay before retry number `attempt` (1-based): uniform in [base/2, base], base = min(max, initial * 2^(attempt-1)). */
export function backoffDelay(attempt: number, opts: BackoffOptions, random: () => number = Math.random): number {
  const exp = Math.min(opts.maxMs, opts.initialMs * 2 ** Math.min(attempt - 1, 30));
  return Math.round(exp / 2 + random() * (exp / 2));
}

/** Resolves after `ms`, or early (without throwing) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
