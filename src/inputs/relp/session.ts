// One RELP session on the server side (librelp doc/relp.html): the "open" answered with our offers,
// each "syslog" transaction turned into an event, and its answer "rsp 200" sent once the event is
// as safe as the relay keeps it (respond_when: auto): in a disk queue and fsynced, or in a memory
// queue, as rsyslog's imrelp answers (a crash loses a memory queue either way; waiting for the
// intake would hold each sender's window behind the output's confirmation). `delivered` waits for
// the intake's confirmation (or a counted drop), `queued` never waits for an fsync. Answers go out in the order of the commands, one write per read. A queue that
// is full pauses the reading (the sender's window then fills: backpressure, never a drop), and so
// do answers piling up behind one not yet safe (past MAX_UNANSWERED of them, or MAX_REPLY_BYTES of
// refusals and other replies, which take no queue space): a session's memory is bounded whatever the
// sender writes. A message over the size limit is answered 500 (counted as too_large); a command we
// do not serve is answered 500; a stream that is not RELP gets the "serverclose" hint and is closed.

import type net from 'node:net';
import type { Inlet } from '../../core/component.ts';
import type { EventQueue } from '../../core/event-queue.ts';
import type { RelpInputTelemetry } from '../../core/telemetry.ts';
import { RelpDeframer, RelpFramingError, parseOffers, relpFrame, type RelpFrameSink } from '../../relp/frame.ts';
import type { FrameBuilder } from '../frame-builder.ts';
import { VERSION } from '../../version.ts';
import { decimalDigits, writeDecimal } from '../../syslog/format.ts';

export interface RelpSessionOptions {
  readonly maxMessageBytes: number;
  /** auto: once fsynced by a disk queue, or in a memory queue; queued: once queued; delivered: once the intake confirmed it. */
  readonly respondWhen: 'auto' | 'queued' | 'delivered';
}

const LF = 0x0a;
const CR = 0x0d;
const OK = Buffer.from(' rsp 6 200 OK\n', 'latin1');
const SERVER_OFFERS = `relp_version=0\nrelp_software=intake-relay,${VERSION}\ncommands=syslog`;
export const SERVERCLOSE = relpFrame(0, 'serverclose');
/**
 * Answers due and not written (they wait for an earlier one's safety) past which reading pauses,
 * until half are written. No sender's window is larger (our RELP output's is at most 65,536).
 */
export const MAX_UNANSWERED = 65_536;
/** Bytes of reply frames (refusals, the open's offers) due and not written past which reading pauses, until half are written. */
export const MAX_REPLY_BYTES = 256 * 1024;

/** What one read asks to answer, in order: a run of transactions answered 200, or one whole frame. */
type Answer = { readonly txnr: number } | { readonly frame: Buffer; readonly code: '200' | '500' | 'open' | undefined };

export class RelpServerSession implements RelpFrameSink {
  readonly #socket: net.Socket;
  readonly #from: string;
  readonly #o: RelpSessionOptions;
  readonly #inlet: Inlet;
  readonly #builder: FrameBuilder;
  readonly #t: RelpInputTelemetry;
  readonly #deframer: RelpDeframer;
  #open = false;
  #closing = false;
  /** This read's answers, in the order of its commands. */
  #answers: Answer[] = [];
  /** The answers of earlier reads, written in order: each read's wait on safety chains on the last. */
  #answering: Promise<void> = Promise.resolve();
  #unanswered = 0;
  /** Bytes of the reply frames among the unanswered (a syslog transaction's "200 OK" is not counted: the queue bounds those). */
  #replyBytes = 0;
  /** Our side is ended (serverclose sent): nothing more is written. */
  #ended = false;
  #gone = false;
  /** Reading is paused: a queue is full, the sender does not read its answers, or too many answers wait for an earlier one. */
  #queueFull = false;
  #answersFull = false;
  #backlog = false;

  constructor(socket: net.Socket, from: string, options: RelpSessionOptions, inlet: Inlet, builder: FrameBuilder, telemetry: RelpInputTelemetry) {
    this.#socket = socket;
    this.#from = from;
    this.#o = options;
    this.#inlet = inlet;
    this.#builder = builder;
    this.#t = telemetry;
    this.#deframer = new RelpDeframer(options.maxMessageBytes, this);
  }

  /** Transactions received and not answered yet. */
  get unanswered(): number {
    return this.#unanswered;
  }

  /** Resolves once every answer due so far is written (or the session is gone). */
  get answered(): Promise<void> {
    return this.#answering;
  }

  /** We ended our side (serverclose sent). */
  get ended(): boolean {
    return this.#ended;
  }

  /** One read: deframes it, queues its events, and schedules its answers. */
  read(chunk: Buffer): void {
    if (this.#gone || this.#closing) return;
    this.#builder.begin(chunk, this.#from);
    try {
      this.#deframer.push(chunk);
    } catch (err) {
      if (!(err instanceof RelpFramingError)) throw err;
      this.#t.protocolError();
      this.#t.log.warn('relp_framing', { sender: this.#from, reason: err.message }, 'A RELP sender sent something that is not RELP: the session is closed.');
      // What this read held before the bad bytes is offered and answered as usual; then the end.
      this.#flush();
      this.#closing = true;
      this.#then(() => this.#end());
      return;
    }
    this.#flush();
  }

  frame(txnr: number, command: string, buf: Buffer, start: number, end: number): void {
    if (command === 'syslog') {
      if (!this.#open) return this.#reply(txnr, '500 session not open');
      // rsyslog's templates end the message with a newline inside the data, as over octet-counted
      // TCP: it is not part of the message (framing.ts trims it the same way).
      let e = end;
      while (e > start && (buf[e - 1] === LF || buf[e - 1] === CR)) e--;
      this.#builder.frame(buf, start, e, false);
      this.#answers.push({ txnr });
      this.#unanswered++;
      return;
    }
    if (txnr === 0) return; // a hint from the client: nothing to answer
    if (command === 'open') {
      if (this.#open) return this.#reply(txnr, '200 connection already open - ignored');
      const offers = parseOffers(buf.toString('utf8', start, end));
      if (!offers.has('relp_version')) return this.#reply(txnr, '500 no relp_version offered');
      if (!(offers.get('commands') ?? []).includes('syslog')) return this.#reply(txnr, '500 required command not supported by client');
      this.#open = true;
      return this.#reply(txnr, `200 OK\n${SERVER_OFFERS}`, 'open');
    }
    if (command === 'close') {
      // Answered after everything before it; then the hint, and our side closes.
      const rsp = relpFrame(txnr, 'rsp');
      this.#answers.push({ frame: rsp, code: undefined });
      this.#unanswered++;
      this.#replyBytes += rsp.length;
      this.#closing = true;
      return;
    }
    this.#reply(txnr, `500 command "${command.slice(0, 32)}" not supported`);
  }

  oversized(txnr: number, command: string): void {
    if (command !== 'syslog') return this.#reply(txnr, '500 frame too large');
    this.#builder.oversized();
    this.#reply(txnr, `500 message over ${this.#o.maxMessageBytes} bytes`);
  }

  /** `code`: how the answer is counted (a session's open apart from its messages). */
  #reply(txnr: number, data: string, code: '500' | 'open' | undefined = data.startsWith('200') ? undefined : '500'): void {
    const frame = relpFrame(txnr, 'rsp', data);
    this.#answers.push({ frame, code });
    this.#unanswered++;
    this.#replyBytes += frame.length;
  }

  /** Offers the read's events, then answers them once they are safe. */
  #flush(): void {
    const targets = this.#inlet.targets;
    const before = targets.map((t) => t.queue.nextSeq);
    const result = this.#builder.flush();
    const answers = this.#answers;
    this.#answers = [];
    // A queue that closed (its intake removed by a reload, before this listener was retargeted)
    // dropped what was routed to it (counted): nothing of this read may be answered 200.
    if (result === 'dropped' || targets.some((t) => t.queue.closed)) {
      // A queue refused them (it is closing for a stop): nothing of this read may be answered 200.
      // The sender will send them again to whoever listens next.
      this.#closing = true;
      this.#then(() => this.#end());
      return;
    }
    if (result === 'slow_down' && !this.#queueFull) {
      this.#queueFull = true;
      this.#socket.pause();
      this.#t.paused();
      void this.#builder.writable().then(() => {
        this.#queueFull = false;
        this.#resume();
      });
    }
    if (answers.length === 0) return;
    const waits: Promise<void>[] = [];
    const when = this.#o.respondWhen;
    if (when !== 'queued') {
      targets.forEach((t, k) => {
        const q: EventQueue = t.queue;
        if (q.nextSeq === before[k]) return;
        if (when === 'delivered') waits.push(q.untilSettled(q.nextSeq));
        else if (q.durable) waits.push(q.untilSafe(q.nextSeq));
      });
    }
    const closing = this.#closing;
    this.#then(async () => {
      if (waits.length > 0) {
        try {
          await Promise.all(waits);
        } catch {
          // Some of them were lost before they were safe (a queue in another thread closed; counted
          // there): nothing more is answered, the sender sends them again to whoever listens next.
          this.#closing = true;
          this.#end();
          return;
        }
      }
      this.#write(answers);
      if (closing) this.#end();
    });
    // Answers waiting behind one not yet safe: refusals take no queue space, so only this bounds them.
    if (!this.#backlog && (this.#unanswered > MAX_UNANSWERED || this.#replyBytes > MAX_REPLY_BYTES)) {
      this.#backlog = true;
      this.#socket.pause();
      this.#t.paused();
    }
  }

  /** Runs `step` after every answer scheduled before it. */
  #then(step: () => void | Promise<void>): void {
    this.#answering = this.#answering.then(() => (this.#gone ? undefined : step()));
  }

  #write(answers: readonly Answer[]): void {
    // Past our end (a stop's grace ran out) an answer would never reach the sender: neither
    // written nor counted; the sender sends those messages again.
    if (this.#gone || this.#ended) return;
    let size = 0;
    let replies = 0;
    let ok = 0;
    let refused = 0;
    let opens = 0;
    for (const a of answers) {
      if ('frame' in a) {
        size += a.frame.length;
        replies += a.frame.length;
        if (a.code === '500') refused++;
        else if (a.code === 'open') opens++;
      } else {
        size += decimalDigits(a.txnr) + OK.length;
        ok++;
      }
    }
    const out = Buffer.allocUnsafe(size);
    let off = 0;
    for (const a of answers) {
      if ('frame' in a) {
        off += a.frame.copy(out, off);
      } else {
        off = writeDecimal(out, off, a.txnr);
        off += OK.copy(out, off);
      }
    }
    // A sender that does not read its answers is not read either: answers never pile up unbounded.
    if (!this.#socket.write(out) && !this.#answersFull) {
      this.#answersFull = true;
      this.#socket.pause();
      this.#t.paused();
      this.#socket.once('drain', () => {
        this.#answersFull = false;
        this.#resume();
      });
    }
    this.#unanswered -= answers.length;
    this.#replyBytes -= replies;
    if (ok > 0) this.#t.answered('200', ok);
    if (refused > 0) this.#t.answered('500', refused);
    if (opens > 0) this.#t.opened(opens);
    if (this.#backlog && this.#unanswered <= MAX_UNANSWERED / 2 && this.#replyBytes <= MAX_REPLY_BYTES / 2) {
      this.#backlog = false;
      this.#resume();
    }
  }

  /** Sends the "serverclose" hint and closes our side. */
  #end(): void {
    // Once only: a stop may close a session that a "close" or bad framing ended already.
    if (this.#gone || this.#ended) return;
    this.#ended = true;
    this.#socket.end(SERVERCLOSE);
  }

  /** The connection closed: answers not written yet are dropped (the sender resends those messages). */
  gone(): void {
    this.#gone = true;
  }

  /** Reads again once neither the queue nor the answers wait; never for a session told to stop reading (a stop, a close, bad framing). */
  #resume(): void {
    if (!this.#gone && !this.#closing && !this.#queueFull && !this.#answersFull && !this.#backlog) this.#socket.resume();
  }

  /** For a stop: stops reading; the answers due are still written (finish). */
  pause(): void {
    this.#closing = true;
    this.#socket.pause();
  }

  /** For a stop, once the answers due are written or the grace is over: the hint, then the end. */
  close(): void {
    this.#end();
  }
}
