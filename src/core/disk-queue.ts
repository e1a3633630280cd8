// The durable queue of an intake: every event offered is appended to a segment log on disk (with
// a checksum per record) before it counts as accepted, and a bounded memory stage in front keeps
// recent events ready for the output so that, while the output keeps up, nothing is read back.
// When the memory stage is full, events stay on disk only ("spilled") and are read back in order
// as it empties. A segment is deleted once every event in it is settled (acknowledged by the
// output, or dropped with a counted reason); the settled watermark is saved beside the segments
// (atomically, every second and at stop), so a restart resumes with what was not delivered. The
// saved watermark can be ahead of the log (its end lost in a power cut before an fsync, or set
// aside as damaged, after those events were settled): numbering then goes on from the watermark,
// never below it, so that no new event counts as settled before it is.
//
// Disk full or unwritable: the queue counts as full (block: pausable inputs wait; the rest is
// refused and counted), the events of pausable inputs are held in memory and written once the
// disk takes them again; the events of the others are not kept (they are counted dropped, or
// answered "later"). The error is reported through `onError` (a metric and a rate-limited log).
// Reading spilled events back and deleting delivered segments fail the same way (no file
// descriptors left, EIO): reported, never thrown to the caller (settle and release run in socket
// callbacks and the runner), and tried again at the next tick.

import { open, rename } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Batch, LogEvent } from './event.ts';
import { BoundedQueue } from './queue.ts';
import { wakeSettled, type AdmitResult, type BatchLimits, type EventQueue, type OfferMode, type Offered, type SettledWaiter, type WhenFull } from './event-queue.ts';
import { SegmentLog, type RecoveryReport } from './segment-log.ts';
import { SettledTracker } from './settled.ts';
import { SingleFlight } from './single-flight.ts';

export interface DiskQueueOptions {
  readonly dir: string;
  readonly maxBytes: number;
  readonly whenFull: WhenFull;
  readonly memoryEvents: number;
  readonly memoryBytes: number;
  readonly segmentBytes: number;
  readonly fsyncIntervalMs: number;
}

export type DiskQueueOp = 'write' | 'read' | 'delete' | 'state';

export interface DiskQueueHooks {
  /**
   * An I/O error, by what failed: `write` (disk full, unwritable: the queue behaves as full until
   * it works again), `read` (queued events not read back yet), `delete` (delivered segments not
   * removed yet), `state` (the delivered position not saved). Each is retried.
   */
  onError(err: NodeJS.ErrnoException, op: DiskQueueOp): void;
  /** Events found damaged on disk, skipped (counted as dropped, reason corrupt). */
  onLost(events: number): void;
  /** Bytes written to the log, and fsynced. */
  onWrite(bytes: number): void;
  onSync(bytes: number): void;
}

const RESUME_FRACTION = 0.9;
const SETTLED_FILE = 'settled.json';

export class DiskQueue implements EventQueue {
  readonly durable = true;
  #o: DiskQueueOptions;
  readonly #hooks: DiskQueueHooks;
  readonly #log: SegmentLog;
  readonly #mem: BoundedQueue;
  readonly #settled: SettledTracker;
  /** First event on disk only (not in the memory stage); every later one is too. */
  #spill: number | undefined;
  #pendingEvents = 0;
  #pendingBytes = 0;
  /** Events a failed write left in memory, in order, waiting for the disk. */
  #unwritten: { events: LogEvent[]; bytes: number }[] = [];
  #unwrittenEvents = 0;
  #closed = false;
  #writers: (() => void)[] = [];
  #settledWaiters: SettledWaiter[] = [];
  #safeWaiters: SettledWaiter[] = [];
  #syncQueued = false;
  #timer: NodeJS.Timeout | undefined;
  #savedSettled = -1;
  /** A read-back or a deletion failed: the tick tries again. */
  #retryPump = false;
  #retryDelete = false;
  readonly #saving = new SingleFlight();
  #syncedBytes = 0;
  #writtenBytes = 0;
  readonly recovery: RecoveryReport;
  /** Events found on disk at start (not delivered before the last stop). */
  readonly recovered: number;

  constructor(options: DiskQueueOptions, hooks: DiskQueueHooks) {
    this.#o = options;
    this.#hooks = hooks;
    // Several segments fit in max_bytes, so that deleting delivered ones frees room.
    const segmentBytes = Math.min(options.segmentBytes, Math.max(64 * 1024, Math.floor(options.maxBytes / 8)));
    const { log, report } = SegmentLog.open(options.dir, segmentBytes);
    this.#log = log;
    this.recovery = report;
    const saved = readSettled(join(options.dir, SETTLED_FILE));
    // Numbering goes on from the saved watermark if the log ends below it (see above).
    log.startAt(saved);
    const from = Math.max(saved, log.firstSeq);
    this.#settled = new SettledTracker(from);
    this.#savedSettled = from;
    this.recovered = Math.max(0, log.nextSeq - from);
    this.#pendingEvents = this.recovered;
    this.#pendingBytes = this.recovered > 0 ? log.bytes : 0;
    this.#spill = this.recovered > 0 ? from : undefined;
    this.#mem = new BoundedQueue({ maxEvents: options.memoryEvents, maxBytes: options.memoryBytes, whenFull: 'block' });
    this.#mem.pushNumbered([], 0, from);
    this.#deleteSettled();
    this.#pump();
    this.#timer = setInterval(() => this.#tick(), Math.max(10, Math.min(options.fsyncIntervalMs, 1000)));
    this.#timer.unref();
  }

  get pendingEvents(): number {
    return this.#pendingEvents + this.#unwrittenEvents;
  }
  get pendingBytes(): number {
    return Math.max(0, this.#pendingBytes);
  }
  get closed(): boolean {
    return this.#closed;
  }
  get full(): boolean {
    return this.#unwritten.length > 0 || this.#log.bytes >= this.#o.maxBytes;
  }
  get nextSeq(): number {
    return this.#log.nextSeq + this.#unwrittenEvents;
  }
  get settledBelow(): number {
    return this.#settled.watermark;
  }
  get safeBelow(): number {
    return Math.max(this.#settled.watermark, this.#log.durableBelow);
  }
  /** Bytes of the segments on disk. */
  get diskBytes(): number {
    return this.#log.bytes;
  }
  /** Events on disk not settled yet. */
  get diskEvents(): number {
    return this.#log.nextSeq - this.#settled.watermark;
  }
  /** Age (ms) of the oldest event not settled yet, as far as the segments tell; 0 when none. */
  oldestAgeMs(now = Date.now()): number {
    if (this.diskEvents <= 0) return 0;
    const at = this.#log.firstAtOf(this.#settled.watermark);
    return at > 0 ? Math.max(0, now - at) : 0;
  }

  #highWater = 0;
  #timesFull = 0;
  get highWater(): number {
    return this.#highWater;
  }
  get timesFull(): number {
    return this.#timesFull;
  }
  #counted(): void {
    if (this.pendingEvents > this.#highWater) this.#highWater = this.pendingEvents;
  }

  offer(events: LogEvent[], bytes: number, mode: OfferMode): Offered {
    if (this.#closed) return { result: 'dropped', dropped: events.length, droppedBytes: bytes };
    if (this.full) this.#timesFull++;
    const waits = mode === 'wait' || (mode === 'pause' && this.#o.whenFull === 'block');
    if (this.full && !waits) return { result: 'dropped', dropped: events.length, droppedBytes: bytes };
    if (!this.#append(events, bytes, waits) && !waits) return { result: 'dropped', dropped: events.length, droppedBytes: bytes };
    this.#counted();
    return { result: waits && this.full ? 'slow_down' : 'ok', dropped: 0, droppedBytes: 0 };
  }

  admit(events: LogEvent[], bytes: number): AdmitResult {
    if (this.#closed) return 'closed';
    if (this.full) {
      this.#timesFull++;
      return 'full';
    }
    // Refused ("later"): the sender sends them again, so nothing is kept.
    if (!this.#append(events, bytes, false)) return 'full';
    this.#counted();
    return 'ok';
  }

  /**
   * Writes the events to the log; false if the disk refused them. A caller that waits (`keep`) keeps
   * them: they are held in memory and written first once the disk works again. For one that does
   * not, nothing is left behind: it counts them dropped (or answers "later"), and they are.
   */
  #append(events: LogEvent[], bytes: number, keep: boolean): boolean {
    if (events.length === 0) return true;
    if (this.#unwritten.length === 0) {
      try {
        const seq = this.#log.nextSeq;
        this.#written(this.#log.append(events));
        this.#accepted(events, bytes, seq);
        return true;
      } catch (err) {
        this.#hooks.onError(err as NodeJS.ErrnoException, 'write');
      }
    }
    if (!keep) return false;
    this.#unwritten.push({ events, bytes });
    this.#unwrittenEvents += events.length;
    return false;
  }

  #written(n: number): void {
    this.#writtenBytes += n;
    this.#hooks.onWrite(n);
  }

  #accepted(events: LogEvent[], bytes: number, seq: number): void {
    this.#pendingEvents += events.length;
    this.#pendingBytes += bytes;
    if (this.#spill === undefined && this.#mem.pendingEvents < this.#o.memoryEvents && this.#mem.pendingBytes < this.#o.memoryBytes) {
      this.#mem.pushNumbered(events, bytes, seq);
    } else {
      this.#spill ??= seq;
    }
  }

  /** Retries what a failed write left in memory. */
  #flushUnwritten(): void {
    while (this.#unwritten.length > 0) {
      const u = this.#unwritten[0] as { events: LogEvent[]; bytes: number };
      try {
        const seq = this.#log.nextSeq;
        this.#written(this.#log.append(u.events));
        this.#unwritten.shift();
        this.#unwrittenEvents -= u.events.length;
        this.#accepted(u.events, u.bytes, seq);
      } catch (err) {
        this.#hooks.onError(err as NodeJS.ErrnoException, 'write');
        return;
      }
    }
    this.#wakeWriters();
  }

  /**
   * Moves spilled events from disk into the memory stage while it has room. A read that fails is
   * reported and tried again by the tick, from the same event: nothing skipped, nothing twice.
   */
  #pump(): void {
    const mem = this.#mem;
    this.#retryPump = false;
    while (this.#spill !== undefined) {
      const room = this.#o.memoryEvents - mem.pendingEvents;
      const roomBytes = this.#o.memoryBytes - mem.pendingBytes;
      // Refill in large steps, not one event at a time.
      if (room < this.#o.memoryEvents / 2 || roomBytes <= 0) return;
      let r: ReturnType<SegmentLog['read']>;
      try {
        r = this.#log.read(this.#spill, room, roomBytes);
      } catch (err) {
        this.#retryPump = true;
        this.#hooks.onError(err as NodeJS.ErrnoException, 'read');
        return;
      }
      if (r.lost > 0) {
        this.#settled.settle(r.seq - r.lost, r.lost);
        this.#pendingEvents -= r.lost;
        this.#hooks.onLost(r.lost);
      }
      if (r.events.length > 0) mem.pushNumbered(r.events, r.bytes, r.seq);
      const next = r.seq + r.events.length;
      if (next >= this.#log.nextSeq) this.#spill = undefined;
      else if (next === this.#spill && r.lost === 0) return; // nothing readable now
      else this.#spill = next;
    }
  }

  writable(): Promise<void> {
    if (!this.full || this.#closed) return Promise.resolve();
    return new Promise((resolve) => this.#writers.push(resolve));
  }

  #wakeWriters(): void {
    if (this.#writers.length === 0) return;
    if (this.#closed || (this.#unwritten.length === 0 && this.#log.bytes < this.#o.maxBytes * RESUME_FRACTION)) {
      const ws = this.#writers;
      this.#writers = [];
      for (const w of ws) w();
    }
  }

  retryAfterSeconds(): number {
    return this.#mem.retryAfterSeconds();
  }

  take(limits: BatchLimits, signal: AbortSignal): Promise<Batch | undefined> {
    return this.#mem.take(limits, signal);
  }

  release(batch: Batch): void {
    this.#mem.release(batch);
    this.#pendingEvents -= batch.events.length;
    this.#pendingBytes -= batch.bytes;
    // Recovered events were counted by their size on disk: square up once nothing is pending.
    if (this.#pendingEvents <= 0) this.#pendingBytes = 0;
    if (!this.#closed) this.#pump();
  }

  requeue(batches: readonly Batch[]): void {
    this.#mem.requeue(batches);
  }

  untilSettled(seq: number): Promise<void> {
    if (this.#settled.watermark >= seq) return Promise.resolve();
    return new Promise((resolve) => this.#settledWaiters.push({ seq, resolve }));
  }

  /**
   * Safe = fsynced (or settled). Those who wait share one fsync, started at the next turn of the
   * event loop (group commit), instead of waiting for the periodic one (fsync_interval_ms).
   */
  untilSafe(seq: number): Promise<void> {
    if (this.safeBelow >= seq) return Promise.resolve();
    return new Promise((resolve) => {
      this.#safeWaiters.push({ seq, resolve });
      this.#syncSoon();
    });
  }

  #syncSoon(): void {
    if (this.#syncQueued || this.#closed) return;
    this.#syncQueued = true;
    setImmediate(() => {
      this.#syncQueued = false;
      const before = this.#log.durableBelow;
      // An fsync that failed (durableBelow did not move) is left to the periodic tick: no loop.
      void this.#log.sync(true).then(() => this.#wakeSafe(this.#log.durableBelow !== before));
    });
  }

  /** `resync`: fsync again for waiters on events appended meanwhile. */
  #wakeSafe(resync = true): void {
    if (this.#safeWaiters.length === 0) return;
    this.#safeWaiters = wakeSettled(this.#safeWaiters, this.safeBelow);
    // Waiters on events still to be written (a failing disk) are woken by the periodic tick, which
    // retries the writes: no loop of fsyncs meanwhile.
    if (resync && this.#safeWaiters.length > 0 && this.#log.durableBelow < this.#log.nextSeq) this.#syncSoon();
  }

  settle(seq: number, count: number): void {
    const before = this.#settled.watermark;
    this.#settled.settle(seq, count);
    if (this.#settledWaiters.length > 0) this.#settledWaiters = wakeSettled(this.#settledWaiters, this.#settled.watermark);
    this.#wakeSafe();
    if (this.#settled.watermark !== before || this.#retryDelete) this.#deleteSettled();
  }

  /**
   * Deletes the segments wholly settled. Deleting the writer's segment means opening a new one
   * first; if that fails (no file descriptors left, EIO), the error is reported and the tick tries again.
   */
  #deleteSettled(): void {
    const before = this.#log.bytes;
    // When full, the writer's segment is let go as soon as all of it is delivered, however small.
    const force = before >= this.#o.maxBytes * RESUME_FRACTION;
    this.#retryDelete = false;
    try {
      this.#log.deleteBelow(this.#settled.watermark, force);
    } catch (err) {
      this.#retryDelete = true;
      this.#hooks.onError(err as NodeJS.ErrnoException, 'delete');
    }
    if (this.#log.bytes < before) this.#wakeWriters();
  }

  /**
   * No more offers. The memory stage is handed out (its events are on disk too); the rest stays on
   * disk for the next start.
   */
  /** New limits (a reload): what is on disk stays; waiting writers resume if there is room now. */
  setLimits(maxBytes: number, whenFull: WhenFull): void {
    this.#o = { ...this.#o, maxBytes, whenFull };
    this.#wakeWriters();
  }

  close(): void {
    this.#closed = true;
    this.#mem.close();
    this.#wakeWriters();
  }

  /** After the output stopped: saves the settled watermark, fsyncs, closes the files. */
  async finish(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#flushUnwritten();
    await this.#log.sync(true);
    await this.#saveSettled(true);
    this.#log.close();
  }

  #tick(): void {
    if (this.#unwritten.length > 0) this.#flushUnwritten();
    if (this.#retryDelete) this.#deleteSettled();
    if (this.#retryPump && !this.#closed) this.#pump();
    const before = this.#log.durableBelow;
    const written = this.#writtenBytes;
    void this.#log.sync().then(() => {
      this.#wakeSafe();
      if (this.#log.durableBelow !== before) {
        this.#hooks.onSync(written - this.#syncedBytes);
        this.#syncedBytes = written;
      }
    });
    void this.#saveSettled();
  }

  /** `fresh`: a save that starts after this call (at stop), not one already in flight. */
  #saveSettled(fresh = false): Promise<void> {
    return this.#saving[fresh ? 'runFresh' : 'run'](async () => {
      const w = this.#settled.watermark;
      if (w === this.#savedSettled) return;
      try {
        const file = join(this.#o.dir, SETTLED_FILE);
        const fh = await open(`${file}.tmp`, 'w', 0o600);
        try {
          await fh.writeFile(JSON.stringify({ settled_below: w }));
          await fh.sync();
        } finally {
          await fh.close();
        }
        await rename(`${file}.tmp`, file);
        this.#savedSettled = w;
      } catch (err) {
        this.#hooks.onError(err as NodeJS.ErrnoException, 'state');
      }
    });
  }
}

function readSettled(file: string): number {
  try {
    const v = (JSON.parse(readFileSync(file, 'utf8')) as { settled_below?: unknown }).settled_below;
    return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0;
  } catch {
    // Missing or damaged: everything on disk is sent again (duplicates, never a loss).
    return 0;
  }
}
