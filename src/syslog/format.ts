// RFC 5424 (§6) messages for the intake, framed by octet counting (RFC 5425 §4.3 / RFC 6587 §3.4.1):
//   LEN SP <PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID LOG [SEKOIA@53288 intake_key="KEY"]SD SP MSG
// A whole batch becomes one Buffer, written with one socket write; MSG bytes are copied, not re-encoded.
// The same messages also go out as RELP frames (relpFrames).

import type { LogEvent } from '../core/event.ts';
import { timestampText } from '../core/event.ts';
import { utf8Boundary } from '../core/utf8.ts';
import { isoUtc } from '../core/iso-time.ts';
import { bsdConversion } from './timestamps.ts';
import { copyPlan, type CopyPlan } from './copy-plan.ts';

export type TimestampMode = 'received' | 'source';

/**
 * The intake's limit on one event: larger ones are refused (HTTP 413) or, on syslog, dropped
 * without a word. A message the header made longer (an event of max_message_bytes, a repaired
 * one) is cut to it here, its MSG on a character boundary.
 */
export const INTAKE_MAX_EVENT_BYTES = 250 * 1024;
/**
 * What the header and the key element take at most (PRI, TIMESTAMP, HOSTNAME of 255, APP-NAME,
 * PROCID, LOG, and a key of up to 400 characters): an input that splits events (the file input)
 * keeps each piece this much under the intake's limit, so that no piece is cut.
 */
export const HEADER_ROOM_BYTES = 1024;

/** How an event too large for the intake goes out: with or without its source SD, MSG up to msgEnd. */
interface Fit {
  readonly keepSd: boolean;
  readonly msgEnd: number;
  readonly size: number;
}

export const SEKOIA_SD_ID = 'SEKOIA@53288';

/** Escapes a PARAM-VALUE (RFC 5424 §6.3.3): `"`, `\` and `]` get a backslash. */
export function escapeSdValue(v: string): string {
  return v.replace(/["\\\]]/g, (c) => `\\${c}`);
}

export function intakeKeyElement(intakeKey: string): string {
  return `[${SEKOIA_SD_ID} intake_key="${escapeSdValue(intakeKey)}"]`;
}

/** The header of the last event formatted, by what it is made of; its bytes once a second event shares it. */
interface LastHeader {
  readonly pri: number;
  readonly ts: string;
  readonly hostname: string;
  readonly appName: string;
  readonly procId: string;
  readonly text: string;
  bytes: Uint8Array | undefined;
}

export class Rfc5424Formatter {
  readonly #sd: string;
  readonly #mode: TimestampMode;
  #lastMs = -1;
  #lastIso = '';
  #last: LastHeader = { pri: -1, ts: '', hostname: '', appName: '', procId: '', text: '', bytes: undefined };
  /** Events cut to INTAKE_MAX_EVENT_BYTES, not yet taken by the sink (takeCut). */
  #cut = 0;
  /** The last source timestamp converted: its bytes (timestamps longer than 64 bytes are not kept). */
  readonly #lastSource: { bytes: Buffer; length: number; format: number; text: string | undefined; validFrom: number; validUntil: number } = {
    bytes: Buffer.alloc(64), length: -1, format: -1, text: undefined, validFrom: 0, validUntil: 0,
  };

  /** The batch's copies in one native call, where the addon is loaded; each run copied here otherwise. */
  readonly #plan: CopyPlan | undefined;

  /** `nativeCopy: false`: copy run by run even where the addon is loaded (tests compare both). */
  constructor(intakeKey: string, mode: TimestampMode, o: { readonly nativeCopy?: boolean } = {}) {
    this.#sd = intakeKeyElement(intakeKey);
    this.#mode = mode;
    this.#plan = o.nativeCopy === false ? undefined : copyPlan();
  }

  #received(ms: number): string {
    if (ms !== this.#lastMs) {
      this.#lastMs = ms;
      this.#lastIso = isoUtc(ms);
    }
    return this.#lastIso;
  }

  #timestamp(e: LogEvent): string {
    if (this.#mode === 'source' && e.tsEnd > e.tsStart) return this.#source(e) ?? this.#received(e.receivedAt);
    return this.#received(e.receivedAt);
  }

  /**
   * The source's TIMESTAMP as RFC 5424 (an ISO one checked, a BSD one converted), or undefined when
   * it is not a valid one. A stream repeats its timestamps (a second's worth of events share one):
   * the last one's bytes and rendering are kept, so each distinct value is converted once (a BSD
   * one again when the reception time would give it another year).
   */
  #source(e: LogEvent): string | undefined {
    const n = e.tsEnd - e.tsStart;
    const last = this.#lastSource;
    const at = e.receivedAt;
    if (n === last.length && e.format === last.format && at >= last.validFrom && at < last.validUntil && e.buf.compare(last.bytes, 0, n, e.tsStart, e.tsEnd) === 0) {
      return last.text;
    }
    const ts = timestampText(e);
    // RFC 5424, or an ISO timestamp in a BSD line (the same whenever it is read); a BSD one
    // converted, with the year its reception time gives, so it holds only for reception times
    // that give the same year.
    let text = rfc5424Timestamp(ts);
    let validFrom = -Infinity;
    let validUntil = Infinity;
    if (text === undefined && e.format === 3164) {
      const c = bsdConversion(ts, at);
      text = c?.text;
      if (c) ({ validFrom, validUntil } = c);
    }
    if (n <= last.bytes.length) {
      e.buf.copy(last.bytes, 0, e.tsStart, e.tsEnd);
      last.length = n;
      last.format = e.format;
      last.text = text;
      last.validFrom = validFrom;
      last.validUntil = validUntil;
    }
    return text;
  }

  /**
   * HEADER and the intake key element: printable ASCII only, so one byte per character. Events of
   * a stream mostly repeat the previous one's (same PRI, same millisecond of reception, the
   * parser's very same field strings): then the previous header is reused as bytes, copied with
   * one set() instead of a string built and encoded per event. A header seen once stays a string.
   */
  #head(e: LogEvent): string | Uint8Array {
    const ts = this.#timestamp(e);
    const h = this.#last;
    if (e.pri === h.pri && ts === h.ts && e.hostname === h.hostname && e.appName === h.appName && e.procId === h.procId) {
      return (h.bytes ??= Buffer.from(h.text, 'latin1'));
    }
    const text = `<${e.pri}>1 ${ts} ${e.hostname || '-'} ${e.appName || '-'} ${e.procId || '-'} LOG ${this.#sd}`;
    this.#last = { pri: e.pri, ts, hostname: e.hostname, appName: e.appName, procId: e.procId, text, bytes: undefined };
    return text;
  }

  /**
   * The batch as consecutive octet-counted frames, in one Buffer of exactly the right size. The
   * header is written as one latin1 string; the source's SD and MSG are copied as bytes.
   */
  frames(events: readonly LogEvent[], alloc: (size: number) => Buffer = Buffer.allocUnsafe): Buffer {
    return this.#build(events, 0, events.length, alloc, octetCount);
  }

  /**
   * events[from, to) as RELP "syslog" frames (librelp doc/relp.html), numbered from `txnr` on:
   *   TXNR SP syslog SP DATALEN SP MSG LF
   * `txnr(i)` gives the number of the i-th frame.
   */
  relpFrames(events: readonly LogEvent[], from: number, to: number, txnr: (i: number) => number, alloc: (size: number) => Buffer = Buffer.allocUnsafe): Buffer {
    return this.#build(events, from, to, alloc, {
      size: (i, n) => decimalDigits(txnr(i)) + 8 + decimalDigits(n) + 1 + n + 1,
      head: (out, off, i, n) => {
        off = writeDecimal(out, off, txnr(i));
        off += out.write(' syslog ', off, 'latin1');
        off = writeDecimal(out, off, n);
        out[off++] = 0x20;
        return off;
      },
      trailer: true,
    });
  }

  #build(events: readonly LogEvent[], from: number, to: number, alloc: (size: number) => Buffer, framing: Framing): Buffer {
    const count = to - from;
    const heads = new Array<string | Uint8Array>(count);
    const sizes = new Array<number>(count);
    let total = 0;
    let fits: Map<number, Fit> | undefined;
    for (let i = 0; i < count; i++) {
      const e = events[from + i] as LogEvent;
      const head = this.#head(e);
      const msg = e.end - e.msgStart;
      let n = head.length + (e.sdEnd - e.sdStart) + (msg > 0 ? msg + 1 : 0);
      if (n > INTAKE_MAX_EVENT_BYTES) {
        const fit = this.#fit(e, head.length);
        (fits ??= new Map()).set(i, fit);
        n = fit.size;
        this.#cut++;
      }
      heads[i] = head;
      sizes[i] = n;
      total += framing.size(i, n);
    }
    const out = alloc(total);
    // Offsets go to the plan as 32-bit integers: a batch of 2 GiB or more is copied run by run.
    const plan = total <= 0x7fffffff ? this.#plan : undefined;
    plan?.clear();
    let off = 0;
    for (let i = 0; i < count; i++) {
      const e = events[from + i] as LogEvent;
      off = framing.head(out, off, i, sizes[i] as number);
      const head = heads[i] as string | Uint8Array;
      if (typeof head === 'string') {
        off += out.write(head, off, 'latin1');
      } else {
        if (plan) plan.add(head, 0, head.length, off);
        else out.set(head, off);
        off += head.length;
      }
      const fit = fits?.get(i);
      if (e.sdEnd > e.sdStart && (fit === undefined || fit.keepSd)) {
        if (plan) plan.add(e.buf, e.sdStart, e.sdEnd, off);
        else e.buf.copy(out, off, e.sdStart, e.sdEnd);
        off += e.sdEnd - e.sdStart;
      }
      const msgEnd = fit === undefined ? e.end : fit.msgEnd;
      if (msgEnd > e.msgStart) {
        out[off++] = 0x20;
        if (plan) plan.add(e.buf, e.msgStart, msgEnd, off);
        else e.buf.copy(out, off, e.msgStart, msgEnd);
        off += msgEnd - e.msgStart;
      }
      if (framing.trailer) out[off++] = 0x0a;
    }
    plan?.run(out);
    return out;
  }

  /** Events cut to INTAKE_MAX_EVENT_BYTES since the last call (the sink counts them). */
  takeCut(): number {
    const n = this.#cut;
    this.#cut = 0;
    return n;
  }

  /** The source's SD if it fits with the header (an SD is never cut), and MSG up to what fits. */
  #fit(e: LogEvent, headBytes: number): Fit {
    const sd = e.sdEnd - e.sdStart;
    const keepSd = headBytes + sd < INTAKE_MAX_EVENT_BYTES;
    const room = INTAKE_MAX_EVENT_BYTES - headBytes - (keepSd ? sd : 0) - 1;
    const msgEnd = room > 0 ? utf8Boundary(e.buf, e.msgStart, Math.min(e.end, e.msgStart + room)) : e.msgStart;
    const msg = msgEnd - e.msgStart;
    return { keepSd, msgEnd, size: headBytes + (keepSd ? sd : 0) + (msg > 0 ? msg + 1 : 0) };
  }

  /** One message as text, without its length prefix (tests, the emulator's printout). */
  message(e: LogEvent): string {
    const buf = this.frames([e]);
    return buf.toString('utf8', buf.indexOf(0x20) + 1);
  }
}

const RFC3339 = /^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/;

/**
 * `ts` as an RFC 5424 TIMESTAMP (§6.2.3: RFC 3339, upper-case T and Z, no leap second, at most 6
 * fraction digits: longer fractions are cut), or undefined when it is not a real date and time.
 */
export function rfc5424Timestamp(ts: string): string | undefined {
  const m = RFC3339.exec(ts);
  if (!m) return undefined;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 ? (leap ? 29 : 28) : month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
  if (Number(m[3]) > days) return undefined;
  const frac = m[4];
  // "YYYY-MM-DDThh:mm:ss" is 19 characters; the fraction (with its dot) follows.
  return frac !== undefined && frac.length > 7 ? ts.slice(0, 26) + ts.slice(19 + frac.length) : ts;
}

/** How each message of a batch is framed: its whole size, and the bytes written before it. */
interface Framing {
  /** Bytes of the i-th frame whose message is `n` bytes. */
  size(i: number, n: number): number;
  /** Writes what precedes the i-th message at `off`; returns the offset after it. */
  head(out: Buffer, off: number, i: number, n: number): number;
  /** An LF after each message. */
  readonly trailer: boolean;
}

/** RFC 6587 §3.4.1: MSG-LEN SP. */
const octetCount: Framing = {
  size: (_i, n) => decimalDigits(n) + 1 + n,
  head: (out, off, _i, n) => {
    off = writeDecimal(out, off, n);
    out[off++] = 0x20;
    return off;
  },
  trailer: false,
};

/** Decimal digits of a non-negative integer. */
export function decimalDigits(n: number): number {
  if (n < 100_000) return n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : n < 10_000 ? 4 : 5;
  return n < 1_000_000 ? 6 : n < 10_000_000 ? 7 : n < 100_000_000 ? 8 : n < 1_000_000_000 ? 9 : String(n).length;
}

/** Writes `n` in decimal at `off`; returns the offset after it. */
export function writeDecimal(out: Buffer, off: number, n: number): number {
  const d = decimalDigits(n);
  for (let i = off + d - 1; i >= off; i--) {
    out[i] = 0x30 + (n % 10);
    n = Math.floor(n / 10);
  }
  return off + d;
}
