// The one place that owns delivery for an intake: takes batches from the queue, makes one attempt
// per send through the sink, retries with capped backoff (forever: a failed connection never
// drops a batch), puts unacknowledged writes back in front of the queue, and keeps the metrics.

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

export class SinkRunner {
  readonly #o: RunnerOptions;
  readonly #abort = new AbortController();
  readonly #limiter = new RateLimiter(10_000);
  #loop: Promise<void> | undefined;
  #sending = false;
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
      acknowledged: (batch) => this.#acknowledged(batch),
      connectionLost: (error) => {
        this.#m.connected.set(0);
        this.#state = 'retrying';
        this.#logError(error, 'Output connection lost; unacknowledged events will be written again.');
        if (!this.#sending) this.#reclaim([]);
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

  #acknowledged(batch: Batch): void {
    this.#m.sent.inc(batch.events.length);
    this.#lastAckAt = Date.now();
    this.#m.lastDelivery.set(this.#lastAckAt / 1000);
  }

  /** Requeue what the sink could not confirm, oldest first, followed by `pending`. */
  #reclaim(pending: Batch[]): void {
    const lost = this.#o.sink.reclaim();
    let n = 0;
    for (const b of lost) n += b.events.length;
    if (n > 0) this.#m.resent.inc(n);
    this.#o.queue.requeue(lost.concat(pending));
  }

  #logError(error: RelayError, msg: string): void {
    this.#lastError = error;
    const suppressed = this.#limiter.allow(error.code);
    if (suppressed === undefined) return;
    this.#o.log.error({ intake: this.#o.intake, output: this.#o.sink.type, code: error.code, err: error.message, suppressed }, msg);
  }

  async #run(): Promise<void> {
    const { queue, sink, batch: limits, metrics, intake } = this.#o;
    const signal = this.#abort.signal;
    for (;;) {
      const batch = await queue.take(limits, signal);
      if (!batch) break;
      this.#sending = true;
      const started = performance.now();
      const result = await sink.send(batch, signal);
      this.#sending = false;
      this.#m.duration.observe((performance.now() - started) / 1000);
      if (result.status === 'sent') {
        this.#m.batchEvents.observe(batch.events.length);
        this.#failures = 0;
        // A connection that died during this write left batches to reclaim.
        this.#reclaim([]);
        continue;
      }
      metrics.outputErrors.inc({ intake, output: sink.type, code: result.error.code });
      if (result.status === 'permanent') {
        metrics.eventsDropped.inc({ intake, stage: 'output', reason: 'rejected' }, batch.events.length);
        this.#logError(result.error, 'Intake rejected a batch; its events are dropped.');
        continue;
      }
      this.#failures++;
      this.#state = 'retrying';
      this.#m.connected.set(0);
      this.#logError(result.error, 'Delivery failed; retrying with backoff.');
      this.#reclaim([batch]);
      if (signal.aborted) break;
      await sleep(result.retryAfterMs ?? backoffDelay(this.#failures, this.#o.backoff), signal);
    }
  }

  /**
   * Drain: the queue must already be closed. Delivers what is queued until `deadline` aborts,
   * then closes the sink. Returns the number of events that could not be delivered.
   */
  async stop(deadline: AbortSignal): Promise<number> {
    const onAbort = (): void => this.#abort.abort();
    deadline.addEventListener('abort', onAbort, { once: true });
    if (deadline.aborted) this.#abort.abort();
    await this.#loop;
    // A connection lost while draining puts its unacknowledged batches back: drain them too.
    while (!this.#abort.signal.aborted && this.#o.queue.events > 0) {
      this.#loop = this.#run();
      await this.#loop;
    }
    deadline.removeEventListener('abort', onAbort);
    const unconfirmed = await this.#o.sink.stop(deadline);
    this.#state = 'stopped';
    this.#m.connected.set(0);
    let lost = this.#o.queue.events;
    for (const b of unconfirmed) lost += b.events.length;
    return lost;
  }
}
