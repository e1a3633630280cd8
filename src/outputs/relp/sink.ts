// RELP output (librelp doc/relp.html): every event is one "syslog" transaction carrying the same
// RFC 5424 message as the syslog output, and the intake answers each with "rsp". A batch counts as
// delivered once every one of its transactions is answered 200; an answer other than 200 refuses
// that one message (counted as dropped, reason rejected, as librelp's omrelp drops it too). At
// most `window` transactions are unanswered at once. When the session ends before every answer
// came (the intake closes, sends "serverclose", stops answering for ackTimeoutMs, or breaks the
// framing), exactly the unanswered messages are written again, first and in order, on the next
// session: at-least-once, duplicates bounded by the window and counted as resent.
// The sink keeps each batch's events (not bytes) until all are answered: transaction numbers
// belong to a session, so frames are built when written.
// A stop waits for the answers, then sends "close" and waits for its answer, until its deadline; a
// session lost meanwhile is reported as at any time, and the runner's empty send (after its
// backoff) writes exactly the unanswered messages again on a new session, closed in turn once
// everything is answered.

import tls from 'node:tls';
import type { Batch } from '../../core/event.ts';
import { RelayError, classifyConnectError } from '../../core/errors.ts';
import type { SendResult, Sink, SinkEvents } from '../../core/contracts.ts';
import { nextTxnr, parseResponse, relpFrame } from '../../relp/frame.ts';
import type { Rfc5424Formatter } from '../../syslog/format.ts';
import { openSession, type RelpEndpoint } from './session.ts';
import { ACKED, MAX_RUN, REFUSED, REPORTED, Session, TO_WRITE, WRITTEN, txnrAt, type Held } from './window.ts';
import { IntakeTls } from '../tls-options.ts';
import { until } from '../../core/until.ts';

export interface RelpSinkOptions extends RelpEndpoint {
  /** Transactions written and not answered, at most. */
  readonly window: number;
  /** A session with unanswered transactions that gets no answer for this long has failed. */
  readonly ackTimeoutMs: number;
  readonly formatter: Rfc5424Formatter;
}

export class RelpSink implements Sink<Held[]> {
  readonly type = 'relp';
  /** One session, written in order. */
  readonly concurrency = { fixed: 1 } as const;
  readonly #o: RelpSinkOptions;
  readonly #where: string;
  #events: SinkEvents | undefined;
  #session: Session | undefined;
  /** Batches not answered whole yet, oldest first. */
  #held: Held[] = [];
  #unacked = 0;
  #timer: NodeJS.Timeout | undefined;
  /** A stop or a hand-over began: no new batches; a stop still takes empty sends (writes again what a lost session left). */
  #draining = false;
  /** Done: nothing is written any more, and a lost session is not reported (the stop's count says it). */
  #stopped = false;
  #stopping: Promise<number> | undefined;
  readonly #abort = new AbortController();
  /** With TLS: one secure context, and the session the next connection resumes. */
  readonly #tls: IntakeTls | undefined;
  #lastLoss: RelayError | undefined;
  /** Called when the last answer came, a session was lost or a new one opened: a stop waiting checks whether to go on. */
  #changed: (() => void) | undefined;

  constructor(options: RelpSinkOptions) {
    this.#o = options;
    this.#tls = options.tls ? new IntakeTls({ name: options.serverName ?? options.host, ca: options.ca, cert: options.cert, key: options.key }) : undefined;
    this.#where = `${options.host}:${options.port}`;
  }

  get unacknowledged(): number {
    return this.#unacked;
  }

  /** The timer starts with the first write. */
  async start(events: SinkEvents): Promise<void> {
    this.#events = events;
    // The secure context now, not with the first events (a bad one is a configuration error already).
    try {
      this.#tls?.prepare();
    } catch {
      // Reported by the first connect, as before.
    }
  }

  /**
   * Runs the timer (answers not coming, a close not answered) while a session has something
   * unanswered or is closing; #tick stops it otherwise, so that a relay at rest runs no code.
   */
  #arm(): void {
    if (this.#timer || this.#stopped) return;
    const every = Math.max(20, Math.min(1000, this.#o.ackTimeoutMs / 4));
    this.#timer = setInterval(() => this.#tick(performance.now()), every);
    this.#timer.unref();
  }

  async send(batch: Batch, signal: AbortSignal): Promise<SendResult> {
    if (this.#stopped || (this.#draining && batch.events.length > 0)) return { status: 'retryable', error: new RelayError('ERELAY_SHUTDOWN', 'Output is stopping.') };
    // Stopping: an empty send only writes again what a lost session left unanswered.
    if (this.#draining && this.#held.length === 0) return { status: 'sent' };
    let session = this.#session;
    if (!session) {
      try {
        session = await this.#connect(signal);
      } catch (err) {
        return { status: 'retryable', error: err instanceof RelayError && err.code.startsWith('ERELAY_RELP') ? err : classifyConnectError(err, this.#o.host, this.#o.port) };
      }
    }
    let h: Held | undefined;
    if (batch.events.length > 0) {
      h = { seq: batch.seq, events: batch.events, state: new Uint8Array(batch.events.length), cursor: 0, answered: 0, refused: 0, reported: 0, refusal: '', written: undefined, everWritten: false, counted: batch.events.length };
      this.#held.push(h);
      this.#unacked += batch.events.length;
    }
    this.#pump(session);
    // Wait until the batch is on the wire (the window lets it out as answers come): the runner
    // takes the next batch only then, so what the sink holds stays bounded by the window.
    if (h && h.cursor < h.events.length && this.#session === session && !signal.aborted) {
      const held = h;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          signal.removeEventListener('abort', done);
          held.written = undefined;
          resolve();
        };
        held.written = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
    // A batch none of which went out (the session was lost, or a stop came, while it waited for
    // the window) stays the runner's: it is retried, so that what the sink holds stays bounded by
    // what it has written (an intake that loses every session must not make it grow batch by batch).
    if (h && !h.everWritten && this.#session !== session) {
      this.#held.splice(this.#held.indexOf(h), 1);
      this.#unacked -= h.counted;
      return { status: 'retryable', error: this.#lastLoss ?? new RelayError('ERELAY_CONNECTION_LOST', `RELP session with ${this.#where} ended before the batch was written.`) };
    }
    // Written, in part or whole, the batch is the sink's now: a lost session writes it again on the next one.
    return { status: 'sent' };
  }

  async #connect(signal: AbortSignal): Promise<Session> {
    const open = await openSession(this.#o, AbortSignal.any([signal, this.#abort.signal]), this.#tls);
    const session = new Session(open);
    if (this.#stopped) {
      open.socket.destroy();
      throw new RelayError('ERELAY_SHUTDOWN', 'Output is stopping.');
    }
    this.#session = session;
    const socket = open.socket;
    socket.on('drain', () => this.#pump(session));
    socket.on('error', (err: NodeJS.ErrnoException) => this.#lost(session, new RelayError('ERELAY_CONNECTION_LOST', `RELP session with ${this.#where} failed (${err.code ?? 'error'}).`, { cause: err })));
    socket.on('end', () => this.#lost(session, new RelayError('ERELAY_CONNECTION_LOST', `RELP intake ${this.#where} closed the session.`)));
    socket.on('close', () => this.#lost(session, new RelayError('ERELAY_CONNECTION_LOST', `RELP session with ${this.#where} closed.`)));
    // Connected before receive(): it may hand over a "serverclose" that came with the open's answer.
    this.#events?.connected(open.socket instanceof tls.TLSSocket && open.socket.isSessionReused());
    open.receive(
      {
        frame: (txnr, command, buf, start, end) => this.#answer(session, txnr, command, buf, start, end),
        oversized: (txnr, command, datalen) =>
          this.#lost(session, new RelayError('ERELAY_RELP_PROTOCOL', `RELP intake ${this.#where} sent a ${datalen}-byte "${command}" frame (transaction ${txnr}).`)),
      },
      (err) => this.#lost(session, err),
      // Answers free the window: what it lets out goes in one write per turn of the event loop,
      // after every read of answers in it (each TLS record is a read of its own, and imrelp sends
      // a few answers per record: a write per read cost a TLS record and a system call per 2-3
      // messages). Waiting longer for more room stalls: a RELP server's small answers then wait
      // on Nagle and delayed ACKs, 40 ms each.
      () => {
        if (session.pumpSoon) return;
        session.pumpSoon = true;
        setImmediate(() => {
          session.pumpSoon = false;
          this.#pump(session);
        });
      },
    );
    this.#changed?.();
    return session;
  }

  /** Writes what the window lets out: messages a lost session left unanswered first, then new ones, in order. */
  #pump(s: Session): void {
    if (s.done || s.closing || this.#session !== s) return;
    const o = this.#o;
    const socket = s.open.socket;
    for (const h of this.#held) {
      while (h.cursor < h.events.length) {
        const room = o.window - s.unanswered;
        if (room <= 0 || socket.writableNeedDrain) return;
        // A run of consecutive events to write, from the cursor on.
        const from = h.cursor;
        let to = from;
        while (to < h.events.length && to - from < Math.min(room, MAX_RUN) && h.state[to] === TO_WRITE) to++;
        if (to === from) {
          h.cursor++;
          continue;
        }
        const first = s.txnr;
        let t = first;
        for (let i = from; i < to; i++) {
          h.state[i] = WRITTEN;
          s.push(t, h, i);
          t = nextTxnr(t);
        }
        s.txnr = t;
        h.everWritten = true;
        const buf = o.formatter.relpFrames(h.events, from, to, (i) => txnrAt(first, i));
        // Each time written: a message written again on the next session counts again.
        const cut = o.formatter.takeCut();
        if (cut > 0) this.#events?.cut(cut);
        if (s.unanswered === to - from) s.lastAnswerAt = performance.now();
        this.#arm();
        socket.write(buf);
        this.#events?.wrote(buf.length);
        h.cursor = to;
        while (h.cursor < h.events.length && h.state[h.cursor] !== TO_WRITE) h.cursor++;
      }
      if (h.written) h.written();
    }
  }

  /** A frame from the intake: the answer to one of our transactions, or the "serverclose" hint. */
  #answer(s: Session, txnr: number, command: string, buf: Buffer, start: number, end: number): void {
    if (s.done) return;
    if (command === 'serverclose' && txnr === 0) {
      this.#lost(s, new RelayError('ERELAY_CONNECTION_LOST', `RELP intake ${this.#where} closed the session (serverclose).`));
      return;
    }
    if (command !== 'rsp') {
      this.#lost(s, new RelayError('ERELAY_RELP_PROTOCOL', `RELP intake ${this.#where} sent the command "${command}", which a server may not send.`));
      return;
    }
    if (txnr === s.closeTxnr) {
      // The close is answered: the client closes (relp.md, "close"); a server may wait for that.
      this.#ended(s);
      return;
    }
    // Answers come in the order of the commands (relp.html); one out of order is looked up.
    let k = s.head;
    if (s.txnrs[k] !== txnr) {
      k = s.txnrs.indexOf(txnr, s.head);
      if (k < 0) {
        this.#lost(s, new RelayError('ERELAY_RELP_PROTOCOL', `RELP intake ${this.#where} answered transaction ${txnr}, which is not waiting for an answer.`));
        return;
      }
    }
    const h = s.held[k] as Held;
    const i = s.index[k] as number;
    s.answered(k);
    while (s.head < s.txnrs.length && s.txnrs[s.head] === -1) s.head++;
    s.compact();
    s.lastAnswerAt = performance.now();
    // "200 OK" is the common answer: read without making a string (STATUS is 3 digits, then SP or LF).
    if (end - start >= 3 && buf[start] === 0x32 && buf[start + 1] === 0x30 && buf[start + 2] === 0x30 && (end === start + 3 || buf[start + 3] === 0x20 || buf[start + 3] === 0x0a)) {
      h.state[i] = ACKED;
    } else {
      const rsp = parseResponse(buf, start, end);
      h.state[i] = REFUSED;
      h.refused++;
      // The intake's text may echo the message, whose first structured element is the key.
      h.refusal = rsp ? `${rsp.code} ${this.#o.peerText ? this.#o.peerText.clean(rsp.text) : rsp.text}` : 'an answer without a code';
    }
    h.answered++;
    if (h.answered === h.events.length) this.#settle();
  }

  /** Reports the batches answered whole, from the oldest, and lets them go. */
  #settle(): void {
    while (this.#held.length > 0) {
      const h = this.#held[0] as Held;
      if (h.answered < h.events.length) break;
      this.#held.shift();
      this.#unacked -= h.counted;
      this.#report(h);
    }
    if (this.#held.length === 0) this.#changed?.();
  }

  /**
   * Reports the answered events of a batch not reported yet, as acknowledged runs and refused runs
   * of its sequence numbers (the whole batch at once in the common case).
   */
  #report(h: Held): void {
    const ev = this.#events;
    if (!ev) return;
    const n = h.events.length;
    if (h.refused === 0 && h.reported === 0 && h.answered === n) {
      h.reported = n;
      ev.acknowledged(h.seq, n);
      return;
    }
    const error = new RelayError('ERELAY_RELP_REFUSED', `RELP intake ${this.#where} refused ${h.refused} message(s) of a batch (last answer: ${h.refusal}); they are dropped.`);
    for (let i = 0; i < n; ) {
      const st = h.state[i];
      let j = i + 1;
      while (j < n && h.state[j] === st) j++;
      if (st === ACKED || st === REFUSED) {
        if (st === ACKED) ev.acknowledged(h.seq + i, j - i);
        else ev.refused(h.seq + i, j - i, error);
        h.state.fill(REPORTED, i, j);
        h.reported += j - i;
      }
      i = j;
    }
  }

  /** The session ended before every answer came: its unanswered messages are written again on the next one. */
  #lost(s: Session, error: RelayError): void {
    if (s.done) return;
    s.done = true;
    this.#lastLoss = error;
    if (this.#session === s) this.#session = undefined;
    s.open.socket.destroy();
    s.closed?.();
    let events = 0;
    for (let k = s.head; k < s.txnrs.length; k++) {
      if (s.txnrs[k] === -1) continue;
      const h = s.held[k] as Held;
      const i = s.index[k] as number;
      h.state[i] = TO_WRITE;
      if (i < h.cursor) h.cursor = i;
      events++;
    }
    // A send() waiting for its batch to go out returns: the batch is held, and written on the next session.
    for (const h of this.#held) h.written?.();
    // Once stopped (or handing over), what is left is reported by stop() (or handOver()). While
    // stopping, a session lost with everything answered (its close under way) leaves nothing to write again.
    if (!this.#stopped && !(this.#draining && this.#held.length === 0)) this.#events?.connectionLost(error, events);
    this.#changed?.();
  }

  /** The session ended cleanly (its close answered, or not answered in time with nothing unanswered). */
  #ended(s: Session): void {
    s.done = true;
    if (this.#session === s) this.#session = undefined;
    s.open.socket.destroy();
    s.closed?.();
  }

  #tick(now: number): void {
    const s = this.#session;
    // A close not answered in time: nothing is unanswered (it is sent only then), so nothing is lost.
    if (s && s.closing) {
      if (now - s.closeSentAt >= this.#o.ackTimeoutMs) this.#ended(s);
      return;
    }
    if (s && s.unanswered > 0 && now - s.lastAnswerAt >= this.#o.ackTimeoutMs) {
      this.#lost(s, new RelayError('ERELAY_ACK_TIMEOUT', `RELP intake ${this.#where} answered nothing for ${this.#o.ackTimeoutMs} ms (output.ack_timeout_ms) with ${s.unanswered} message(s) waiting: the session is dropped and they are written again.`));
    }
    // At rest (no session, or one with nothing unanswered): the next write arms it again.
    const cur = this.#session;
    if (!cur || cur.done || (!cur.closing && cur.unanswered === 0)) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  unconfirmed(): [number, number][] {
    const out: [number, number][] = [];
    for (const h of this.#held) {
      for (let i = 0; i < h.events.length; ) {
        let j = i;
        while (j < h.events.length && (h.state[j] === TO_WRITE || h.state[j] === WRITTEN)) j++;
        if (j > i) out.push([h.seq + i, j - i]);
        i = Math.max(j, i + 1);
      }
    }
    return out;
  }

  /** For a reload: closes as at a stop, then gives what is unanswered to the next RELP sink (adopt), which writes it first. */
  async handOver(deadline: AbortSignal): Promise<{ state: Held[]; events: number }> {
    // Nothing is written again here: the next sink writes it first.
    const events = await (this.#stopping ??= this.#close(deadline, false));
    const state = this.#held;
    this.#held = [];
    this.#unacked = 0;
    return { state, events };
  }

  adopt(state: Held[]): void {
    for (const h of state) {
      for (let i = 0; i < h.events.length; i++) if (h.state[i] === WRITTEN) h.state[i] = TO_WRITE;
      h.cursor = h.state.indexOf(TO_WRITE);
      if (h.cursor < 0) h.cursor = h.events.length;
      h.written = undefined;
      // Whole batches, as send() counts them and #settle() lets them go.
      // What the last sink reported (answered before its stop) is counted no more.
      h.counted = h.events.length - h.reported;
      this.#unacked += h.counted;
      this.#held.push(h);
    }
  }

  /**
   * Waits, until `deadline`, for the answers to everything written, then closes the session with
   * "close" (the intake answers it and closes). A session lost meanwhile is reported
   * (connectionLost), and the runner's empty send writes exactly its unanswered messages again on
   * a new session, closed in turn once they are answered: the stop ends once everything is
   * answered, or at the deadline. `rewrite: false` (no runner drives this sink any more): a lost
   * session ends the stop at once. Returns the events not answered.
   */
  stop(deadline: AbortSignal, rewrite = true): Promise<number> {
    this.#stopping ??= this.#close(deadline, rewrite);
    return this.#stopping;
  }

  /** `rewrite`: wait for what lost sessions left to be written again (a stop), or not (a hand-over, a background stop). */
  async #close(deadline: AbortSignal, rewrite: boolean): Promise<number> {
    this.#draining = true;
    if (!rewrite) {
      this.#stopped = true;
      if (this.#timer) clearInterval(this.#timer);
    }
    // The timer keeps running for a stop: an intake silent for ackTimeoutMs has lost the session.
    while (!deadline.aborted) {
      const s = this.#session;
      if (s && !s.done) {
        if (this.#held.length > 0) {
          this.#pump(s);
          await until(deadline, (wake) => (this.#changed = wake), () => s.done || this.#held.length === 0);
          continue;
        }
        if (!s.closing) {
          s.closing = true;
          s.closeTxnr = s.txnr;
          s.closeSentAt = performance.now();
          this.#arm();
          s.open.socket.write(relpFrame(s.txnr, 'close'));
        }
        await until(deadline, (wake) => (s.closed = wake), () => s.done);
        continue;
      }
      // No session: done, unless what a lost one left is to be written again on the next one
      // (opened by the runner's empty send, after its backoff).
      if (!rewrite || this.#held.length === 0) break;
      await until(deadline, (wake) => (this.#changed = wake), () => this.#session !== undefined && !this.#session.done);
    }
    this.#changed = undefined;
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    // A session being opened is not needed any more.
    this.#abort.abort();
    const s = this.#session;
    if (s && !s.done) {
      s.done = true;
      s.open.socket.destroy();
    }
    this.#session = undefined;
    // What was answered of batches answered in part counts too (the rest is what stop returns).
    for (const h of this.#held) if (h.answered > h.reported) this.#report(h);
    let unanswered = 0;
    for (const h of this.#held) unanswered += h.events.length - h.answered;
    return unanswered;
  }
}
