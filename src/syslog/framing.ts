// Stream deframing for syslog over TCP (RFC 6587): each frame is detected on its own as
// octet-counted (§3.4.1, `MSG-LEN SP SYSLOG-MSG`, the message starting with '<') or as
// non-transparent (§3.4.2, LF-terminated; a CR before the LF is removed). Memory is bounded by
// max_message_bytes plus one read, whatever the sender does.

export type Oversize = 'drop' | 'truncate';

export interface FrameSink {
  /** One frame: bytes [start, end) of `buf`. The deframer never modifies nor reuses `buf`: it may be kept. */
  frame(buf: Buffer, start: number, end: number, truncated: boolean): void;
  /** An oversized frame that was dropped (oversize: drop); `bytes` is its announced or seen size. */
  oversized(bytes: number): void;
}

const LF = 0x0a;
const CR = 0x0d;
const SP = 0x20;
const LT = 0x3c;
const ZERO = 0x30;
const NINE = 0x39;
const MAX_LEN_DIGITS = 9;

export class Deframer {
  readonly #max: number;
  readonly #oversize: Oversize;
  readonly #sink: FrameSink;
  #pending: Buffer | undefined;
  /** Bytes still to discard of an oversized octet-counted frame. */
  #skip = 0;
  /** Discarding up to the next LF: the rest of an oversized line. */
  #discardLine = false;

  constructor(maxMessageBytes: number, oversize: Oversize, sink: FrameSink) {
    this.#max = maxMessageBytes;
    this.#oversize = oversize;
    this.#sink = sink;
  }

  /** Bytes held back waiting for the rest of a frame. */
  get pendingBytes(): number {
    return this.#pending?.length ?? 0;
  }

  push(chunk: Buffer): void {
    const pending = this.#pending;
    if (!pending) {
      this.#consume(chunk);
      return;
    }
    this.#pending = undefined;
    // Complete the frame that straddles the two reads by joining the held bytes with only the
    // part of this read that finishes it; the rest of the read is consumed in place (no copy).
    const need = this.#remainder(pending, chunk);
    if (need > 0 && need <= chunk.length) {
      this.#consume(Buffer.concat([pending, chunk.subarray(0, need)]));
      if (this.#pending === undefined) {
        this.#consume(chunk.subarray(need));
        return;
      }
      const held: Buffer = this.#pending;
      this.#pending = undefined;
      this.#consume(Buffer.concat([held, chunk.subarray(need)]));
      return;
    }
    this.#consume(Buffer.concat([pending, chunk]));
  }

  /** Bytes of `chunk` that complete the frame begun in `pending`, or 0 when that is not known. */
  #remainder(pending: Buffer, chunk: Buffer): number {
    let j = 0;
    let n = 0;
    while (j < pending.length && j < MAX_LEN_DIGITS && (pending[j] as number) >= ZERO && (pending[j] as number) <= NINE) {
      n = n * 10 + (pending[j] as number) - ZERO;
      j++;
    }
    if (j > 0 && j + 1 < pending.length && pending[j] === SP && pending[j + 1] === LT) {
      return n <= this.#max ? j + 1 + n - pending.length : 0;
    }
    if (j === pending.length || j + 1 === pending.length) return 0; // the count itself is cut: rare, join all
    const i = chunk.indexOf(LF);
    return i < 0 ? 0 : i + 1;
  }

  #consume(buf: Buffer): void {
    let pos = 0;
    if (this.#skip > 0) {
      const n = Math.min(this.#skip, buf.length);
      this.#skip -= n;
      pos = n;
    }
    if (this.#discardLine && pos < buf.length) {
      const i = buf.indexOf(LF, pos);
      if (i < 0) return;
      this.#discardLine = false;
      pos = i + 1;
    }
    const len = buf.length;
    while (pos < len) {
      const c = buf[pos] as number;
      if (c === LF || c === CR || c === 0) {
        pos++;
        continue;
      }
      if (c > ZERO && c <= NINE) {
        const r = this.#octetCounted(buf, pos);
        if (r === NEED_MORE) break;
        if (r >= 0) {
          pos = r;
          continue;
        }
      }
      // Non-transparent framing: up to the next LF.
      const i = buf.indexOf(LF, pos);
      if (i < 0) {
        if (len - pos > this.#max) {
          this.#tooLarge(buf, pos, len - pos);
          this.#discardLine = true;
          pos = len;
        }
        break;
      }
      let end = i;
      if (end > pos && buf[end - 1] === CR) end--;
      if (end - pos > this.#max) this.#tooLarge(buf, pos, end - pos);
      else this.#sink.frame(buf, pos, end, false);
      pos = i + 1;
    }
    if (pos < len) this.#pending = Buffer.from(buf.subarray(pos));
  }

  /**
   * Tries an octet-counted frame at `pos`. Returns the position after it, NEED_MORE when the
   * header or body is incomplete, or NOT_OCTET when these bytes are not an octet count.
   */
  #octetCounted(buf: Buffer, pos: number): number {
    let j = pos;
    let n = 0;
    while (j < buf.length && j - pos < MAX_LEN_DIGITS) {
      const d = buf[j] as number;
      if (d < ZERO || d > NINE) break;
      n = n * 10 + (d - ZERO);
      j++;
    }
    if (j + 1 >= buf.length) return j - pos < MAX_LEN_DIGITS ? NEED_MORE : NOT_OCTET;
    if (buf[j] !== SP || buf[j + 1] !== LT) return NOT_OCTET;
    const body = j + 1;
    if (n > this.#max) {
      if (this.#oversize === 'truncate') {
        if (buf.length - body < this.#max) return NEED_MORE;
        this.#sink.frame(buf, body, body + this.#max, true);
      } else {
        this.#sink.oversized(n);
      }
      const available = buf.length - body;
      if (available >= n) return body + n;
      this.#skip = n - available;
      return buf.length;
    }
    if (body + n > buf.length) return NEED_MORE;
    // Senders such as rsyslog's templates end the message with a newline inside the count.
    let end = body + n;
    while (end > body && (buf[end - 1] === LF || buf[end - 1] === CR)) end--;
    this.#sink.frame(buf, body, end, false);
    return body + n;
  }

  #tooLarge(buf: Buffer, start: number, size: number): void {
    if (this.#oversize === 'truncate') this.#sink.frame(buf, start, start + this.#max, true);
    else this.#sink.oversized(size);
  }

  /** The stream ended: what is left is the last frame (a line without LF, or a cut-off body). */
  end(): void {
    const buf = this.#pending;
    this.#pending = undefined;
    this.#skip = 0;
    if (!buf || this.#discardLine) return;
    let start = 0;
    let cut = false;
    let j = 0;
    while (j < buf.length && (buf[j] as number) >= ZERO && (buf[j] as number) <= NINE) j++;
    if (j > 0 && buf[j] === SP && buf[j + 1] === LT) {
      start = j + 1;
      cut = true;
    }
    let end = buf.length;
    while (end > start && (buf[end - 1] === CR || buf[end - 1] === LF)) end--;
    if (end > start) this.#sink.frame(buf, start, Math.min(end, start + this.#max), cut || end - start > this.#max);
  }
}

const NEED_MORE = -2;
const NOT_OCTET = -1;
