// The one place that owns delivery for an intake: takes batches from the queue, makes one attempt
// per send through the sink, retries with capped backoff (forever: a failed connection never
// drops a batch), keeps an idle sink's unacknowledged writes moving, and keeps the metrics.

import type { Logger } from 'pino';
import type { Batch } from './event.ts';
import { backoffDelay, sleep, type BackoffOptions } from './backoff.ts';
import type { BatchLimits, BoundedQueue } from './queue.ts';
import type { RelayError } from './errors.ts';
import type { Sink } from '../sinks/sink.ts';
import { RateLimiter } from '../telemetry/log.ts';
import type { Metrics } from '../telemetry/metrics.ts';

export interface RunnerOptions {
  readonly intake: string;
  readonly queue: BoundedQueue;
  readonly sink: Sink;
  readonly batch: BatchLimits;
  readonly backoff: BackoffOptions;
  readonly metrics: Metrics;
  readonly log: Logger;
}

export type OutputState = 'starting' | 'connected' | 'retrying' | 'stopped';

const EMPTY: Batch = { events: [], bytes: 0 };

export class SinkRunner {
  readonly #o: RunnerOptions;
  readonly #abort = new AbortController();
  readonly #limiter = new RateLimiter(10_000);
  #loop: Promise<void> | undefined;
  /** Aborted to wake the loop from waiting on the queue: a lost connection has writes to redo. */
  #kick = new AbortController();
  #needFlush = false;
  #failures = 0;
  #state: OutputState = 'starting';
  #lastError: RelayError | undefined;
  #lastAckAt = 0;
  readonly #m;

  constructor(options: RunnerOptions) {
    this.#o = options;
    const { metrics: m, intake, sink } = options;
    const labels = { intake, output: sink.type };
    this.#m = {
      sent: m.eventsSent.labels(labels),
      bytes: m.bytesSent.labels(labels),
      resent: m.eventsResent.labels(labels),
      connected: m.outputConnected.labels(labels),
      connects: m.outputReconnects.labels(labels),
      lastDelivery: m.lastDelivery.labels(labels),
      duration: m.sendDuration.labels(labels),
      batchEvents: m.batchEvents.labels(labels),
    };
    this.#m.connected.set(0);
  }

  get state(): OutputState {
    return this.#state;
  }
  get lastError(): RelayError | undefined {
    return this.#lastError;
  }
  /** Time of the last acknowledged delivery (ms), 0 if none yet. */
  get lastAckAt(): number {
    return this.#lastAckAt;
  }

  async start(): Promise<void> {
    const { sink, log, intake } = this.#o;
    await sink.start({
      acknowledged: (n) => {
        this.#m.sent.inc(n);
        this.#lastAckAt = Date.now();
        this.#m.lastDelivery.set(this.#lastAckAt / 1000);
      },
      connectionLost: (error, events) => {
        this.#m.connected.set(0);
        this.#state = 'retrying';
        if (events > 0) this.#m.resent.inc(events);
        this.#logError(error, 'Output connection lost; unacknowledged events will be written again.');
        this.#needFlush = true;
        this.#kick.abort();
      },
      connected: () => {
        this.#m.connected.set(1);
        this.#m.connects.inc();
        if (this.#state !== 'connected') log.info({ intake, output: sink.type }, 'Output connected.');
        this.#state = 'connected';
      },
      wrote: (bytes) => this.#m.bytes.inc(bytes),
    });
    this.#loop = this.#run();
  }

  #logError(error: RelayError, msg: string): void {
    this.#lastError = error;
    const suppressed = this.#limiter.allow(error.code);
    if (suppressed === undefined) return;
    this.#o.log.error({ intake: this.#o.intake, output: this.#o.sink.type, code: error.code, err: error.message, suppressed }, msg);
  }

  async #run(): Promise<void> {
    const { queue, sink, batch: limits, metrics, intake } = this.#o;
    const stop = this.#abort.signal;
    let batch: Batch | undefined;
    for (;;) {
      if (!batch) {
        if (this.#needFlush) {
          batch = EMPTY;
        } else {
          if (this.#kick.signal.aborted) this.#kick = new AbortController();
          batch = await queue.take(limits, AbortSignal.any([stop, this.#kick.signal]));
          if (!batch) {
            if (stop.aborted || !this.#needFlush) break; // stopped, or closed and empty
            continue;
          }
        }
      }
      this.#needFlush = false;
      const started = performance.now();
      const result = await sink.send(batch, stop);
      this.#m.duration.observe((performance.now() - started) / 1000);
      if (result.status === 'sent') {
        if (batch.events.length > 0) this.#m.batchEvents.observe(batch.events.length);
        this.#failures = 0;
        if (batch !== EMPTY) queue.release(batch);
        batch = undefined;
        continue;
      }
      metrics.outputErrors.inc({ intake, output: sink.type, code: result.error.code });
      if (result.status === 'permanent') {
        metrics.eventsDropped.inc({ intake, stage: 'output', reason: 'rejected' }, batch.events.length);
        this.#logError(result.error, 'Intake rejected a batch; its events are dropped.');
        if (batch !== EMPTY) queue.release(batch);
        batch = undefined;
        continue;
      }
      // Retryable: keep this batch and try it again after a pause; a stop ends the wait.
      this.#failures++;
      this.#state = 'retrying';
      this.#m.connected.set(0);
      this.#logError(result.error, 'Delivery failed; retrying with backoff.');
      await sleep(result.retryAfterMs ?? backoffDelay(this.#failures, this.#o.backoff), stop);
      if (stop.aborted) {
        if (batch !== EMPTY) queue.requeue([batch]);
        break;
      }
    }
  }

  /**
   * Drain: the queue must already be closed. Delivers what is queued (and what a lost connection
   * left unacknowledged) until `deadline` aborts, then closes the sink. Returns the number of
   * events that could not be delivered.
   */
  async stop(deadline: AbortSignal): Promise<number> {
    const onAbort = (): void => this.#abort.abort();
    deadline.addEventListener('abort', onAbort, { once: true });
    if (deadline.aborted) this.#abort.abort();
    await this.#loop;
    deadline.removeEventListener('abort', onAbort);
    const unconfirmed = await this.#o.sink.stop(deadline);
    this.#state = 'stopped';
    this.#m.connected.set(0);
    return this.#o.queue.events + unconfirmed;
  }
}
