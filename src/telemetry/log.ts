// pino logger: JSON on stdout, intake keys redacted by path as a second line of defence (the code
// never logs them), and a rate limiter for error logs that could otherwise fire per event.

import { pino, type Logger } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'intake_key',
  'intakeKey',
  '*.intake_key',
  '*.intakeKey',
  'api_key',
  '*.api_key',
  'authorization',
  '*.authorization',
  '*.headers.authorization',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'intake-relay' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    },
    // Synchronous: logs are lifecycle and rate-limited errors only, and none may be lost at exit.
    destination ?? pino.destination({ dest: 1, sync: true }),
  );
}

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
  allow(key: string, now = Date.now()): number | undefined {
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
