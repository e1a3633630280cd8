// The contract between the runner and an output. A sink makes exactly one delivery attempt per
// send() and says what happened; the runner owns batching, concurrency, retry, backoff, splitting
// refused batches, and metrics.

import type { Batch } from '../core/event.ts';
import type { RelayError } from '../core/errors.ts';
import type { DropReason } from '../telemetry/metrics.ts';

export type SendResult =
  | { readonly status: 'sent' }
  | {
      readonly status: 'retryable';
      readonly error: RelayError;
      /** The intake asked for this delay (Retry-After), or the sink knows better than the backoff. */
      readonly retryAfterMs?: number;
      /** Every request would fail the same way (throttled, key refused): pause the whole output. */
      readonly pauseAll?: boolean;
      /** The request may have been processed (timeout, reset after sending): a retry may duplicate. */
      readonly unknownOutcome?: boolean;
      /** The intake refuses the key: the output is not ready until a send succeeds. */
      readonly keyRejected?: boolean;
    }
  | {
      readonly status: 'permanent';
      readonly error: RelayError;
      readonly reason: DropReason;
      /** Some events of the batch may be acceptable: split it and send the halves. */
      readonly bisect: boolean;
    };

/** What a sink tells the runner besides the result of send(). */
export interface SinkEvents {
  /**
   * Events [seq, seq + events) of a batch reached the intake (syslog: written, and the connection
   * stayed healthy after). Each batch is acknowledged once, whole.
   */
  acknowledged(seq: number, events: number): void;
  /**
   * The connection failed with `events` events written but not acknowledged: they will be written
   * again on the next connection, which the runner must open (send an empty batch) if idle.
   */
  connectionLost(error: RelayError, events: number): void;
  connected(): void;
  wrote(bytes: number): void;
}

/** How many sends the runner may have in flight: a fixed number, or adaptive within bounds. */
export type Concurrency = { readonly fixed: number } | { readonly adaptive: { readonly min: number; readonly max: number } };

export interface Sink {
  readonly type: string;
  readonly concurrency: Concurrency;
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
  /**
   * For a reload: closes the connection as at a stop (what the intake confirms by closing its side
   * counts as delivered) and returns what is still unacknowledged, for the next sink of the same
   * kind to write again (adopt); afterwards this sink is stopped.
   */
  handOver?(deadline: AbortSignal): Promise<{ readonly state: unknown; readonly events: number }>;
  /** Takes what another sink of the same kind handed over: written again first on connecting. */
  adopt?(state: unknown): void;
}
