// Bounded in-memory batching queue, one per intake. Inputs offer whole chunks of events; the runner
// takes batches bounded by count and bytes after a linger time. Every refusal is reported to the
// caller, which counts it: nothing leaves this queue silently.

import type { Batch, LogEvent } from './event.ts';
import { wakeSettled, type AdmitResult, type BatchLimits, type EventQueue, type OfferMode, type Offered, type QueueLimits, type SettledWaiter } from './event-queue.ts';
import { SettledTracker } from './settled.ts';

const RESUME_FRACTION = 0.9;
/**
 * Readers that can wait (TCP, RELP, files) are paused well before the limits while the output is
 * taking batches: a queue of a couple of batches keeps it busy, and a deeper one only holds memory
 * (each queued event keeps its read alive, and events that wait through two scavenges are promoted
 * to the old generation, where only a full collection frees them and their reads). The mark
 * counts events waiting to be taken, not batches in flight (an HTTP output keeps many requests
 * open). The depth above it is for outages: once the output has released nothing for DRAINING_MS,
 * readers fill the queue to its limits. A reader held by it goes on below half the mark, or once
 * what was pending when it paused has been released down to half the mark, so readers that cannot
 * wait (UDP, HTTP) keeping the queue above the mark do not starve it.
 * A tenth of the limits and 4 batches until this mark: with the defaults, 10,000 events waited,
 * about as many as V8's young generation holds between two scavenges with 4 MiB semi-spaces, so
 * most were promoted. At 2% and 2 batches (2,000 events), the launchers' 4 MiB semi-spaces (8 MiB
 * before) measured 10-21 MiB less peak anonymous memory on every path, at the same CPU per event on
 * TCP and UDP, 6% more on file and 20% more on HTTPS (docs/performance.md).
 */
const SOFT_FRACTION = 0.02;
const SOFT_BATCHES = 2;
const SOFT_RESUME_FRACTION = 0.5;
const DRAINING_MS = 2_000;

export class BoundedQueue implements EventQueue {
  readonly durable = false;
  #limits: QueueLimits;
  // A FIFO of chunks; `#head` indexes the first unread event of the first chunk. `#seqs[i]` is the
  // sequence number of the first event of `#chunks[i]`.
  #chunks: LogEvent[][] = [];
  #seqs: number[] = [];
  #head = 0;
  /** Number the next event taken in gets. */
  #nextSeq = 0;
  readonly #settled = new SettledTracker();
  #settledWaiters: SettledWaiter[] = [];
  #events = 0;
  #bytes = 0;
  // Taken by the runner and not yet accepted by the sink: still counted against the limits.
  #inFlightEvents = 0;
  #inFlightBytes = 0;
  #closed = false;
  // Drain rate (events released per second), measured over windows of at least a second.
  #drainRate = 0;
  #drainedSinceMark = 0;
  #markAt = performance.now();
  #dataWaiter: (() => void) | undefined;
  /** What wakes the waiting taker: this many events or bytes queued (a batch while it lingers). */
  #wakeEvents = 1;
  #wakeBytes = 1;
  #writableWaiters: (() => void)[] = [];
  /** When the output last released a batch (performance.now(): monotonic), -1 before the first. */
  #releasedAt = -1;
  /** Events and bytes released so far, and the counts at which readers held by the soft mark go on. */
  #released = 0;
  #releasedBytes = 0;
  #softWakeAt = 0;
  #softWakeAtBytes = 0;
  /** The soft mark (see SOFT_FRACTION), from the limits and the batches the runner takes. */
  #softEvents = 0;
  #softBytes = 0;
  #batch: BatchLimits | undefined;
  #softTimer: NodeJS.Timeout | undefined;

  constructor(limits: QueueLimits) {
    this.#limits = limits;
    this.#setSoft();
  }

  /** New limits (a reload): queued events stay; waiting writers resume if there is room now. */
  setLimits(limits: QueueLimits): void {
    this.#limits = limits;
    this.#setSoft();
    this.#maybeWakeWriters();
  }

  /** Events waiting to be taken. */
  get events(): number {
    return this.#events;
  }
  get bytes(): number {
    return this.#bytes;
  }
  /** Events waiting for delivery: waiting to be taken, or taken and not yet released. */
  get pendingEvents(): number {
    return this.#events + this.#inFlightEvents;
  }
  get pendingBytes(): number {
    return this.#bytes + this.#inFlightBytes;
  }
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * The number the next event taken in will get: every event offered so far is numbered below it.
   * An input that records this after an offer knows its events are settled once `settledBelow`
   * reaches it.
   */
  get nextSeq(): number {
    return this.#nextSeq;
  }
  /** Every event numbered below this has been delivered or dropped with a counted reason. */
  get settledBelow(): number {
    return this.#settled.watermark;
  }
  get safeBelow(): number {
    return this.#settled.watermark;
  }
  get full(): boolean {
    return this.#full();
  }
  /** Events [seq, seq + count) were acknowledged by the output or dropped (counted). */
  settle(seq: number, count: number): void {
    this.#settled.settle(seq, count);
    if (this.#settledWaiters.length > 0) this.#settledWaiters = wakeSettled(this.#settledWaiters, this.#settled.watermark);
  }

  untilSettled(seq: number): Promise<void> {
    if (this.#settled.watermark >= seq) return Promise.resolve();
    return new Promise((resolve) => this.#settledWaiters.push({ seq, resolve }));
  }

  /** In memory, safe means settled (delivered, or dropped with a counted reason). */
  untilSafe(seq: number): Promise<void> {
    return this.untilSettled(seq);
  }

  #full(): boolean {
    return this.pendingEvents >= this.#limits.maxEvents || this.pendingBytes >= this.#limits.maxBytes;
  }

  #setSoft(): void {
    const l = this.#limits;
    const b = this.#batch;
    this.#softEvents = Math.min(l.maxEvents, Math.max(Math.ceil(l.maxEvents * SOFT_FRACTION), b ? SOFT_BATCHES * b.maxEvents : 0));
    this.#softBytes = Math.min(l.maxBytes, Math.max(Math.ceil(l.maxBytes * SOFT_FRACTION), b ? SOFT_BATCHES * b.maxBytes : 0));
  }

  /** The output released a batch within DRAINING_MS: it is taking what is queued. */
  #draining(now: number): boolean {
    return this.#releasedAt >= 0 && now - this.#releasedAt < DRAINING_MS;
  }

  /** A reader that can wait should: the queue is full, or above its soft mark while the output drains it. */
  #shouldWait(now: number): boolean {
    if (this.#full()) return true;
    return (this.#events >= this.#softEvents || this.#bytes >= this.#softBytes) && this.#draining(now);
  }

  /**
   * Offer a chunk of events. A reader that waits (`wait`, or `pause` under block) always has its
   * chunk taken: the overshoot is bounded by one read per connection, and it must pause until
   * `writable()` resolves when told `slow_down`. The others get what does not fit refused.
   */
  offer(events: LogEvent[], bytes: number, mode: OfferMode): Offered {
    if (this.#closed) return { result: 'dropped', dropped: events.length, droppedBytes: bytes };
    if (this.#full()) this.#timesFull++;
    if (mode === 'wait' || (mode === 'pause' && this.#limits.whenFull === 'block')) {
      this.#push(events, bytes);
      return { result: this.#shouldWait(performance.now()) ? 'slow_down' : 'ok', dropped: 0, droppedBytes: 0 };
    }
    // Take what fits, refuse the rest (drop_newest, or a caller that cannot wait). Refused events
    // get no number: they are settled (counted as dropped) by the caller.
    let n = 0;
    let taken = 0;
    const held = this.pendingEvents;
    const heldBytes = this.pendingBytes;
    while (n < events.length) {
      const e = events[n] as LogEvent;
      const size = e.end - e.start;
      if (held + n >= this.#limits.maxEvents || heldBytes + taken + size > this.#limits.maxBytes) break;
      taken += size;
      n++;
    }
    if (n === events.length) {
      this.#push(events, bytes);
      return { result: 'ok', dropped: 0, droppedBytes: 0 };
    }
    if (n > 0) this.#push(events.slice(0, n), taken);
    return { result: 'dropped', dropped: events.length - n, droppedBytes: bytes - taken };
  }

  /** The sink accepted (or the runner dropped) a batch taken with take(): its room is free again. */
  release(batch: Batch): void {
    this.#inFlightEvents -= batch.events.length;
    this.#inFlightBytes -= batch.bytes;
    this.#drainedSinceMark += batch.events.length;
    if (batch.events.length > 0) this.#releasedAt = performance.now();
    this.#released += batch.events.length;
    this.#releasedBytes += batch.bytes;
    this.#measureDrain(performance.now());
    this.#maybeWakeWriters();
  }

  #measureDrain(now: number): void {
    const dt = now - this.#markAt;
    if (dt < 1000) return;
    const rate = (this.#drainedSinceMark * 1000) / dt;
    this.#drainRate = this.#drainRate === 0 ? rate : this.#drainRate * 0.5 + rate * 0.5;
    this.#drainedSinceMark = 0;
    this.#markAt = now;
  }

  #highWater = 0;
  #timesFull = 0;
  get highWater(): number {
    return this.#highWater;
  }
  get timesFull(): number {
    return this.#timesFull;
  }

  /** Age (ms) of the oldest event waiting to be taken (a batch being sent is not counted); 0 when none. */
  oldestAgeMs(now = Date.now()): number {
    const e = this.#chunks[0]?.[this.#head];
    return e ? Math.max(0, now - e.receivedAt) : 0;
  }

  /** Events released per second lately (0 when nothing drains). */
  drainRate(now = performance.now()): number {
    this.#measureDrain(now);
    return now - this.#markAt > 5000 ? 0 : this.#drainRate;
  }

  /**
   * All of `events` or none (for inputs that can answer "come back later", like HTTP): refused when
   * the queue is at or above its limits, taken whole otherwise (overshoot bounded by one request).
   */
  admit(events: LogEvent[], bytes: number): AdmitResult {
    if (this.#closed) return 'closed';
    if (this.#full()) {
      this.#timesFull++;
      return 'full';
    }
    this.#push(events, bytes);
    return 'ok';
  }

  /** Seconds until the queue is likely to have room again, from its drain rate (1 to 60). */
  retryAfterSeconds(): number {
    const excess = this.pendingEvents - this.#limits.maxEvents * RESUME_FRACTION;
    const rate = this.drainRate();
    if (rate <= 0) return 10;
    return Math.min(60, Math.max(1, Math.ceil(excess / rate)));
  }

  /** Put batches taken with take() back at the front, oldest first (shutdown). */
  requeue(batches: readonly Batch[]): void {
    const chunks: LogEvent[][] = [];
    const seqs: number[] = [];
    let events = 0;
    let bytes = 0;
    for (const b of batches) {
      if (b.events.length === 0) continue;
      chunks.push(b.events.slice());
      seqs.push(b.seq);
      events += b.events.length;
      bytes += b.bytes;
    }
    this.#inFlightEvents -= events;
    this.#inFlightBytes -= bytes;
    if (chunks.length === 0) return;
    const first = this.#chunks[0];
    if (first && this.#head > 0) {
      this.#chunks[0] = first.slice(this.#head);
      this.#seqs[0] = (this.#seqs[0] as number) + this.#head;
      this.#head = 0;
    }
    this.#chunks = chunks.concat(this.#chunks);
    this.#seqs = seqs.concat(this.#seqs);
    this.#events += events;
    this.#bytes += bytes;
    this.#wakeTaker();
  }

  /**
   * Appends events already numbered from `seq` (the disk queue's memory stage: numbers come from
   * its log), regardless of the limits: the caller keeps within them.
   */
  pushNumbered(events: LogEvent[], bytes: number, seq: number): void {
    this.#nextSeq = seq;
    this.#push(events, bytes);
  }

  #push(events: LogEvent[], bytes: number): void {
    if (events.length === 0) return;
    this.#chunks.push(events);
    this.#seqs.push(this.#nextSeq);
    this.#nextSeq += events.length;
    this.#events += events.length;
    this.#bytes += bytes;
    const pending = this.#events + this.#inFlightEvents;
    if (pending > this.#highWater) this.#highWater = pending;
    if (this.#events >= this.#wakeEvents || this.#bytes >= this.#wakeBytes) this.#wakeTaker();
  }

  #wakeTaker(): void {
    const w = this.#dataWaiter;
    this.#dataWaiter = undefined;
    w?.();
  }

  /**
   * Resolves once a reader told to slow down may go on. While the output drains: below 90% of both
   * limits, and below half the soft mark or once what was pending when the first reader paused has
   * been released down to half the mark (readers that cannot wait may have added more since).
   * Otherwise (an outage): as soon as the queue is not full. And when the queue is closed.
   * Not after a mark's worth released: each paused connection adds a read when it goes on (about
   * 350 lines of 200 bytes), and four of them added more per round than a mark of 400 released,
   * which took the queue to its limit (test/integration/queue-depth.test.ts).
   */
  writable(): Promise<void> {
    const now = performance.now();
    if (this.#closed || !this.#shouldWait(now)) return Promise.resolve();
    if (this.#writableWaiters.length === 0) {
      // In events and in bytes: large events reach the mark in bytes first.
      this.#softWakeAt = this.#released + Math.max(0, this.pendingEvents - Math.floor(this.#softEvents * SOFT_RESUME_FRACTION));
      this.#softWakeAtBytes = this.#releasedBytes + Math.max(0, this.pendingBytes - Math.floor(this.#softBytes * SOFT_RESUME_FRACTION));
    }
    const p = new Promise<void>((resolve) => this.#writableWaiters.push(resolve));
    this.#armSoftTimer(now);
    return p;
  }

  #maybeWakeWriters(): void {
    if (this.#writableWaiters.length === 0) return;
    const l = this.#limits;
    const events = this.pendingEvents;
    const bytes = this.pendingBytes;
    const belowLimits = events < l.maxEvents * RESUME_FRACTION && bytes < l.maxBytes * RESUME_FRACTION;
    const belowSoft =
      (this.#events < this.#softEvents * SOFT_RESUME_FRACTION && this.#bytes < this.#softBytes * SOFT_RESUME_FRACTION) ||
      (this.#released >= this.#softWakeAt && this.#releasedBytes >= this.#softWakeAtBytes);
    const now = performance.now();
    // Draining: below 90% of the limits and clear of the soft mark. Not draining (an outage, or
    // nothing taken yet): whenever there is room, since no release will come to wake them.
    const draining = this.#draining(now);
    if (this.#closed || (draining ? belowLimits && belowSoft : !this.#full())) {
      const ws = this.#writableWaiters;
      this.#writableWaiters = [];
      if (this.#softTimer) clearTimeout(this.#softTimer);
      this.#softTimer = undefined;
      for (const w of ws) w();
    } else if (draining) {
      this.#armSoftTimer(now);
    }
  }

  /** Readers held by the soft mark go on once the output has released nothing for DRAINING_MS. */
  #armSoftTimer(now: number): void {
    if (this.#softTimer) return;
    const wait = this.#releasedAt + DRAINING_MS - now;
    this.#softTimer = setTimeout(() => {
      this.#softTimer = undefined;
      this.#maybeWakeWriters();
    }, Math.max(1, Math.ceil(wait)));
    this.#softTimer.unref();
  }

  /**
   * Wait for a batch: returns as soon as `maxEvents` or `maxBytes` are queued, or `lingerMs` after
   * data first showed, or at once when `flush` is set (draining). Returns undefined when the queue
   * is closed and empty, or `signal` aborted.
   */
  async take(limits: BatchLimits, signal: AbortSignal): Promise<Batch | undefined> {
    if (this.#batch !== limits) {
      this.#batch = limits;
      this.#setSoft();
      this.#maybeWakeWriters();
    }
    let lingerUntil = 0;
    for (;;) {
      if (signal.aborted) return undefined;
      if (this.#events > 0) {
        const now = performance.now();
        if (lingerUntil === 0) lingerUntil = now + limits.lingerMs;
        if (this.#closed || this.#events >= limits.maxEvents || this.#bytes >= limits.maxBytes || now >= lingerUntil) {
          return this.#cut(limits);
        }
        // Lingering: woken when the batch is full (or at the linger's end), not at every offer.
        await this.#waitData(lingerUntil - now, signal, limits.maxEvents, limits.maxBytes);
      } else {
        if (this.#closed) return undefined;
        await this.#waitData(0, signal, 1, 1);
      }
    }
  }

  /** Until `events` or `bytes` are queued, `timeoutMs` passed (0: no timeout), the queue closes or `signal` aborts. */
  #waitData(timeoutMs: number, signal: AbortSignal, events: number, bytes: number): Promise<void> {
    this.#wakeEvents = events;
    this.#wakeBytes = bytes;
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (): void => {
        if (timer) clearTimeout(timer);
        signal.removeEventListener('abort', done);
        if (this.#dataWaiter === done) this.#dataWaiter = undefined;
        resolve();
      };
      this.#dataWaiter = done;
      if (timeoutMs > 0) timer = setTimeout(done, timeoutMs);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  #cut(limits: BatchLimits): Batch {
    let out: LogEvent[] | undefined;
    let taken = 0;
    let bytes = 0;
    const seq = (this.#seqs[0] ?? this.#nextSeq) + this.#head;
    while (this.#chunks.length > 0 && taken < limits.maxEvents) {
      // A batch holds consecutive numbers: stop where chunks put back out of order meet.
      if (taken > 0 && this.#seqs[0] !== seq + taken) break;
      const chunk = this.#chunks[0] as LogEvent[];
      const from = this.#head;
      let i = from;
      while (i < chunk.length && taken < limits.maxEvents) {
        const e = chunk[i] as LogEvent;
        // Always take at least one event, so an event larger than maxBytes still moves.
        const size = e.end - e.start;
        if (taken > 0 && bytes + size > limits.maxBytes) break;
        bytes += size;
        taken++;
        i++;
      }
      // A chunk's run is copied at once (a read's worth of events), not pushed one by one.
      if (out === undefined) out = chunk.slice(from, i);
      else for (let k = from; k < i; k++) out.push(chunk[k] as LogEvent);
      if (i >= chunk.length) {
        this.#chunks.shift();
        this.#seqs.shift();
        this.#head = 0;
      } else {
        this.#head = i;
        break;
      }
    }
    this.#events -= taken;
    this.#bytes -= bytes;
    this.#inFlightEvents += taken;
    this.#inFlightBytes += bytes;
    // Fewer events wait now: readers held by the soft mark may go on (an HTTP output takes many).
    this.#maybeWakeWriters();
    return { events: out ?? [], bytes, seq };
  }

  /** No more offers; `take` hands out what remains, then undefined. Wakes paused writers. */
  close(): void {
    this.#closed = true;
    this.#wakeTaker();
    this.#maybeWakeWriters();
  }
}
