// An intake's queue as its users see it: what inputs hand events to (QueueIn), what the runner takes
// them from (QueueOut), what inputs that answer once events are safe wait on (QueueMarks), and the
// values they exchange. The implementations: queue.ts (memory), disk-queue.ts, pipeline/forward.ts.

import type { Batch, LogEvent } from './event.ts';

export type WhenFull = 'block' | 'drop_newest';
/** What a reader can do when the queue cannot take more (QueueIn.offer). */
export type OfferMode = 'drop' | 'pause' | 'wait';
export type OfferResult = 'ok' | 'slow_down' | 'dropped';
export type AdmitResult = 'ok' | 'full' | 'closed';

export interface QueueLimits {
  readonly maxEvents: number;
  readonly maxBytes: number;
  readonly whenFull: WhenFull;
}

export interface BatchLimits {
  readonly maxEvents: number;
  readonly maxBytes: number;
  readonly lingerMs: number;
}

export interface Offered {
  readonly result: OfferResult;
  /** Events refused (queue full); the caller counts them as dropped. */
  readonly dropped: number;
  readonly droppedBytes: number;
}

export interface SettledWaiter {
  readonly seq: number;
  readonly resolve: () => void;
}

/** Resolves the waiters whose events are all settled; returns the others. */
export function wakeSettled(waiters: SettledWaiter[], watermark: number): SettledWaiter[] {
  const rest: SettledWaiter[] = [];
  for (const w of waiters) {
    if (w.seq <= watermark) w.resolve();
    else rest.push(w);
  }
  return rest;
}

/** What an input's hand-off into the queues uses: offer a read's events, or admit a request's whole. */
export interface QueueIn {
  readonly closed: boolean;
  /** At or above its limits: an input that can answer "later" (HTTP) should. */
  readonly full: boolean;
  /** Survives a restart: what is pending at shutdown is kept, not lost. */
  readonly durable: boolean;
  /** Every event offered so far is numbered below this. */
  readonly nextSeq: number;
  /**
   * A read's events (their total size `bytes`). `mode` is what the reader can do when the queue
   * cannot take more: `drop` (it cannot wait: UDP; what does not fit is refused, counted by the
   * caller), `pause` (it stops reading until writable(): TCP, RELP under when_full: block; under
   * drop_newest what does not fit is refused), `wait` (its data keeps, whatever when_full says:
   * files, a sender's RELP window).
   */
  offer(events: LogEvent[], bytes: number, mode: OfferMode): Offered;
  /** All of `events` or none (an input that can answer "later"). */
  admit(events: LogEvent[], bytes: number): AdmitResult;
  /** Resolves once a reader told to slow down may go on. */
  writable(): Promise<void>;
  retryAfterSeconds(): number;
}

/** What the runner uses: batches out, released once sent, put back at a stop, settled once acknowledged. */
export interface QueueOut {
  /** Events waiting for delivery: waiting to be taken, or taken and not yet released. */
  readonly pendingEvents: number;
  readonly pendingBytes: number;
  take(limits: BatchLimits, signal: AbortSignal): Promise<Batch | undefined>;
  release(batch: Batch): void;
  requeue(batches: readonly Batch[]): void;
  settle(seq: number, count: number): void;
}

/** What inputs that answer once events are safe (RELP, HTTP, files' checkpoints) wait on. */
export interface QueueMarks {
  /** Every event numbered below this is delivered, or dropped with a counted reason. */
  readonly settledBelow: number;
  /**
   * Every event numbered below this is safe: settled (memory queue), or written and fsynced (disk
   * queue). File inputs move their checkpoints up to here.
   */
  readonly safeBelow: number;
  /** Resolves once every event numbered below `seq` is settled. */
  untilSettled(seq: number): Promise<void>;
  /**
   * Resolves once every event numbered below `seq` is safe (safeBelow): a disk queue fsyncs soon
   * for it, sharing one fsync among all who wait (RELP answers wait here).
   */
  untilSafe(seq: number): Promise<void>;
  /**
   * A queue another thread owns (pipeline/forward.ts): resolves once that thread has every event
   * numbered below `seq` in its queue, as a local queue has them once offered. Its waits reject
   * when that thread could not take them (counted there as dropped): they are never safe.
   */
  untilWritten?(seq: number): Promise<void>;
}

/**
 * An intake's queue, as each of its users sees a part of it: the memory queue (queue.ts), the disk
 * queue (disk-queue.ts), which keeps a memory queue as its stage, and a worker's view of a queue the
 * main thread owns (pipeline/forward.ts).
 */
export interface EventQueue extends QueueIn, QueueOut, QueueMarks {
  close(): void;
  /** Age (ms) of the oldest event it holds not delivered yet, as far as it knows; 0 when none. */
  oldestAgeMs(now?: number): number;
  /** Most events it held at once since it opened (the forwarder statistics' maxqsize). */
  readonly highWater: number;
  /** Offers and admissions that found it full (the forwarder statistics' full). */
  readonly timesFull: number;
}
