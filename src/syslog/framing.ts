// Stream deframing for syslog over TCP (RFC 6587): each frame is detected on its own as
// octet-counted (§3.4.1, `MSG-LEN SP SYSLOG-MSG`, the message starting with '<') or as
// non-transparent (§3.4.2, LF-terminated; a CR before the LF is removed). An octet-counted frame
// over max_message_bytes (its count followed by a PRI) is dropped (counted) or truncated, and
// skipped to exactly its announced end, newlines and all. A count over max_message_bytes that no
// PRI follows is no frame: that frame is a line, as rsyslog's imtcp reads it (MaxFrameSize: "change
// to octet stuffing"), so a line that only starts like a count ("999999 <Warning> disk full") is one
// event and the frames after it are kept; too large as a line, it is dropped or truncated and
// reading goes on at its first LF or its announced end, whichever comes first. Memory is bounded by
// max_message_bytes plus one read, whatever the sender does; a frame split over reads is joined
// once, when whole (never a copy per read).

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
const GT = 0x3e;
const ZERO = 0x30;
const NINE = 0x39;
const MAX_LEN_DIGITS = 9;
/** An octet count's header and the byte that tells it from a line: 9 digits, SP, '<'. */
const MAX_HEADER = MAX_LEN_DIGITS + 2;
/**
 * Reads held apart for one frame: past this many they are joined into one buffer. A sender
 * trickling a frame byte by byte costs a copy per this many reads, and a bounded list.
 */
const MAX_PIECES = 1024;

/** #octetCounted and #count: the read ends inside the frame's header or body. */
const NEED_MORE = -2;
/** #octetCounted and #count: these bytes are no octet count (a line). */
const NOT_OCTET = -1;
/** #need: the held bytes end inside an octet count's header: frame or line is not known yet. */
const CUT = 0;
/** #need: the held bytes start a line (#window says how far its LF may be for it to fit). */
const LINE = -1;

export class Deframer {
  readonly #max: number;
  readonly #oversize: Oversize;
  readonly #sink: FrameSink;
  /** The start of a frame that later reads complete (a copy: the read it came from is not kept). */
  #pending: Buffer | undefined;
  /** Reads after #pending, kept as they came until the frame is whole, then joined once. */
  #more: Buffer[] = [];
  #moreLen = 0;
  /** What #pending starts: CUT, a LINE, or (> 0) an octet-counted frame of this many bytes. */
  #need = CUT;
  /** For a LINE: the last offset (from #pending's start) where its LF may be for it to be read whole. */
  #window = 0;
  /** Where the body of the octet count read last starts (set by #count). */
  #body = 0;
  /** Skipping the rest of an oversized frame: up to the next LF, or #discardLeft bytes (its announced end), whichever comes first. */
  #discard = false;
  #discardLeft = Infinity;
  /** The frame being skipped is a real octet-counted one (its count is followed by a PRI): skip exactly, LFs and all. */
  #discardExact = false;

  constructor(maxMessageBytes: number, oversize: Oversize, sink: FrameSink) {
    this.#max = maxMessageBytes;
    this.#oversize = oversize;
    this.#sink = sink;
  }

  /** Bytes held back waiting for the rest of a frame. */
  get pendingBytes(): number {
    return (this.#pending?.length ?? 0) + this.#moreLen;
  }

  push(chunk: Buffer): void {
    let from = 0;
    // Rarely more than one turn: a frame this read completes may leave the start of another held.
    while (this.#pending !== undefined) {
      from = this.#complete(chunk, from);
      if (from >= chunk.length) return;
    }
    this.#consume(chunk, from);
  }

  /** Adds chunk[from...] to the held frame; returns where reading of `chunk` goes on (its length: all taken). */
  #complete(chunk: Buffer, from: number): number {
    const pending = this.#pending as Buffer;
    const rest = chunk.length - from;
    if (this.#need === CUT) {
      // The count itself was cut (at most 10 bytes held): join what tells frame from line, read it again.
      const take = Math.min(rest, MAX_HEADER);
      this.#pending = undefined;
      this.#consume(Buffer.concat([pending, chunk.subarray(from, from + take)]), 0);
      return from + take;
    }
    const have = pending.length + this.#moreLen;
    if (this.#need > 0) {
      // The frame's size is known: join the held bytes with only the part of this read that finishes it.
      const want = this.#need - have;
      if (rest < want) return this.#keep(chunk, from);
      this.#consume(this.#join(chunk, from, from + want), 0);
      return from + want;
    }
    // A line: whole at its LF, too large once past its window (then read far enough to tell).
    const room = this.#window - have;
    const i = chunk.indexOf(LF, from);
    if (i >= 0 && i - from <= room) {
      this.#consume(this.#join(chunk, from, i + 1), 0);
      return i + 1;
    }
    if (rest > room) {
      this.#consume(this.#join(chunk, from, from + room + 1), 0);
      return from + room + 1;
    }
    return this.#keep(chunk, from);
  }

  /** Holds chunk[from...] after the held bytes, without copying it (but for one copy every MAX_PIECES reads). */
  #keep(chunk: Buffer, from: number): number {
    const piece = from === 0 ? chunk : chunk.subarray(from);
    this.#more.push(piece);
    this.#moreLen += piece.length;
    if (this.#more.length >= MAX_PIECES) {
      this.#pending = Buffer.concat([this.#pending as Buffer, ...this.#more]);
      this.#more = [];
      this.#moreLen = 0;
    }
    return chunk.length;
  }

  /** The held bytes and chunk[from, to), in one buffer; nothing is held after. */
  #join(chunk: Buffer, from: number, to: number): Buffer {
    const pending = this.#pending as Buffer;
    const piece = chunk.subarray(from, to);
    this.#pending = undefined;
    if (this.#more.length === 0) return Buffer.concat([pending, piece]);
    const joined = Buffer.concat([pending, ...this.#more, piece]);
    this.#more = [];
    this.#moreLen = 0;
    return joined;
  }

  /** Holds `tail`, the start of a frame that the next reads complete, and notes what it starts. */
  #hold(tail: Buffer): void {
    this.#pending = tail;
    const c = tail[0] as number;
    const end = c > ZERO && c <= NINE ? this.#count(tail, 0) : NOT_OCTET;
    if (end === NEED_MORE) {
      this.#need = CUT;
    } else if (end === NOT_OCTET) {
      this.#need = LINE;
      this.#window = this.#max + 1; // a CR may come before the LF
    } else if (end - this.#body > this.#max) {
      const pri = priLength(tail, this.#body);
      if (pri === NEED_MORE) {
        this.#need = CUT; // a few more bytes tell a real frame (a PRI after the count) from a line
      } else if (pri > 0) {
        this.#need = this.#body + this.#max; // a real frame, truncated: its first max_message_bytes
      } else {
        this.#need = LINE;
        this.#window = this.#body + this.#max;
      }
    } else {
      this.#need = end;
    }
  }

  #consume(buf: Buffer, pos: number): void {
    const len = buf.length;
    if (this.#discard) pos = this.#discarded(buf, pos);
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
        if (len - pos > this.#max + 1) {
          this.#tooLarge(buf, pos, len - pos);
          this.#discard = true;
          this.#discardLeft = Infinity;
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
    if (pos < len) this.#hold(Buffer.from(buf.subarray(pos)));
  }

  /**
   * Reads an octet count (`MSG-LEN SP <`) at `pos`: returns the end of its frame (its body starts at
   * #body), NEED_MORE when the read ends inside the header, NOT_OCTET when these bytes are no count.
   */
  #count(buf: Buffer, pos: number): number {
    const len = buf.length;
    let j = pos;
    let n = 0;
    while (j < len && j - pos < MAX_LEN_DIGITS) {
      const d = buf[j] as number;
      if (d < ZERO || d > NINE) break;
      n = n * 10 + (d - ZERO);
      j++;
    }
    if (j + 1 >= len) return j < len && buf[j] !== SP ? NOT_OCTET : NEED_MORE;
    if (buf[j] !== SP || buf[j + 1] !== LT) return NOT_OCTET;
    this.#body = j + 1;
    return j + 1 + n;
  }

  /**
   * Tries an octet-counted frame at `pos`. Returns the position after it, NEED_MORE when the
   * header or body is incomplete, or NOT_OCTET when these bytes are not an octet count.
   */
  #octetCounted(buf: Buffer, pos: number): number {
    const end = this.#count(buf, pos);
    if (end < 0) return end;
    const body = this.#body;
    if (end - body > this.#max) return this.#overCount(buf, pos, body, end);
    if (end > buf.length) return NEED_MORE;
    // Senders such as rsyslog's templates end the message with a newline inside the count.
    let e = end;
    while (e > body && (buf[e - 1] === LF || buf[e - 1] === CR)) e--;
    this.#sink.frame(buf, body, e, false);
    return end;
  }

  /**
   * A count over max_message_bytes (the frame announced ends at `end`). Followed by a PRI, it is a
   * real frame (#oversizedFrame). Otherwise it only starts like one (`999999 <Warning> ...`), and
   * is read as a line, as rsyslog's imtcp falls back to octet stuffing. One that
   * fits (its LF within max_message_bytes) is an event; otherwise the frame is too large, and what
   * follows its first max_message_bytes is skipped up to the first LF or `end`, whichever comes
   * first (a real oversized octet-counted frame need not end with LF; a line does).
   */
  #overCount(buf: Buffer, pos: number, body: number, end: number): number {
    const pri = priLength(buf, body);
    if (pri === NEED_MORE) return NEED_MORE;
    if (pri > 0) return this.#oversizedFrame(buf, body, end);
    const limit = body + this.#max;
    const i = buf.indexOf(LF, pos);
    if (i >= 0 && i <= limit) {
      let e = i;
      if (e > pos && buf[e - 1] === CR) e--;
      if (e - pos <= this.#max) this.#sink.frame(buf, pos, e, false);
      else this.#oversizedCount(buf, body, e, end - body);
      return i + 1;
    }
    if (buf.length <= limit) return NEED_MORE;
    this.#oversizedCount(buf, body, limit, end - body);
    this.#discard = true;
    this.#discardLeft = end - limit;
    return this.#discarded(buf, limit);
  }

  /**
   * A real octet-counted frame (a PRI after its count) over max_message_bytes, body at `body`, end at
   * `end`: dropped or truncated, and skipped to exactly its end, whatever it holds (a multi-line
   * stack trace, no LF at its end: the frames after it stay in step).
   */
  #oversizedFrame(buf: Buffer, body: number, end: number): number {
    const limit = body + this.#max;
    if (this.#oversize === 'truncate' && buf.length < limit) return NEED_MORE;
    this.#oversizedCount(buf, body, limit, end - body);
    if (end <= buf.length) return end;
    this.#discard = true;
    this.#discardExact = true;
    this.#discardLeft = end - buf.length;
    return buf.length;
  }

  /** An oversized octet-counted frame: dropped, or its message truncated (`stop`: at most max_message_bytes after `body`). */
  #oversizedCount(buf: Buffer, body: number, stop: number, announced: number): void {
    if (this.#oversize === 'truncate') this.#sink.frame(buf, body, stop, true);
    else this.#sink.oversized(announced);
  }

  /** Skips what is left of an oversized frame from `pos`: returns where reading goes on (buf.length: all skipped). */
  #discarded(buf: Buffer, pos: number): number {
    const left = this.#discardLeft;
    const i = this.#discardExact ? -1 : buf.indexOf(LF, pos);
    if (i >= 0 && i - pos < left) {
      this.#discard = false;
      return i + 1;
    }
    if (buf.length - pos >= left) {
      this.#discard = false;
      this.#discardExact = false;
      return pos + left;
    }
    this.#discardLeft = left - (buf.length - pos);
    return buf.length;
  }

  #tooLarge(buf: Buffer, start: number, size: number): void {
    if (this.#oversize === 'truncate') this.#sink.frame(buf, start, start + this.#max, true);
    else this.#sink.oversized(size);
  }

  /** The stream ended: what is left is the last frame (a line without LF, or a cut-off body). */
  end(): void {
    const held = this.#pending;
    const buf = held && this.#more.length > 0 ? Buffer.concat([held, ...this.#more]) : held;
    this.#pending = undefined;
    this.#more = [];
    this.#moreLen = 0;
    this.#discard = false;
    this.#discardExact = false;
    if (!buf) return;
    let start = 0;
    let cut = false;
    if (this.#need > 0) {
      this.#count(buf, 0);
      start = this.#body;
      cut = true;
    }
    let end = buf.length;
    while (end > start && (buf[end - 1] === CR || buf[end - 1] === LF)) end--;
    if (end > start) this.#sink.frame(buf, start, Math.min(end, start + this.#max), cut || end - start > this.#max);
  }
}

/** At `at` (a '<'): the length of a PRI (`<` 1 to 3 digits `>`), 0 when there is none, NEED_MORE when the bytes end first. */
function priLength(buf: Buffer, at: number): number {
  for (let k = at + 1; k <= at + 4; k++) {
    if (k >= buf.length) return NEED_MORE;
    const c = buf[k] as number;
    if (c === GT) return k > at + 1 ? k + 1 - at : 0;
    if (c < ZERO || c > NINE) return 0;
  }
  return 0;
}
