// Syslog over TLS to the intake (RFC 5425): whole batches per write, socket backpressure honoured.
// The wire has no acknowledgement (bytes written are not bytes received), so a batch is
// acknowledged only on evidence that the intake read it:
// - volume: `proofBytes` more bytes were taken by the kernel after it on the same connection. They
//   cannot all sit in this host's send buffer and the intake's receive buffer (tcp-buffers.ts), so
//   the intake has read past the batch (TCP delivers in order);
// - a clean close: we close our side after the batch, and the intake closes its own once it has
//   read to the end (a peer that closes with unread data resets instead). A batch that volume has
//   not proven within `confirmAfterMs` gets this: a new connection is opened, new batches go to
//   it, and the old one is closed. So does a connection holding half of `windowBytes` unconfirmed
//   when the window is too small for the proof by volume. What a new connection starts with
//   (written again after a failure) is confirmed this way as soon as it is written, so that a
//   second failure soon after does not send it a third time.
// What is written and not confirmed (the resend window) is held in memory up to `windowBytes`; at
// that bound, send() waits for a confirmation (or a failure) before it writes more.
// A connection that takes no bytes for `writeTimeoutMs` while it has some to write, or does not
// answer a close within that time, has failed. What a failed connection held is written again,
// first thing, on the next one (at-least-once; duplicates are counted as resent). Batches are kept
// as the Buffers written, never as events, so the wait costs the GC nothing.
// A stop closes every connection and waits for the answers until its deadline; a connection that
// fails meanwhile is reported as at any time, and the runner's empty send (after its backoff)
// writes what it held on a new connection, closed at once for confirmation.

import type { Batch } from '../../core/event.ts';
import { RelayError, classifyConnectError } from '../../core/errors.ts';
import { BufferPool } from './buffer-pool.ts';
import { Connection, openConnection, type Written } from './connection.ts';
import { IntakeTls, againWithoutSession } from '../tls-options.ts';
import type { SendResult, Sink, SinkEvents } from '../../core/contracts.ts';
import { MAX_BUFFERED_BYTES, VOLUME_SLACK_BYTES, resendWindowBytes, type SyslogTlsOptions } from './options.ts';

const MiB = 1024 * 1024;

export class SyslogTlsSink implements Sink<Written[]> {
  readonly type = 'syslog';
  /** One connection written in order. */
  readonly concurrency = { fixed: 1 } as const;
  readonly #o: SyslogTlsOptions;
  #events: SinkEvents | undefined;
  /** The connection new batches go to. */
  #current: Connection | undefined;
  /** Connections closed by us, waiting for the intake to close its side. */
  readonly #closing = new Set<Connection>();
  /** What failed connections held: written again first on the next send. */
  #resend: Written[] = [];
  #unacked = 0;
  #unackedBytes = 0;
  #timer: NodeJS.Timeout | undefined;
  /** A stop or a hand-over began: no new batches; a stop still takes empty sends (writes again what failed). */
  #draining = false;
  /** Done: nothing is written any more, and a failed connection is not reported (the stop's count says it). */
  #stopped = false;
  #stopping: Promise<number> | undefined;
  /** A connection being opened to take over from the current one (make before break). */
  #replacing = false;
  readonly #abort = new AbortController();
  /** One secure context, and the session the next connection resumes. */
  readonly #tls: IntakeTls;
  /** Called when a connection closing ends, or one fails: a stop waiting checks whether it is done. */
  #closingChanged: (() => void) | undefined;
  /**
   * Slabs freed by confirmations are kept up to what the window may hold: a confirmation by close
   * frees the whole window at once, and slabs dropped then were old-generation garbage until a full
   * collection (tens of MB at peak) while new ones were allocated for the next window. A quarter
   * more: a slab's end may stay unused (a batch that does not fit). Trimmed to one when a lull
   * begins (trim(), from the runner).
   */
  readonly #pool: BufferPool;
  readonly #alloc = (n: number): Buffer => this.#pool.take(n);
  /** Most bytes unconfirmed, all connections together (windowBytes). */
  readonly #window: number;
  /** Unconfirmed bytes at which a connection is closed for confirmation (Infinity: the volume proves). */
  readonly #rotateAt: number;
  /** send() calls waiting for room in the window: true once there is, false on a failure or a stop. */
  readonly #roomWaiters = new Set<(room: boolean) => void>();

  constructor(options: SyslogTlsOptions) {
    this.#tls = new IntakeTls({ name: options.serverName ?? options.host, ca: options.ca, cert: options.cert, key: options.key });
    this.#o = options;
    this.#window = options.windowBytes ?? resendWindowBytes('auto', options.proofBytes);
    this.#rotateAt = this.#window >= options.proofBytes + VOLUME_SLACK_BYTES ? Infinity : Math.max(1, Math.floor(this.#window / 2));
    this.#pool = new BufferPool(Math.ceil(this.#window * 1.25));
  }

  get unacknowledged(): number {
    return this.#unacked;
  }

  /** The timer starts with the first write. */
  async start(events: SinkEvents): Promise<void> {
    this.#events = events;
    // The secure context now, not with the first events (a bad one is a configuration error already).
    try {
      this.#tls.prepare();
    } catch {
      // Reported by the first connect, as before.
    }
  }

  /** A lull began: the slabs kept for the next burst are let go (all but one), and freed at once. */
  trim(): void {
    this.#pool.trim();
  }

  /**
   * Runs the timer (confirmation by close, write timeouts) while there is anything to watch; #tick
   * stops it once there is nothing, so that a relay at rest runs no code at all.
   */
  #arm(): void {
    if (this.#timer || this.#stopped) return;
    const o = this.#o;
    const every = Math.max(20, Math.min(100, o.confirmAfterMs / 4, o.writeTimeoutMs / 4));
    this.#timer = setInterval(() => this.#tick(performance.now()), every);
    this.#timer.unref();
  }

  async send(batch: Batch, signal: AbortSignal): Promise<SendResult> {
    const o = this.#o;
    if (this.#stopped || (this.#draining && batch.events.length > 0)) return { status: 'retryable', error: new RelayError('ERELAY_SHUTDOWN', 'Output is stopping.') };
    // Stopping: an empty send only writes again what a failed connection held.
    if (this.#draining && this.#resend.length === 0) return { status: 'sent' };
    let conn: Connection;
    for (;;) {
      const got = this.#current ?? (await this.#open(signal));
      if (!(got instanceof Connection)) return got;
      conn = got;
      if (this.#resend.length > 0) {
        const resend = this.#resend;
        this.#resend = [];
        for (const w of resend) this.#write(conn, w.buf, w.seq, w.events);
        conn.confirmSoon = true;
        // Stopping: nothing follows, so it is closed for confirmation at once.
        if (this.#draining) this.#rotate(conn);
      }
      if (batch.events.length === 0 || this.#unackedBytes < this.#window) break;
      // The window is full: all of it is on connections (current or closing), so a confirmation
      // or a failure will come; with nothing closing, the current one is closed for it (no more
      // bytes can be written to prove it by volume). After a failure (an intake that takes some
      // bytes, then drops the connection, again and again) the runner retries after its backoff.
      // With room, the connection is taken again: it may have been replaced meanwhile.
      if (this.#closing.size === 0) this.#replace(conn);
      if (!(await this.#room(signal))) {
        if (this.#stopped || this.#draining || signal.aborted) return { status: 'retryable', error: new RelayError('ERELAY_SHUTDOWN', 'Output is stopping.') };
        return {
          status: 'retryable',
          retryAfterMs: 250,
          error: new RelayError('ERELAY_UNCONFIRMED', `Intake ${o.host}:${o.port} has not confirmed the last ${Math.round(this.#unackedBytes / MiB)} MiB written: waiting for it before writing more.`),
        };
      }
    }
    if (batch.events.length > 0) {
      const buf = o.formatter.frames(batch.events, this.#alloc);
      const cut = o.formatter.takeCut();
      if (cut > 0) this.#events?.cut(cut);
      this.#unacked += batch.events.length;
      this.#unackedBytes += buf.length;
      this.#write(conn, buf, batch.seq, batch.events.length);
      // More than the proof by volume can confirm within the window: closed for confirmation, and
      // a new connection takes the next batches.
      if (conn.held >= this.#rotateAt) this.#replace(conn);
    }
    // Keep a few batches in flight, so the next one is formatted while these are sent: wait only
    // when the socket holds more than that (Node's own mark is 16 KiB).
    if (conn.socket.writableLength > MAX_BUFFERED_BYTES) await conn.drained(signal);
    return { status: 'sent' };
  }

  /** Opens the connection new batches go to; a result to return if it cannot be opened. */
  async #open(signal: AbortSignal): Promise<Connection | SendResult> {
    const o = this.#o;
    let conn: Connection;
    try {
      conn = await this.#connect(signal);
    } catch (err) {
      return { status: 'retryable', error: classifyConnectError(err, o.host, o.port) };
    }
    // A replacement opened meanwhile (#replace) is current already: this one is not needed.
    if (this.#current) {
      this.#rotate(conn);
      return this.#current;
    }
    this.#current = conn;
    return conn;
  }

  #write(conn: Connection, buf: Buffer, seq: number, events: number): void {
    // What is written is watched (confirmation, write timeout), also after a connect that took
    // longer than the timer's last tick, after which it may have stopped.
    this.#arm();
    const w: Written = { buf, seq, events, at: performance.now(), end: -1 };
    // The write timeout counts from when the connection had something to take: not across a lull.
    if (conn.written === conn.taken) conn.progressAt = w.at;
    conn.window.push(w);
    conn.held += buf.length;
    conn.written += buf.length;
    conn.lastWriteAt = w.at;
    conn.socket.write(buf, (err) => {
      if (err || conn.done) return;
      conn.taken += buf.length;
      w.end = conn.taken;
      conn.progressAt = performance.now();
      this.#prove(conn);
    });
    this.#events?.wrote(buf.length);
  }

  /** Acknowledges the batches that enough later bytes prove read. */
  #prove(conn: Connection): void {
    for (;;) {
      const w = conn.window.peek();
      if (!w || w.end < 0 || conn.taken - w.end < this.#o.proofBytes) return;
      conn.window.shift();
      conn.held -= w.buf.length;
      this.#ack(w);
    }
  }

  #ack(w: Written): void {
    this.#unacked -= w.events;
    this.#unackedBytes -= w.buf.length;
    this.#pool.give(w.buf);
    this.#events?.acknowledged(w.seq, w.events);
    if (this.#roomWaiters.size > 0 && this.#unackedBytes < this.#window) this.#wakeRoom(true);
  }

  /** Waits until the window has room (true), or a connection fails, the output stops or `signal` aborts (false). */
  #room(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted || this.#draining) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (room: boolean): void => {
        signal.removeEventListener('abort', onAbort);
        this.#roomWaiters.delete(done);
        resolve(room);
      };
      const onAbort = (): void => done(false);
      signal.addEventListener('abort', onAbort, { once: true });
      this.#roomWaiters.add(done);
    });
  }

  #wakeRoom(room: boolean): void {
    for (const w of [...this.#roomWaiters]) w(room);
  }

  #tick(now: number): void {
    const o = this.#o;
    const cur = this.#current;
    if (cur) {
      const head = cur.window.peek();
      if (cur.written > cur.taken && now - cur.progressAt >= o.writeTimeoutMs) {
        this.#failed(cur, new RelayError('ERELAY_WRITE_TIMEOUT', `Intake ${o.host}:${o.port} took no data for ${o.writeTimeoutMs} ms (output.write_timeout_ms): the connection is dropped and its unconfirmed events written again.`));
      } else if (head && (now - head.at >= o.confirmAfterMs || (cur.confirmSoon && cur.written === cur.taken))) {
        // While batches keep coming, the next connection is opened first; after a lull, the next batch opens it.
        if (now - cur.lastWriteAt < o.confirmAfterMs / 2) this.#replace(cur);
        else this.#rotate(cur);
      }
    }
    for (const c of this.#closing) {
      if (now - c.progressAt >= o.writeTimeoutMs) {
        this.#failed(c, new RelayError('ERELAY_WRITE_TIMEOUT', `Intake ${o.host}:${o.port} did not answer the close of a connection within ${o.writeTimeoutMs} ms (output.write_timeout_ms): its unconfirmed events are written again.`));
      }
    }
    // At rest: everything confirmed, nothing closing or to write again, and the connection (if one
    // is open) holding nothing. The next write (or a stop) arms it again.
    const idle = this.#current === undefined || (this.#current.written === this.#current.taken && this.#current.window.peek() === undefined);
    if (idle && this.#unackedBytes === 0 && this.#closing.size === 0 && this.#resend.length === 0 && !this.#replacing && !this.#draining) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  /**
   * Opens a connection for new batches, then closes `old` for confirmation. If the new one cannot
   * be opened, `old` is closed anyway: the next send reports why it cannot connect.
   */
  #replace(old: Connection): void {
    if (this.#replacing) return;
    this.#replacing = true;
    this.#connect(this.#abort.signal).then(
      (conn) => {
        this.#replacing = false;
        const cur = this.#current;
        if (cur === old || cur === undefined) this.#current = conn;
        // Another became current meanwhile (old failed and a send opened one): it takes over from
        // that one if it is due too (its own replacement was skipped while this one was opened).
        else if (cur.held >= this.#rotateAt) {
          this.#current = conn;
          this.#rotate(cur);
        } else {
          this.#rotate(conn);
        }
        this.#rotate(old);
      },
      () => {
        this.#replacing = false;
        this.#rotate(old);
      },
    );
  }

  /** Closes our side to have the intake confirm everything written; new batches go to a new connection. */
  #rotate(conn: Connection): void {
    if (conn.closing || conn.done) return;
    conn.closing = true;
    // Its answer is watched (write_timeout_ms), also for a connection with nothing written.
    this.#arm();
    // A connection still draining keeps its last progress time; the wait for the answer starts now.
    if (conn.written === conn.taken) conn.progressAt = performance.now();
    if (this.#current === conn) this.#current = undefined;
    this.#closing.add(conn);
    conn.socket.end();
    conn.release();
  }

  /** The intake closed its side after ours, and the connection ended without error: it read everything. */
  #confirmed(conn: Connection): void {
    if (conn.done) return;
    conn.done = true;
    this.#closing.delete(conn);
    conn.held = 0;
    const held = conn.window.drain();
    const unflushed: Written[] = [];
    for (const w of held) {
      if (w.end >= 0) this.#ack(w);
      else unflushed.push(w);
    }
    if (unflushed.length > 0) this.#lose(unflushed, new RelayError('ERELAY_CONNECTION_LOST', `Connection to ${this.#o.host}:${this.#o.port} closed before all was written.`));
    this.#closingChanged?.();
  }

  #failed(conn: Connection, error: RelayError): void {
    if (conn.done) return;
    conn.done = true;
    this.#closing.delete(conn);
    if (this.#current === conn) this.#current = undefined;
    conn.socket.destroy();
    conn.release();
    conn.held = 0;
    this.#lose(conn.window.drain(), error);
    this.#closingChanged?.();
  }

  /** Batches a connection could not confirm: written again first on the next send. */
  #lose(held: Written[], error: RelayError): void {
    let events = 0;
    for (const w of held) {
      events += w.events;
      this.#resend.push(w);
    }
    // A send waiting for room returns: what is to be written again is written by the next one.
    this.#wakeRoom(false);
    // Once stopped (or handing over), what is left is reported by stop() (or handOver()).
    if (!this.#stopped) this.#events?.connectionLost(error, events);
  }

  /** Connects; once more at once if a handshake that offered a TLS session failed (IntakeTls). */
  #connect(signal: AbortSignal): Promise<Connection> {
    return againWithoutSession(() => this.#connectOnce(signal), signal);
  }

  async #connectOnce(signal: AbortSignal): Promise<Connection> {
    const conn = await openConnection(this.#tls, this.#o, signal, { failed: (c, e) => this.#failed(c, e), confirmed: (c) => this.#confirmed(c) });
    if (this.#stopped) {
      conn.socket.destroy();
      throw new RelayError('ERELAY_SHUTDOWN', 'Output is stopping.');
    }
    this.#events?.connected(conn.socket.isSessionReused());
    return conn;
  }

  /**
   * For a reload: closes as at a stop, then gives what the intake did not confirm to the next sink
   * of this kind (adopt), which writes it first.
   */
  async handOver(deadline: AbortSignal): Promise<{ state: Written[]; events: number }> {
    // Nothing is written again here: the next sink writes it first.
    const events = await (this.#stopping ??= this.#close(deadline, false));
    const state = this.#resend;
    this.#resend = [];
    this.#unacked = 0;
    this.#unackedBytes = 0;
    return { state, events };
  }

  unconfirmed(): [number, number][] {
    return this.#resend.map((w) => [w.seq, w.events]);
  }

  adopt(state: Written[]): void {
    for (const w of state) {
      this.#unacked += w.events;
      this.#unackedBytes += w.buf.length;
      this.#resend.push(w);
    }
  }

  /**
   * Closes every connection and waits, until `deadline`, for the intake to close its side (it has
   * then read everything). A connection that fails meanwhile is reported (connectionLost), and the
   * runner's empty send writes what it held on a new connection, closed at once for confirmation:
   * the stop ends once everything is confirmed, or at the deadline. Returns the events it did not
   * confirm.
   */
  stop(deadline: AbortSignal, rewrite = true): Promise<number> {
    this.#stopping ??= this.#close(deadline, rewrite);
    return this.#stopping;
  }

  /** `rewrite`: wait for what failed connections held to be written again (a stop), or not (a hand-over). */
  async #close(deadline: AbortSignal, rewrite: boolean): Promise<number> {
    this.#draining = true;
    this.#wakeRoom(false);
    // A connection being opened to take over (#replace) is not needed.
    this.#abort.abort();
    if (!rewrite) {
      this.#stopped = true;
      if (this.#timer) clearInterval(this.#timer);
    }
    // The timer keeps running for a stop: a close not answered within writeTimeoutMs has failed.
    if (rewrite) this.#arm();
    if (this.#current) this.#rotate(this.#current);
    const done = (): boolean => this.#closing.size === 0 && (!rewrite || this.#resend.length === 0);
    if (!done()) {
      await new Promise<void>((resolve) => {
        const end = (): void => {
          deadline.removeEventListener('abort', end);
          this.#closingChanged = undefined;
          resolve();
        };
        this.#closingChanged = () => {
          if (done()) end();
        };
        if (deadline.aborted) end();
        else deadline.addEventListener('abort', end, { once: true });
      });
    }
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    const shutdown = new RelayError('ERELAY_SHUTDOWN', 'Output stopped before the intake confirmed.');
    if (this.#current) this.#failed(this.#current, shutdown);
    for (const c of [...this.#closing]) this.#failed(c, shutdown);
    return this.#unacked;
  }
}

