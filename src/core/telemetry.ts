// What components report, in the project's fixed vocabulary, and how they log. Components get an
// implementation bound to their labels (pipeline/instruments.ts) and never touch the metrics
// registry: the names, labels and help texts live in telemetry/, in one place.

import type { Logger } from 'pino';
import type { DropReason } from './contracts.ts';

/**
 * A component's logging: `logger` is its child logger (its labels bound) for lifecycle lines;
 * the rest are for lines that could fire per event or per request: at most one per key every
 * 10 s, carrying how many it stood for. Errors go in as `err` objects (stack and cause kept).
 */
export interface ComponentLog {
  readonly logger: Logger;
  info(key: string, fields: object, msg: string): void;
  warn(key: string, fields: object, msg: string): void;
  error(key: string, err: unknown, fields: object, msg: string): void;
}

/** What an intake's output reports (the runner does, for every kind of sink). */
export interface OutputTelemetry {
  readonly log: ComponentLog;
  /** Events the intake acknowledged, at `at` (ms). */
  acknowledged(events: number, at: number): void;
  wrote(bytes: number): void;
  /** Events written again (or retried after an unknown outcome): possible duplicates. */
  resent(events: number): void;
  /** A failed attempt or a lost connection, by error code. */
  error(code: string): void;
  retried(): void;
  dropped(reason: DropReason, events: number): void;
  connected(up: boolean): void;
  reconnected(): void;
  keyRejected(rejected: boolean): void;
  sendSeconds(seconds: number): void;
  batchEvents(events: number): void;
  concurrency(limit: number): void;
  inFlight(sends: number): void;
}

/** What the HTTP output reports besides the runner's: requests by status class, body sizes, durations. */
export interface HttpOutputTelemetry {
  /** A request's outcome: '2xx', '4xx', '5xx', 'other', or 'error' (no answer). */
  request(statusClass: '2xx' | '4xx' | '5xx' | 'other' | 'error'): void;
  /** A request body: its JSON bytes before compression. */
  bodyBytes(bytes: number): void;
  requestSeconds(seconds: number): void;
}

/**
 * The telemetry of every kind of component, bound to the labels of the one asking: each component
 * takes the part it reports through. Implemented from the metrics registry in pipeline/.
 */
export interface Instruments {
  httpOutput(): HttpOutputTelemetry;
}
