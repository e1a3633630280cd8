// A component's logging (core/telemetry.ts ComponentLog): a child logger with its labels bound, and
// one line per key every interval (10 s by default) for lines that could fire per event or per request.

import type { Logger } from 'pino';
import { RateLimiter } from '../core/rate-limiter.ts';
import type { ComponentLog } from '../core/telemetry.ts';

/** A child logger with `fields` bound, and one line per key every `intervalMs` for lines that could fire per event. */
export function componentLog(log: Logger, fields: Record<string, unknown>, intervalMs = 10_000): ComponentLog {
  const logger = log.child(fields);
  const limiter = new RateLimiter(intervalMs);
  const emit = (level: 'info' | 'warn' | 'error', key: string, extra: object, msg: string): void => {
    const suppressed = limiter.allow(key);
    if (suppressed !== undefined) logger[level]({ ...extra, suppressed }, msg);
  };
  return {
    logger,
    info: (key, extra, msg) => emit('info', key, extra, msg),
    warn: (key, extra, msg) => emit('warn', key, extra, msg),
    error: (key, err, extra, msg) => emit('error', key, { ...extra, err }, msg),
  };
}
