// The one place that owns delivery for an intake: takes batches from the queue, keeps up to the
// output's concurrency in flight (adaptive when the output asks), retries with capped
// backoff (forever unless max_retries is set), pauses the whole output when the intake throttles
// or refuses the key, splits refused batches to isolate the events at fault, keeps an idle sink's
// unacknowledged writes moving (while it stops too), lets the sink give back what it keeps once a
// lull begins and says so (busy, idle: process-wide memory is the process's housekeeping's), and
// reports through its telemetry. Each send is one attempt by the sink.

import type { Batch } from './event.ts';
import { AdaptiveConcurrency } from './adaptive-concurrency.ts';
import { backoffDelay, sleep, type BackoffOptions } from './backoff.ts';
import type { BatchLimits, QueueOut } from './event-queue.ts';
import type { RelayError } from './errors.ts';
import type { DropReason, Sink } from './contracts.ts';
import type { OutputTelemetry } from './telemetry.ts';

export interface RunnerOptions {
  readonly intake: string;
  readonly queue: QueueOut;
  readonly sink: Sink;
  readonly batch: BatchLimits;
  readonly backoff: BackoffOptions;
  /** Attempts after the first before a batch is dropped (reason retries_exhausted); undefined = forever. */
  readonly maxRetries: number | undefined;
  readonly telemetry: OutputTelemetry;
  /** A lull: this long after the last batch sent (LULL_MS; shorter in tests). */
  readonly lullMs?: number;
  /** Told when its output turns busy (a batch sent after a lull, or the first) and idle (a lull begins, or it ends). */
  readonly activity?: Activity;
}

/** An output's activity, for whoever keeps the process's memory (runtime/housekeeping.ts). */
export interface Activity {
  busy(): void;
  idle(): void;
}

/**
 * A lull begins this long after the last batch sent, once nothing is queued or unacknowledged: the
 * sink lets go of what it keeps for the next burst, and the runner says it is idle (once every
 * output of the process is, the C library gives back what the burst freed inside its heaps).
 */
const LULL_MS = 10_000;

export type OutputState = 'starting' | 'connected' | 'retrying' | 'key_rejected' | 'stopped';

const EMPTY: Batch = { events: [], bytes: 0, seq: 0 };

export class SinkRunner {
  readonly #o: RunnerOptions;
  readonly #abort = new AbortController();
  /** Batches that may be in delivery at once (an attempt or its backoff): the output's concurrency, or the adaptive limit. */
  #limit: number;
  /** Batches in delivery now, and the loop waiting for one to end (for a free slot, or for none left at a stop). */
  #delivering = 0;
  #deliveryEnded: (() => void) | undefined;
  readonly #adaptive: AdaptiveConcurrency | undefined;
  #loop: Promise<void> | undefined;
  /** Aborted to wake the loop from waiting on the queue: a lost connection has writes to redo. */
  #kick = new AbortController();
  #needFlush = false;
  #failures = 0;
  #pausedUntil = 0;
  /** The intake refuses the key: kept apart from the connection state, which a success may change first. */
  #keyRejected = false;
  #state: OutputState = 'starting';
  #lastError: RelayError | undefined;
  #lastAckAt = 0;
  #delivered = 0;
  /** Detached (a reload): the sink is the caller's now, and nobody writes its lost windows again. */
  #detached = false;
  /** Batches taken and not sent when the runner stopped: put back in the queue once its sends end. */
  readonly #unsent: Batch[] = [];
  readonly #t: OutputTelemetry;
  /** Runs once, LULL_MS after the last batch sent (refreshed by each): no timer at rest. */
  #lullTimer: NodeJS.Timeout | undefined;
  /** A stop or a detach began: no lull any more (the sink is stopping, or no longer this runner's). */
  #ending = false;
  /**
   * Sends in flight now. Each attempt, a retry too, holds one of the limit's places while it runs,
   * so a lower limit holds from the next attempt on: batches taken when the limit was higher wait
   * for a place (after a Retry-After pause, at most the limit go at once).
   */
  #sending = 0;
  readonly #placeWaiters: (() => void)[] = [];
  /**
   * Whether it has not delivered since a failed attempt, and up to when (performance.now(): a step
   * of the wall clock must not count negative time, which a counter refuses) that time is counted.
   */
  #suspended = false;
  #suspensionCountedTo = 0;

  constructor(options: RunnerOptions) {
    this.#o = options;
    const { sink, telemetry: t } = options;
    const c = sink.concurrency;
    this.#adaptive = 'adaptive' in c ? new AdaptiveConcurrency(c.adaptive.min, c.adaptive.max) : undefined;
    this.#limit = 'adaptive' in c ? (this.#adaptive as AdaptiveConcurrency).limit : c.fixed;
    this.#t = t;
    t.connected(false);
    t.keyRejected(false);
    t.concurrency(this.#limit);
  }

  get state(): OutputState {
    return this.#keyRejected ? 'key_rejected' : this.#state;
  }
  get lastError(): RelayError | undefined {
    return this.#lastError;
  }
  /** Time of the last acknowledged delivery (ms), 0 if none yet. */
  get lastAckAt(): number {
    return this.#lastAckAt;
  }
  /** Events the intake acknowledged through this runner so far. */
  get delivered(): number {
    return this.#delivered;
  }

  async start(): Promise<void> {
    const { sink } = this.#o;
    const t = this.#t;
    await sink.start({
      acknowledged: (seq, n) => {
        this.#o.queue.settle(seq, n);
        this.#delivered += n;
        this.#lastAckAt = Date.now();
        t.acknowledged(n, this.#lastAckAt);
        // Only the intake's confirmation proves a connection sound: a connect or a write does not.
        this.#failures = 0;
      },
      refused: (seq, n, error) => {
        t.dropped('rejected', n);
        t.error(error.code);
        this.#o.queue.settle(seq, n);
        this.#logError(error, 'Events dropped: the intake refused them.', { reason: 'rejected', events: n });
      },
      connectionLost: (error, events) => {
        // A replaced sink stopping in the background: what it could not confirm is counted by its stop.
        if (this.#detached) return;
        t.connected(false);
        this.#state = 'retrying';
        t.error(error.code);
        if (events > 0) t.resent(events);
        // The next connection (for what the sink holds, or just to be connected again) waits its
        // backoff: an intake that takes a little, or nothing, and drops the connection, again and
        // again, must not get reconnections (and the window rewritten) in a tight loop. Only a
        // confirmation resets it.
        this.#failures++;
        this.#pausedUntil = Math.max(this.#pausedUntil, performance.now() + backoffDelay(this.#failures, this.#o.backoff));
        this.#needFlush = true;
        this.#kick.abort();
        this.#logError(error, 'Output connection lost; unconfirmed events will be written again.', { events });
      },
      connected: (resumed) => {
        t.connected(true);
        t.reconnected(resumed === true);
        if (this.#state !== 'connected') t.log.logger.info('Output connected.');
        this.#state = 'connected';
      },
      wrote: (bytes) => t.wrote(bytes),
      cut: (n) => t.cut(n),
    });
    // Writes handed over by a previous sink (a reload) go out first, even if nothing new comes.
    if (sink.unacknowledged > 0) this.#needFlush = true;
    this.#loop = this.#run();
  }

  #logError(error: RelayError, msg: string, fields: object = {}): void {
    this.#lastError = error;
    this.#t.log.error(error.code, error, { code: error.code, ...fields }, msg);
  }

  async #run(): Promise<void> {
    const { queue, batch: limits } = this.#o;
    const stop = this.#abort.signal;
    let waiting: AbortSignal | undefined;
    for (;;) {
      let batch: Batch | undefined;
      if (this.#needFlush) {
        this.#needFlush = false;
        batch = EMPTY;
      } else {
        if (this.#kick.signal.aborted) {
          this.#kick = new AbortController();
          waiting = undefined;
        }
        // One combined signal until the next kick, not one per batch (AbortSignal.any is costly).
        waiting ??= AbortSignal.any([stop, this.#kick.signal]);
        batch = await queue.take(limits, waiting);
        if (!batch) {
          if (stop.aborted || !this.#needFlush) break; // stopped, or closed and empty
          continue;
        }
      }
      // A batch in reserve at most: it waits for a slot, and the next is taken only once it has
      // one (the queue keeps the rest).
      while (this.#delivering >= this.#limit) await this.#oneEnded();
      this.#delivering++;
      void this.#deliver(batch).finally(() => {
        this.#delivering--;
        this.#wakeLoop();
      });
    }
    while (this.#delivering > 0) await this.#oneEnded();
    // Put back together, oldest first: sends end in any order (a batch waiting for a slot ends
    // before the one ahead of it, in its backoff), and the next runner must not send a later batch first.
    if (this.#unsent.length > 0) queue.requeue(this.#unsent.splice(0).sort((a, b) => a.seq - b.seq));
  }

  /** Resolves when a batch in delivery ends (delivered, dropped, or put back at a stop) or the limit grows. */
  #oneEnded(): Promise<void> {
    return new Promise((resolve) => (this.#deliveryEnded = resolve));
  }

  #wakeLoop(): void {
    const wake = this.#deliveryEnded;
    this.#deliveryEnded = undefined;
    wake?.();
  }

  /** A batch was sent: the lull, if any, begins LULL_MS from now. */
  #sent(): void {
    if (this.#ending) return;
    if (this.#lullTimer) {
      this.#lullTimer.refresh();
      return;
    }
    this.#lullTimer = setTimeout(() => this.#lull(), this.#o.lullMs ?? LULL_MS);
    this.#lullTimer.unref();
    this.#o.activity?.busy();
  }

  #endLull(): void {
    this.#ending = true;
    if (this.#lullTimer) this.#o.activity?.idle();
    clearTimeout(this.#lullTimer);
    this.#lullTimer = undefined;
  }

  #lull(): void {
    // Still busy (an intake slow to confirm, a queue not drained: an outage): look again later.
    if (this.#o.sink.unacknowledged > 0 || this.#o.queue.pendingEvents > 0) {
      this.#lullTimer?.refresh();
      return;
    }
    this.#lullTimer = undefined;
    this.#o.sink.trim?.();
    this.#o.activity?.idle();
  }

  /**
   * Waits while the whole output is paused (throttled, key refused). Looks again after each sleep:
   * an answer that came in meanwhile may have made the pause longer, and a Retry-After is a promise
   * to send nothing until it ends.
   */
  async #gate(): Promise<void> {
    const stop = this.#abort.signal;
    for (let wait = this.#pausedUntil - performance.now(); wait > 0 && !stop.aborted; wait = this.#pausedUntil - performance.now()) {
      await sleep(wait, stop);
    }
  }

  /** Delivers one batch: retries it, splits it, or drops it with a counted reason. */
  async #deliver(batch: Batch): Promise<void> {
    const { queue, sink } = this.#o;
    const t = this.#t;
    const stop = this.#abort.signal;
    let attempt = 0;
    for (;;) {
      await this.#gate();
      if (stop.aborted) {
        if (batch !== EMPTY) this.#unsent.push(batch);
        return;
      }
      if (!(await this.#place(stop))) {
        if (batch !== EMPTY) this.#unsent.push(batch);
        return;
      }
      // A pause (Retry-After) set since the gate let it through (while it waited for its place, or
      // just now): wait it out first.
      if (this.#pausedUntil > performance.now()) {
        this.#leave();
        continue;
      }
      const started = performance.now();
      let result: Awaited<ReturnType<Sink['send']>>;
      try {
        result = await sink.send(batch, stop);
      } finally {
        this.#leave();
      }
      if (result.status === 'retryable' && stop.aborted) {
        // Cut short by a detach (a reload) or the stop's deadline, not failed: back to the queue
        // for the next sink or the next start, and no attempt counted (max_retries would drop it).
        if (batch !== EMPTY) this.#unsent.push(batch);
        return;
      }
      const rttMs = performance.now() - started;
      t.sendSeconds(rttMs / 1000);
      this.#adapt(rttMs, result.status === 'sent', result.status === 'retryable' && (result.pauseAll === true || result.unknownOutcome === true));
      if (result.status === 'sent') {
        this.#suspension(false);
        if (batch.events.length > 0) {
          t.batchEvents(batch.events.length);
          this.#sent();
        }
        if (this.#keyRejected) {
          t.log.logger.info('The intake accepts the key again.');
          this.#keyRejected = false;
          this.#state = 'connected';
          t.keyRejected(false);
        }
        if (batch !== EMPTY) queue.release(batch);
        return;
      }
      t.error(result.error.code);
      if (result.status === 'permanent') {
        if (result.bisect && batch.events.length > 1) {
          // Split to isolate the events refused; the halves keep their place in this slot. The
          // queue's in-flight count is released half by half, which adds up to the whole.
          const mid = Math.ceil(batch.events.length / 2);
          const [a, b] = [sub(batch, 0, mid), sub(batch, mid, batch.events.length)];
          await this.#deliver(a);
          await this.#deliver(b);
          return;
        }
        this.#drop(batch, result.reason, result.error);
        return;
      }
      // Retryable.
      attempt++;
      this.#failures++;
      this.#suspension(true);
      if (result.keyRejected) {
        if (!this.#keyRejected) {
          t.log.logger.error({ err: result.error }, 'The intake refuses the key of this intake: events are kept and retried slowly. Check the key.');
        }
        this.#keyRejected = true;
        t.keyRejected(true);
        this.#lastError = result.error;
      } else {
        this.#state = 'retrying';
        this.#logError(result.error, 'Delivery failed; retrying with backoff.');
      }
      t.connected(false);
      const max = this.#o.maxRetries;
      if (max !== undefined && attempt > max) {
        this.#drop(batch, 'retries_exhausted', result.error);
        return;
      }
      if (result.unknownOutcome && batch.events.length > 0) t.resent(batch.events.length);
      t.retried();
      // What the intake asked, but never less than the first backoff step: a Retry-After of 0 (or a
      // date past) would otherwise retry at once, again and again.
      const delay = result.retryAfterMs !== undefined ? Math.max(result.retryAfterMs, this.#o.backoff.initialMs) : backoffDelay(this.#failures, this.#o.backoff);
      if (result.pauseAll) this.#pausedUntil = Math.max(this.#pausedUntil, performance.now() + delay);
      else await sleep(delay, stop);
    }
  }

  #drop(batch: Batch, reason: DropReason, error: RelayError): void {
    const { queue } = this.#o;
    this.#t.dropped(reason, batch.events.length);
    queue.settle(batch.seq, batch.events.length);
    this.#logError(error, 'Events dropped: the intake refused them.', { reason, events: batch.events.length });
    if (batch !== EMPTY) queue.release(batch);
  }

  /** A failed attempt (`failing`) or a delivery: counts the output's suspensions and their time, as rsyslog counts an action's. */
  #suspension(failing: boolean): void {
    const now = performance.now();
    if (!this.#suspended) {
      if (!failing) return;
      this.#suspended = true;
      this.#suspensionCountedTo = now;
      this.#t.suspended();
      return;
    }
    this.#t.suspendedFor((now - this.#suspensionCountedTo) / 1000);
    this.#suspensionCountedTo = now;
    if (failing) return;
    this.#suspended = false;
    this.#t.resumed();
  }

  /** Takes a place within the limit for one attempt; false if the runner stops first. */
  async #place(stop: AbortSignal): Promise<boolean> {
    while (this.#sending >= this.#limit) {
      if (stop.aborted) return false;
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          stop.removeEventListener('abort', wake);
          resolve();
        };
        this.#placeWaiters.push(wake);
        stop.addEventListener('abort', wake, { once: true });
      });
    }
    if (stop.aborted) return false;
    this.#sending++;
    this.#t.inFlight(this.#sending);
    return true;
  }

  /** An attempt ended: its place goes to the next waiting (each waiter checks the limit again). */
  #leave(): void {
    this.#sending--;
    this.#t.inFlight(this.#sending);
    this.#placeWaiters.shift()?.();
  }

  #adapt(rttMs: number, ok: boolean, overloaded: boolean): void {
    if (!this.#adaptive) return;
    // Itself included: it has just left its place.
    const limit = this.#adaptive.record({ rttMs, ok, overloaded, inFlight: this.#sending + 1 });
    if (limit !== this.#limit) {
      const grew = limit > this.#limit;
      this.#limit = limit;
      this.#t.concurrency(limit);
      // More places: as many waiters go on, and the loop takes another batch if it waits for a slot.
      if (grew) {
        for (let i = this.#sending; i < limit; i++) this.#placeWaiters.shift()?.();
        this.#wakeLoop();
      }
    }
  }

  /**
   * Drain: the queue must already be closed. Delivers what is queued (and what a lost connection
   * left unacknowledged) until `deadline` aborts, then stops the sink, which waits for the intake
   * to confirm what it holds; a connection lost meanwhile is opened again, after the usual backoff,
   * and what it held written again (empty sends), until the sink's stop ends (all confirmed, or the
   * deadline). Returns the number of events that could not be delivered.
   */
  async stop(deadline: AbortSignal): Promise<number> {
    this.#endLull();
    const onAbort = (): void => this.#abort.abort();
    deadline.addEventListener('abort', onAbort, { once: true });
    if (deadline.aborted) this.#abort.abort();
    await this.#loop;
    const stopping = this.#o.sink.stop(deadline);
    const rewriting = this.#rewrite();
    let unconfirmed: number;
    try {
      unconfirmed = await stopping;
    } finally {
      this.#abort.abort();
      await rewriting;
      deadline.removeEventListener('abort', onAbort);
    }
    this.#state = 'stopped';
    this.#t.connected(false);
    return this.#o.queue.pendingEvents + unconfirmed;
  }

  /**
   * While the sink stops (the queue is empty): what a connection lost meanwhile held is written
   * again on a new one (an empty send, after the backoff the loss set), until the stop ends.
   */
  async #rewrite(): Promise<void> {
    const stop = this.#abort.signal;
    while (!stop.aborted) {
      if (this.#needFlush) {
        this.#needFlush = false;
        await this.#deliver(EMPTY);
        continue;
      }
      if (this.#kick.signal.aborted) this.#kick = new AbortController();
      await aborted(AbortSignal.any([stop, this.#kick.signal]));
    }
  }

  /**
   * For a reload that replaces the output: stops taking batches at once; sends in flight end
   * (their batches go back to the queue unless written), and the queue stays open for the next
   * runner. The sink is left to the caller (handed over, or stopped).
   */
  async detach(): Promise<void> {
    this.#endLull();
    this.#detached = true;
    this.#abort.abort();
    await this.#loop;
    this.#state = 'stopped';
  }

  get sink(): Sink {
    return this.#o.sink;
  }
}

/** Resolves once `signal` aborts. */
function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

function sub(batch: Batch, from: number, to: number): Batch {
  const events = batch.events.slice(from, to);
  let bytes = 0;
  for (const e of events) bytes += e.end - e.start;
  return { events, bytes, seq: batch.seq + from };
}
