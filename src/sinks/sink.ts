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
  /** `events` events reached the intake (syslog: written, and the connection stayed healthy after). */
  acknowledged(events: number): void;
  /**
   * The connection failed with `events` events written but not acknowledged: they will be written
   * again on the next connection, which the runner must open (send an empty batch) if idle.
   */
  connectionLost(error: RelayError, events: number): void;
  connected(): void;
  wrote(bytes: number): void;
}

export interface Sink {
  readonly type: string;
  start(events: SinkEvents): Promise<void>;
  /**
   * Exactly one delivery attempt; never sleeps or retries. An empty batch only (re)connects and
   * writes again what a failed connection left unacknowledged.
   */
  send(batch: Batch, signal: AbortSignal): Promise<SendResult>;
  /** Events accepted by send() but not yet acknowledged. */
  readonly unacknowledged: number;
  /** Close cleanly; returns how many events could not be confirmed as delivered. Idempotent, safe before start. */
  stop(deadline: AbortSignal): Promise<number>;
}
