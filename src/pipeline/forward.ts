// Workers (`workers: N`) and intakes the main thread runs alone. A shared listener runs in every
// thread, so that which thread runs it never changes under its connections, whatever a reload
// adds or removes. Its routes may lead to an intake with a disk queue, which has one writer (the
// main thread): in a worker, such an intake is a ForwardQueue, which posts each read's events to
// the main thread (encoded as the disk queue's records, one message per read, the buffer
// transferred, not copied), where a ForwardReceiver offers them to the intake's queue. Per read,
// never per event.
//
// Backpressure crosses with them: the main thread says when a chunk is in the queue, whether the
// queue asked readers to slow down, and when it has room again; a worker holds at most WINDOW_BYTES
// of chunks not yet taken. Past that (or while the queue is slowed), readers that can wait are
// paused, and those that cannot (UDP, drop_newest) are refused, counted, as a local queue would.
// An input that answers once events are safe (RELP, HTTP) asks the main thread, which waits on the
// queue itself (fsync, delivery) and answers; events the main thread could not take (its queue
// closed for a stop, the intake removed) are counted there as dropped, and a wait that covers them
// is refused, so that nothing of them is answered as safe.

import { readRecord, recordSize, writeRecord } from '../core/event-codec.ts';
import type { Batch, LogEvent } from '../core/event.ts';
import type { AdmitResult, BatchLimits, EventQueue, OfferMode, Offered, WhenFull } from '../core/event-queue.ts';
import type { ResolvedIntake } from '../config/resolve.ts';
import type { Target } from '../core/component.ts';
import { FilterSet } from '../routing/filters.ts';

/** What a worker knows of an intake the main thread runs alone: enough to route, filter and refuse. */
export interface ForwardedIntake {
  readonly name: string;
  readonly intakeKey: string;
  readonly filters: ResolvedIntake['filters'];
  readonly whenFull: WhenFull;
}

/** The intakes of `intakes` that a worker reaches through the main thread: those with a disk queue. */
export function forwardedIntakes(intakes: readonly ResolvedIntake[]): ForwardedIntake[] {
  return intakes.filter((i) => i.queue.type !== 'memory').map((i) => ({ name: i.name, intakeKey: i.intakeKey, filters: i.filters, whenFull: i.queue.when_full }));
}

export type Until = 'written' | 'safe' | 'settled';

/**
 * From a worker to the main thread. `stream`: the ForwardQueue's number in its worker (an intake
 * removed and added again by reloads gets a new one, numbered from 0 again).
 */
export type ForwardOut =
  | { readonly kind: 'forward'; readonly stream: number; readonly intake: string; readonly first: number; readonly count: number; readonly bytes: number; readonly data: Uint8Array }
  | { readonly kind: 'forward-wait'; readonly stream: number; readonly intake: string; readonly seq: number; readonly until: Until };

/** From the main thread to a worker, about one of its streams. */
export type ForwardIn =
  | { readonly kind: 'forwarded'; readonly stream: number; readonly through: number; readonly dropped: number; readonly slow: boolean; readonly full: boolean }
  | { readonly kind: 'forward-room'; readonly stream: number; readonly full: boolean }
  | { readonly kind: 'forward-reached'; readonly stream: number; readonly seq: number; readonly until: Until; readonly lost: boolean };

let streams = 0;

/** Bytes of chunks a worker has posted and the main thread not yet taken, per intake, at most. */
export const WINDOW_BYTES = 4 * 1024 * 1024;

interface Waiter {
  readonly seq: number;
  readonly resolve: () => void;
  readonly reject: (err: Error) => void;
}

/** The error a wait gets when the main thread could not take some of its events (counted there). */
export class ForwardLostError extends Error {
  readonly code = 'ERELAY_SHUTDOWN';
  constructor(intake: string) {
    super(`Events for intake "${intake}" could not be handed to the main thread (its queue closed): they were counted as dropped.`);
    this.name = 'ForwardLostError';
  }
}

/** In a worker: the queue of an intake the main thread runs, as sources and senders see it. */
export class ForwardQueue implements EventQueue {
  readonly durable = true;
  /** Its number among this worker's streams: the main thread's answers name it. */
  readonly stream = ++streams;
  #name: string;
  #whenFull: WhenFull;
  readonly #post: (m: ForwardOut, transfer: ArrayBuffer) => void;
  #next = 0;
  /** Every event numbered below this is in the main thread's queue (or was dropped there). */
  #taken = 0;
  /** Chunks posted and not yet taken, oldest first. */
  readonly #outstanding: { readonly end: number; readonly bytes: number }[] = [];
  #outBytes = 0;
  /** The main thread's queue asked its readers to slow down, and has not said it has room since. */
  #slow = false;
  /** The main thread's queue is at its limits. */
  #full = false;
  #closed = false;
  /** The first event the main thread could not take; waits that cover it are refused. */
  #lostFrom: number | undefined;
  #writers: (() => void)[] = [];
  #flushers: (() => void)[] = [];
  readonly #waits: Record<Until, Waiter[]> = { written: [], safe: [], settled: [] };
  readonly #reached: Record<Until, number> = { written: 0, safe: 0, settled: 0 };

  constructor(intake: ForwardedIntake, post: (m: ForwardOut, transfer: ArrayBuffer) => void) {
    this.#name = intake.name;
    this.#whenFull = intake.whenFull;
    this.#post = post;
  }

  /** A reload changed the intake's name (case) or when_full. */
  update(intake: ForwardedIntake): void {
    this.#name = intake.name;
    this.#whenFull = intake.whenFull;
  }

  get pendingEvents(): number {
    return this.#next - this.#taken;
  }
  get pendingBytes(): number {
    return this.#outBytes;
  }
  /** The main thread's queue reports its own oldest event, high-water mark and fullness. */
  oldestAgeMs(): number {
    return 0;
  }
  readonly highWater = 0;
  readonly timesFull = 0;
  get closed(): boolean {
    return this.#closed;
  }
  get full(): boolean {
    return this.#full || this.#blocked();
  }
  get nextSeq(): number {
    return this.#next;
  }
  get settledBelow(): number {
    return this.#reached.settled;
  }
  get safeBelow(): number {
    return this.#reached.safe;
  }

  #blocked(): boolean {
    return this.#slow || this.#outBytes >= WINDOW_BYTES;
  }

  offer(events: LogEvent[], bytes: number, mode: OfferMode): Offered {
    if (this.#closed) return { result: 'dropped', dropped: events.length, droppedBytes: bytes };
    const waits = mode === 'wait' || (mode === 'pause' && this.#whenFull === 'block');
    // As a local queue: a reader that cannot wait is refused while the queue cannot take more.
    if (!waits && (this.#full || this.#blocked())) return { result: 'dropped', dropped: events.length, droppedBytes: bytes };
    this.#send(events, bytes);
    return { result: this.#blocked() ? 'slow_down' : 'ok', dropped: 0, droppedBytes: 0 };
  }

  admit(events: LogEvent[], bytes: number): AdmitResult {
    if (this.#closed) return 'closed';
    if (this.full) return 'full';
    this.#send(events, bytes);
    return 'ok';
  }

  #send(events: LogEvent[], bytes: number): void {
    if (events.length === 0) return;
    let size = 0;
    for (const e of events) size += recordSize(e);
    const data = Buffer.allocUnsafeSlow(size);
    let at = 0;
    const first = this.#next;
    for (let i = 0; i < events.length; i++) at = writeRecord(data, at, events[i] as LogEvent, first + i);
    this.#next += events.length;
    this.#outstanding.push({ end: this.#next, bytes });
    this.#outBytes += bytes;
    this.#post({ kind: 'forward', stream: this.stream, intake: this.#name, first, count: events.length, bytes, data }, data.buffer as ArrayBuffer);
  }

  writable(): Promise<void> {
    if (!this.#blocked() || this.#closed) return Promise.resolve();
    return new Promise((resolve) => this.#writers.push(resolve));
  }

  retryAfterSeconds(): number {
    return 1;
  }

  /** Nothing is taken here: the main thread delivers. */
  take(_limits: BatchLimits, signal: AbortSignal): Promise<Batch | undefined> {
    return new Promise((resolve) => signal.addEventListener('abort', () => resolve(undefined), { once: true }));
  }
  release(): void {}
  requeue(): void {}
  settle(): void {}

  untilWritten(seq: number): Promise<void> {
    return this.#wait('written', seq);
  }
  untilSafe(seq: number): Promise<void> {
    return this.#wait('safe', seq);
  }
  untilSettled(seq: number): Promise<void> {
    return this.#wait('settled', seq);
  }

  #wait(until: Until, seq: number): Promise<void> {
    if (this.#lostFrom !== undefined && seq > this.#lostFrom) return Promise.reject(new ForwardLostError(this.#name));
    if (this.#reached[until] >= seq) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.#waits[until].push({ seq, resolve, reject });
      // Written is known here (the main thread says what it took); the rest, the main thread finds out.
      if (until !== 'written') this.#post({ kind: 'forward-wait', stream: this.stream, intake: this.#name, seq, until }, new ArrayBuffer(0));
    });
  }

  #reach(until: Until, seq: number, lost: boolean): void {
    if (!lost) this.#reached[until] = Math.max(this.#reached[until], seq);
    const rest: Waiter[] = [];
    for (const w of this.#waits[until]) {
      if (w.seq > seq) rest.push(w);
      else if (lost) w.reject(new ForwardLostError(this.#name));
      else w.resolve();
    }
    this.#waits[until] = rest;
  }

  /** What the main thread says about this intake's chunks. */
  reply(m: ForwardIn): void {
    if (m.kind === 'forward-reached') return this.#reach(m.until, m.seq, m.lost);
    if (m.kind === 'forwarded') {
      const chunk = this.#outstanding.shift();
      if (chunk) this.#outBytes -= chunk.bytes;
      if (m.dropped > 0) this.#lostFrom ??= m.through - m.dropped;
      this.#taken = m.through;
      this.#slow = m.slow;
      this.#reach('written', m.through, m.dropped > 0);
    } else {
      this.#slow = false;
    }
    this.#full = m.full;
    if (!this.#blocked()) for (const w of this.#writers.splice(0)) w();
    if (this.#outstanding.length === 0) for (const f of this.#flushers.splice(0)) f();
  }

  /** Resolves once the main thread has taken every chunk posted (a stop waits for it). */
  flushed(): Promise<void> {
    if (this.#outstanding.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#flushers.push(resolve));
  }

  close(): void {
    this.#closed = true;
    for (const w of this.#writers.splice(0)) w();
  }
}

/** In the main thread: one stream of one worker (one intake), and where its events went. */
interface Stream {
  /** The queue its first chunk went to: a later intake of the same name is another (its chunks are refused). */
  queue: EventQueue | undefined;
  /** Chunks taken: their last local number + 1 and the queue's number after them, oldest first. */
  readonly ends: { readonly local: number; readonly queue: number }[];
  /** Every local number below this is settled in the queue (entries before it were let go). */
  settledLocal: number;
  lostFrom: number | undefined;
  /** A wait for the queue's room is under way (one at a time). */
  waitingRoom: boolean;
}

/** In the main thread: takes one worker's forwarded chunks into the intakes' queues and answers. */
export class ForwardReceiver {
  readonly #queueOf: (intake: string) => EventQueue | undefined;
  readonly #reply: (m: ForwardIn) => void;
  readonly #dropped: (intake: string, events: number) => void;
  readonly #streams = new Map<number, Stream>();

  /**
   * `queueOf`: the queue of the intake of that name (any case), or undefined; `dropped`: events the
   * main thread could not take, to count.
   */
  constructor(queueOf: (intake: string) => EventQueue | undefined, reply: (m: ForwardIn) => void, dropped: (intake: string, events: number) => void) {
    this.#queueOf = queueOf;
    this.#reply = reply;
    this.#dropped = dropped;
  }

  #stream(id: number): Stream {
    let s = this.#streams.get(id);
    if (!s) this.#streams.set(id, (s = { queue: undefined, ends: [], settledLocal: 0, lostFrom: undefined, waitingRoom: false }));
    return s;
  }

  handle(m: ForwardOut): void {
    if (m.kind === 'forward') this.#take(m);
    else this.#waitFor(m);
  }

  #take(m: Extract<ForwardOut, { kind: 'forward' }>): void {
    const s = this.#stream(m.stream);
    const through = m.first + m.count;
    const now = this.#queueOf(m.intake);
    s.queue ??= now;
    const queue = s.queue;
    const events = queue && queue === now && !queue.closed ? decode(Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength), m.count) : undefined;
    if (!queue || !events) {
      this.#dropped(m.intake, m.count);
      s.lostFrom ??= m.first;
      this.#reply({ kind: 'forwarded', stream: m.stream, through, dropped: m.count, slow: false, full: false });
      return;
    }
    // The worker applied the intake's when_full already: whatever it sent, the queue takes.
    const r = queue.offer(events, m.bytes, 'wait');
    if (r.dropped > 0) {
      this.#dropped(m.intake, r.dropped);
      s.lostFrom ??= m.first;
    }
    s.ends.push({ local: through, queue: queue.nextSeq });
    const slow = r.result === 'slow_down';
    this.#reply({ kind: 'forwarded', stream: m.stream, through, dropped: r.dropped, slow, full: queue.full });
    if ((slow || queue.full) && !s.waitingRoom) {
      s.waitingRoom = true;
      void queue.writable().then(() => {
        s.waitingRoom = false;
        this.#reply({ kind: 'forward-room', stream: m.stream, full: queue.full });
      });
    }
    this.#prune(s, queue);
  }

  /** Lets go of the chunks every event of which is settled. */
  #prune(s: Stream, queue: EventQueue): void {
    let n = 0;
    while (n < s.ends.length - 1 && (s.ends[n] as { queue: number }).queue <= queue.settledBelow) n++;
    if (n > 0) s.settledLocal = (s.ends[n - 1] as { local: number }).local;
    s.ends.splice(0, n);
  }

  #waitFor(m: Extract<ForwardOut, { kind: 'forward-wait' }>): void {
    const s = this.#stream(m.stream);
    const answer = (lost: boolean): void => this.#reply({ kind: 'forward-reached', stream: m.stream, seq: m.seq, until: m.until, lost });
    if (s.lostFrom !== undefined && m.seq > s.lostFrom) return answer(true);
    if (m.seq <= s.settledLocal) return answer(false);
    const end = s.ends.find((e) => e.local >= m.seq);
    if (!s.queue || !end) return answer(true);
    const wait = m.until === 'settled' ? s.queue.untilSettled(end.queue) : m.until === 'safe' ? s.queue.untilSafe(end.queue) : Promise.resolve();
    void wait.then(() => answer(false), () => answer(true));
  }
}

/** The events of one forwarded chunk; undefined if it does not read back whole (never expected). */
function decode(buf: Buffer, count: number): LogEvent[] | undefined {
  const events: LogEvent[] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    const r = readRecord(buf, at, buf.length);
    if (r.kind !== 'record') return undefined;
    events.push(r.event);
    at = r.next;
  }
  return events;
}

/**
 * In a worker: the intakes the main thread runs alone, as its listeners route to them (a target
 * each, over a ForwardQueue), kept as the main thread's reloads say, and every stream by number
 * (a removed one's answers may still come).
 */
export class ForwardTargets {
  readonly #post: (m: ForwardOut, transfer: ArrayBuffer) => void;
  readonly #targets = new Map<string, { readonly queue: ForwardQueue; readonly target: Target }>();
  readonly #streams = new Map<number, ForwardQueue>();

  constructor(post: (m: ForwardOut, transfer: ArrayBuffer) => void) {
    this.#post = post;
  }

  /** The routes' slots: each intake's name and target. */
  slots(): { readonly name: string; readonly target: Target }[] {
    return [...this.#targets.values()].map((f) => ({ name: f.target.intake, target: f.target }));
  }

  /**
   * The intakes as the main thread runs them now: new ones get a queue, kept ones their new name
   * (case), key and filters in place. Returns the queues of those gone, for the caller to close
   * once no listener routes to them.
   */
  set(list: readonly ForwardedIntake[]): ForwardQueue[] {
    const keep = new Set<string>();
    for (const f of list) {
      const key = f.name.toLowerCase();
      keep.add(key);
      const had = this.#targets.get(key);
      if (had) {
        had.queue.update(f);
        had.target.intake = f.name;
        had.target.intakeKey = f.intakeKey;
        had.target.filters = new FilterSet(f.filters);
        continue;
      }
      const queue = new ForwardQueue(f, this.#post);
      this.#streams.set(queue.stream, queue);
      this.#targets.set(key, { queue, target: { intake: f.name, intakeKey: f.intakeKey, queue, filters: new FilterSet(f.filters) } });
    }
    const gone: ForwardQueue[] = [];
    for (const [key, f] of this.#targets) {
      if (keep.has(key)) continue;
      this.#targets.delete(key);
      gone.push(f.queue);
    }
    return gone;
  }

  /** The main thread's answer about one of the streams. */
  reply(m: ForwardIn): void {
    this.#streams.get(m.stream)?.reply(m);
  }

  /** Resolves once the main thread has taken every chunk of every stream. */
  async flushed(): Promise<void> {
    await Promise.all([...this.#streams.values()].map((q) => q.flushed()));
  }

  close(): void {
    for (const q of this.#streams.values()) q.close();
  }
}
