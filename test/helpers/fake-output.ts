// A scripted Sink and a recording OutputTelemetry, for unit tests of the SinkRunner: the sink
// answers each send() as the test's script says and lets the test act as the intake (acknowledge,
// lose the connection); the telemetry keeps every call, in order, and every log line.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Batch, LogEvent } from '../../src/core/event.ts';
import type { Concurrency, DropReason, SendResult, Sink, SinkEvents } from '../../src/core/contracts.ts';
import type { ComponentLog, OutputTelemetry } from '../../src/core/telemetry.ts';
import { RelayError, type RelayErrorCode } from '../../src/core/errors.ts';

/** An event of `size` bytes, told apart by its hostname. */
export function event(name: string, size = 10): LogEvent {
  return {
    buf: Buffer.alloc(size), start: 0, end: size, sdStart: 0, sdEnd: 0, msgStart: 0, tsStart: 0, tsEnd: 0,
    receivedAt: 0, sender: '', pri: 13, format: 0, hostname: name, appName: '', procId: '', msgId: '',
  };
}

/** Events e0 … e(n-1). */
export function events(n: number): LogEvent[] {
  return Array.from({ length: n }, (_, i) => event(`e${i}`));
}

export interface SendCall {
  /** 0-based number of this send. */
  readonly n: number;
  readonly batch: Batch;
  /** The hostnames of the batch's events. */
  readonly names: readonly string[];
  /** Date.now() when the send started (fake time in the runner's tests). */
  readonly at: number;
  readonly signal: AbortSignal;
}

/** How the sink answers a send; it may act as the intake first (sink.ack). */
export type Script = (call: SendCall, sink: FakeSink) => SendResult | Promise<SendResult>;

export const SENT: SendResult = { status: 'sent' };

/** A retryable failure, with the result's options (pauseAll, retryAfterMs, …). */
export function retryable(options: Omit<Extract<SendResult, { status: 'retryable' }>, 'status' | 'error'> = {}, code: RelayErrorCode = 'ERELAY_NETWORK'): SendResult {
  return { status: 'retryable', error: new RelayError(code, `Scripted failure (${code}).`), ...options };
}

export function permanent(reason: DropReason, bisect: boolean): SendResult {
  return { status: 'permanent', reason, bisect, error: new RelayError('ERELAY_HTTP_STATUS', 'Scripted refusal.') };
}

/** Acknowledged as it is sent, as the HTTP output does on a 2xx. */
export const acked = (call: SendCall, sink: FakeSink): SendResult => {
  sink.ack(call.batch);
  return SENT;
};

export class FakeSink implements Sink {
  readonly type = 'fake';
  readonly concurrency: Concurrency;
  readonly calls: SendCall[] = [];
  /** The deadline of each stop(). */
  readonly stops: AbortSignal[] = [];
  unacknowledged = 0;
  /** What stop() reports as not confirmed. */
  unconfirmedAtStop = 0;
  /** The most sends in flight at once. */
  maxInFlight = 0;
  /** Lulls the runner reported (trim()). */
  trims = 0;
  #inFlight = 0;
  #events: SinkEvents | undefined;
  readonly #script: Script;

  constructor(script: Script, concurrency: Concurrency = { fixed: 1 }) {
    this.#script = script;
    this.concurrency = concurrency;
  }

  /** What the runner gave start(): the test calls these as the intake's side would. */
  get events(): SinkEvents {
    if (!this.#events) throw new Error('the sink was not started');
    return this.#events;
  }

  async start(events: SinkEvents): Promise<void> {
    this.#events = events;
  }

  trim(): void {
    this.trims++;
  }

  async send(batch: Batch, signal: AbortSignal): Promise<SendResult> {
    const call: SendCall = { n: this.calls.length, batch, names: batch.events.map((e) => e.hostname), at: Date.now(), signal };
    this.calls.push(call);
    this.maxInFlight = Math.max(this.maxInFlight, ++this.#inFlight);
    try {
      return await this.#script(call, this);
    } finally {
      this.#inFlight--;
    }
  }

  /** The intake confirms the whole batch. */
  ack(batch: Batch): void {
    this.events.acknowledged(batch.seq, batch.events.length);
  }

  async stop(deadline: AbortSignal): Promise<number> {
    this.stops.push(deadline);
    return this.unconfirmedAtStop;
  }
}

type Method = Exclude<keyof OutputTelemetry, 'log'>;

export class FakeTelemetry implements OutputTelemetry {
  /** Every call, in order: [method, ...arguments]. */
  readonly calls: [Method, ...unknown[]][] = [];
  /** Every log line as pino wrote it: the child logger's and the rate-limited ones (all kept here). */
  readonly lines: Record<string, unknown>[] = [];
  readonly log: ComponentLog;

  // Each method records its call: the runner's reports, in order, are what the tests read.
  readonly acknowledged = this.#recorder('acknowledged');
  readonly wrote = this.#recorder('wrote');
  readonly resent = this.#recorder('resent');
  readonly error = this.#recorder('error');
  readonly retried = this.#recorder('retried');
  readonly dropped = this.#recorder('dropped');
  readonly cut = this.#recorder('cut');
  readonly connected = this.#recorder('connected');
  readonly reconnected = this.#recorder('reconnected');
  readonly keyRejected = this.#recorder('keyRejected');
  readonly sendSeconds = this.#recorder('sendSeconds');
  readonly batchEvents = this.#recorder('batchEvents');
  readonly concurrency = this.#recorder('concurrency');
  readonly inFlight = this.#recorder('inFlight');
  readonly suspended = this.#recorder('suspended');
  readonly resumed = this.#recorder('resumed');
  readonly suspendedFor = this.#recorder('suspendedFor');

  constructor() {
    const lines = this.lines;
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        cb();
      },
    });
    const logger = pino({ level: 'debug' }, sink);
    this.log = {
      logger,
      info: (key, fields, msg) => logger.info({ key, ...fields }, msg),
      warn: (key, fields, msg) => logger.warn({ key, ...fields }, msg),
      error: (key, err, fields, msg) => logger.error({ key, err, ...fields }, msg),
    };
  }

  /** The arguments of each call to `method`, in order. */
  args(method: Method): unknown[][] {
    return this.calls.filter((c) => c[0] === method).map((c) => c.slice(1));
  }

  /** The last argument given to `method` (a gauge's value now). */
  last(method: Method): unknown {
    return this.args(method).at(-1)?.[0];
  }

  /** The log lines whose message starts with `text`. */
  logged(text: string): Record<string, unknown>[] {
    return this.lines.filter((l) => String(l.msg).startsWith(text));
  }

  #recorder(method: Method): (...args: unknown[]) => void {
    return (...args) => {
      this.calls.push([method, ...args]);
    };
  }
}
