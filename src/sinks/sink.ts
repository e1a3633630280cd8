// The contract between the runner and an output. A sink makes exactly one delivery attempt per
// send() and says what happened; the runner owns batching, retry, backoff and metrics.

import type { Batch } from '../core/event.ts';
import type { RelayError } from '../core/errors.ts';

export type SendResult =
  | { readonly status: 'sent' }
  | { readonly status: 'retryable'; readonly error: RelayError; readonly retryAfterMs?: number }
  | { readonly status: 'permanent'; readonly error: RelayError };

/** What a sink tells the runner besides the result of send(). */
export interface SinkEvents {
  /** The batch reached the intake (syslog: written, and the connection stayed healthy after). */
  acknowledged(batch: Batch): void;
  /** Batches written but not acknowledged were lost with their connection: call reclaim(). */
  connectionLost(error: RelayError): void;
  connected(): void;
  wrote(bytes: number): void;
}

export interface Sink {
  readonly type: string;
  start(events: SinkEvents): Promise<void>;
  /** Exactly one delivery attempt; never sleeps or retries. */
  send(batch: Batch, signal: AbortSignal): Promise<SendResult>;
  /** Batches written on a connection that failed before they were acknowledged, oldest first. */
  reclaim(): Batch[];
  /** Events written but not yet acknowledged. */
  readonly unacknowledged: number;
  /** Close cleanly; returns what could not be confirmed as delivered. Idempotent, safe before start. */
  stop(deadline: AbortSignal): Promise<Batch[]>;
}
