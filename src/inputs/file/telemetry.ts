// How the file input reports an error (its telemetry, FileTelemetry, is in core/telemetry.ts;
// instruments.ts implements it from the metrics registry).

import type { FileTelemetry } from '../../core/telemetry.ts';

/**
 * Counts an error by its code and logs it, at most once per code and `what` (a path, or '' for
 * the input as a whole) every log period: a file that keeps failing does not flood the log.
 */
export function reportError(t: FileTelemetry, code: string, what: string, err: unknown, fields: object, msg: string): void {
  t.error(code);
  t.log.error(`${code}|${what}`, err, { code, ...fields }, msg);
}
