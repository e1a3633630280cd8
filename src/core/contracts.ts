// The contracts between the parts: a Source takes events in, a Sink delivers them (exactly one
// attempt per send(); the runner owns batching, concurrency, retry, backoff, splitting refused
// batches, and counting), and every event that will never be delivered is counted with a
// DropReason from this one list.

import type { Batch } from './event.ts';
import type { RelayError } from './errors.ts';

/** Why an event will never be delivered. Every drop is counted under one of these. */
export type DropReason = 'queue_full' | 'too_large' | 'shutdown' | 'rejected' | 'retries_exhausted' | 'filtered' | 'corrupt';
/** Where in a pipeline each reason can happen (`events_dropped_total{stage, reason}`): pre-created at 0, so rate() alerts have a series. */
export const DROP_STAGES: Readonly<Record<'input' | 'queue' | 'output', readonly DropReason[]>> = {
  input: ['queue_full', 'too_large', 'shutdown', 'filtered'],
  queue: ['corrupt', 'shutdown'],
  output: ['rejected', 'too_large', 'retries_exhausted', 'shutdown'],
};

/**
 * Something that takes events in (an input, a shared listener, the forwarder statistics) and hands
 * them to intakes through its Inlet. start/stop are idempotent; stop is safe before start.
 */
export interface SourceHealth {
  readonly name: string;
  /** Turning requests away for want of resources. */
  readonly saturated: boolean;
  readonly inflightBytes: number;
  readonly budgetBytes: number;
}

export interface Source {
  /** Its name in metrics and logs. */
  readonly label: string;
  /** Its listening port once started (port 0 resolved); 0 for sources that do not listen. */
  readonly port: number;
  /** Where it reads from, for the start-up log. */
  readonly where: string;
  start(): Promise<void>;
  /** Stops taking in events (what was read is offered first), within `graceMs` for open connections. */
  stop(graceMs?: number): Promise<void>;
  /**
   * After stop(): finishes what it still has in flight (answers to requests, within `graceMs`),
   * while the queues are still open. Others may start meanwhile (its port is free).
   */
  finish?(graceMs?: number): Promise<void>;
  /** After stop(): saves what must survive a restart (file checkpoints); a replacement starts from it. */
  save?(): Promise<void>;
  /** Whether it can take events now, for /readyz (an HTTP listener out of memory budget cannot). */
  health?(): SourceHealth;
  /** Stops reporting (it is gone for good: a reload removed it). */
  dispose?(): void;
}

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
   * stayed healthy after; RELP: each answered 200). Each event is acknowledged or refused once.
   */
  acknowledged(seq: number, events: number): void;
  /**
   * Events [seq, seq + events) the intake refused one by one after send() took them (RELP: an
   * answer other than 200): dropped, reason rejected.
   */
  refused(seq: number, events: number, error: RelayError): void;
  /**
   * The connection failed with `events` events written but not acknowledged: they will be written
   * again on the next connection, which the runner must open (send an empty batch) if idle.
   */
  connectionLost(error: RelayError, events: number): void;
  /** A connection is open; `resumed`: its TLS handshake resumed an earlier session. */
  connected(resumed?: boolean): void;
  wrote(bytes: number): void;
  /** Events whose message was cut to the intake's limit (INTAKE_MAX_EVENT_BYTES) when formatted. */
  cut(events: number): void;
}

/** How many sends the runner may have in flight: a fixed number, or adaptive within bounds. */
export type Concurrency = { readonly fixed: number } | { readonly adaptive: { readonly min: number; readonly max: number } };

export interface Sink<HandOver = unknown> {
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
  /** A lull began (nothing sent for a while, nothing unacknowledged): let go of what is kept for the next burst. */
  trim?(): void;
  /**
   * Close cleanly; returns how many events could not be confirmed as delivered. Until `deadline`,
   * a sink that confirms by connection (syslog) still reports a lost connection and takes empty
   * sends, which write its window again; it refuses new batches. `rewrite: false` when no runner
   * drives it any more (a background stop after a reload): what a lost connection held is then
   * reported at once, not waited for. Idempotent, safe before start.
   */
  stop(deadline: AbortSignal, rewrite?: boolean): Promise<number>;
  /**
   * After stop(): the events it could not confirm, as [seq, count] ranges, for the caller that
   * counts them as dropped to settle them in the queue (else its settled mark would wait for
   * them forever: file checkpoints, and answers to RELP and HTTP senders, would stall).
   */
  unconfirmed?(): readonly (readonly [number, number])[];
  /**
   * For a reload: closes the connection as at a stop (what the intake confirms by closing its side
   * counts as delivered) and returns what is still unacknowledged, for the next sink of the same
   * kind to write again (adopt); afterwards this sink is stopped.
   */
  handOver?(deadline: AbortSignal): Promise<{ readonly state: HandOver; readonly events: number }>;
  /**
   * Takes what another sink of the same kind handed over (the caller checks the kind: `type`):
   * written again first on connecting.
   */
  adopt?(state: HandOver): void;
}
