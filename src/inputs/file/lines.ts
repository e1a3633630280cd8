// The file input's line splitter: the bytes of one file in, complete lines out. LF or CRLF ends a
// line; the last line waits for its newline (or for partial_line_timeout_ms); a line over
// max_line_bytes is split at UTF-8 character boundaries or dropped; latin1 is converted to UTF-8;
// with a multiline start pattern, the lines that do not match it join the event before them.
// No I/O and no timers: the tail loop feeds it and tells it the time, so it is tested on its own.
// Lines are views of the read buffer wherever they can be (no copy): the sink may keep them.

import { isAscii } from 'node:buffer';
import { utf8Boundary } from '../../core/utf8.ts';
import { HEADER_ROOM_BYTES, INTAKE_MAX_EVENT_BYTES } from '../../syslog/format.ts';

const LF = 0x0a;
const CR = 0x0d;

export interface LineOptions {
  readonly maxLineBytes: number;
  readonly oversize: 'split' | 'drop';
  /** The file is latin1 (ISO-8859-1): lines that are not ASCII are converted to UTF-8. */
  readonly latin1: boolean;
  /** A last line without its newline is forwarded once it waited this long (ms); 0: never. */
  readonly partialLineTimeoutMs: number;
  readonly multiline?: {
    /** Matches the first line of an event (tested on the line's bytes read as UTF-8). */
    readonly startPattern: RegExp;
    readonly maxLines: number;
    /** An event is forwarded once no line joined it for this long (ms). */
    readonly timeoutMs: number;
  };
}

/** Where the lines go (the tail loop's event builder). */
export interface LineSink {
  /** The lines that follow are views of `chunk`, or copies: one encoding check can cover them all. */
  begin(chunk: Buffer): void;
  /** One line, or one piece of a split line: buf[start, end), without its LF or CRLF. */
  line(buf: Buffer, start: number, end: number): void;
  /** A line over maxLineBytes is being split (once per line, however many reads it spans). */
  split(): void;
  /** A line over maxLineBytes was dropped (oversize: drop). */
  dropped(): void;
}

interface Group {
  /** Lines of a multiline event so far (views of read buffers). */
  readonly lines: Buffer[];
  bytes: number;
  /** Stream position of the group's first line. */
  readonly start: number;
  lastAt: number;
}

export class LineSplitter {
  readonly #o: LineOptions;
  /** max_line_bytes, and at most what the intake takes once the output's header is added: a piece is never cut there. */
  readonly #max: number;
  readonly #sink: LineSink;
  /** Bytes fed so far: positions of lines in the stream, for `held`. */
  #fed = 0;
  /** The buffer handed out by buffer(), and where the new bytes go in it. */
  #buf: Buffer | undefined;
  #at = 0;
  /** The start of a line whose newline has not come yet. */
  #tail: Buffer | undefined;
  #tailAt = 0;
  #group: Group | undefined;
  /** Dropping the rest of an oversized line (oversize: drop) up to its newline. */
  #discarding = false;
  /** The line being read was already split (and counted) before its newline came. */
  #splitting = false;

  constructor(options: LineOptions, sink: LineSink) {
    this.#o = options;
    this.#sink = sink;
    this.#max = Math.min(options.maxLineBytes, INTAKE_MAX_EVENT_BYTES - HEADER_ROOM_BYTES);
  }

  /**
   * Bytes fed and not forwarded yet (a partial line, a multiline event in the making): a
   * checkpoint stays before them.
   */
  get held(): number {
    return this.#group ? this.#fed - this.#group.start : (this.#tail?.length ?? 0);
  }

  /**
   * A buffer to read up to `room` new bytes into, at `at`: the partial line that waits is copied
   * in front, so that it and its rest are one buffer without a second copy. fill() splits them.
   */
  buffer(room: number): { buf: Buffer; at: number } {
    const tail = this.#tail;
    const at = tail?.length ?? 0;
    const buf = Buffer.allocUnsafeSlow(at + room);
    if (tail) tail.copy(buf, 0);
    this.#buf = buf;
    this.#at = at;
    return { buf, at };
  }

  /** `n` bytes were read into the last buffer() at `now` (ms): forwards the lines they complete. */
  fill(n: number, now: number): void {
    const view = (this.#buf as Buffer).subarray(0, this.#at + n);
    this.#buf = undefined;
    this.#fed += n;
    this.#split(view, this.#fed - view.length, now);
  }

  /** Feeds bytes that are at hand (buffer() and fill() read straight into place). */
  push(chunk: Buffer, now: number): void {
    const { buf, at } = this.buffer(chunk.length);
    chunk.copy(buf, at);
    this.fill(chunk.length, now);
  }

  /**
   * Forwards a partial line that waited partial_line_timeout_ms and a multiline event that waited
   * its timeout_ms, at `now` (ms). Returns whether anything was forwarded.
   */
  due(now: number): boolean {
    let forwarded = false;
    if (this.#tail && this.#o.partialLineTimeoutMs > 0 && now - this.#tailAt >= this.#o.partialLineTimeoutMs) {
      this.#flushTail(this.#tail, now);
      forwarded = true;
    }
    const g = this.#group;
    if (g && now - g.lastAt >= (this.#o.multiline?.timeoutMs ?? 0)) {
      this.#sink.begin(g.lines[0] as Buffer);
      this.#flushGroup();
      forwarded = true;
    }
    return forwarded;
  }

  /** No more bytes will come (the file is let go): forwards whatever waits. */
  end(now: number): void {
    if (this.#tail) this.#flushTail(this.#tail, now);
    if (this.#group) this.#flushGroup();
  }

  /** The bytes start again (the file was truncated): what waits belongs to the old content and goes. */
  reset(): void {
    this.#tail = undefined;
    this.#group = undefined;
    this.#discarding = false;
  }

  /** Splits a read (the partial line before it included) into lines; what follows the last newline waits. */
  #split(view: Buffer, base: number, now: number): void {
    this.#sink.begin(view);
    const max = this.#max;
    let s = 0;
    for (;;) {
      const nl = view.indexOf(LF, s);
      if (nl < 0) break;
      if (this.#discarding) this.#discarding = false;
      else this.#line(view, s, nl > s && view[nl - 1] === CR ? nl - 1 : nl, base + s, now);
      s = nl + 1;
    }
    const rest = view.length - s;
    this.#tail = undefined;
    if (this.#discarding || rest === 0) return;
    if (rest > max) {
      if (this.#o.oversize === 'drop') {
        this.#sink.dropped();
        this.#discarding = true;
        return;
      }
      // Forward whole pieces now; the remainder (under the limit) waits for the newline. The line
      // is counted once, however many reads it spans.
      if (!this.#splitting) this.#sink.split();
      this.#splitting = true;
      while (view.length - s > max) {
        const e = cut(view, s, this.#pieceBytes());
        this.#emit(view, s, e);
        s = e;
      }
    }
    this.#tail = view.subarray(s);
    this.#tailAt = now;
  }

  /** One complete line buf[s, e) at stream position `at`: oversize handling, then multiline grouping. */
  #line(buf: Buffer, s: number, e: number, at: number, now: number): void {
    const max = this.#max;
    const continued = this.#splitting;
    this.#splitting = false;
    if (this.#tooLong(buf, s, e)) {
      if (this.#o.oversize === 'drop') {
        this.#sink.dropped();
        return;
      }
      if (!continued) this.#sink.split();
      this.#flushGroup();
      const piece = this.#pieceBytes();
      while (e - s > piece) {
        const c = cut(buf, s, piece);
        this.#emit(buf, s, c);
        s = c;
      }
      this.#emit(buf, s, e);
      return;
    }
    const ml = this.#o.multiline;
    if (!ml) {
      if (e > s) this.#emit(buf, s, e);
      return;
    }
    const g = this.#group;
    const starts = ml.startPattern.test(buf.toString('utf8', s, e));
    if (g && !starts && g.lines.length < ml.maxLines && g.bytes + 1 + (e - s) <= max) {
      g.lines.push(buf.subarray(s, e));
      g.bytes += 1 + (e - s);
      g.lastAt = now;
      return;
    }
    this.#flushGroup();
    this.#group = { lines: [buf.subarray(s, e)], bytes: e - s, start: at, lastAt: now };
  }

  /** Forwards the multiline event, its lines joined by LF (one line: as it is, if not empty). */
  #flushGroup(): void {
    const g = this.#group;
    if (!g) return;
    this.#group = undefined;
    if (g.lines.length === 1) {
      const only = g.lines[0] as Buffer;
      if (only.length > 0) this.#emit(only, 0, only.length);
      return;
    }
    const joined = Buffer.allocUnsafe(g.bytes);
    let at = 0;
    g.lines.forEach((l, i) => {
      if (i > 0) joined[at++] = LF;
      at += l.copy(joined, at);
    });
    this.#emit(joined, 0, joined.length);
  }

  /** Forwards a line that never got its newline as it is (without a CR that waited for its LF). */
  #flushTail(tail: Buffer, now: number): void {
    this.#tail = undefined;
    this.#sink.begin(tail);
    const end = tail.length > 0 && tail[tail.length - 1] === CR ? tail.length - 1 : tail.length;
    this.#line(tail, 0, end, this.#fed - tail.length, now);
  }

  /**
   * Whether buf[s, e) is over max_line_bytes as forwarded: a Latin-1 line grows by one byte for each
   * byte over 0x7f when it becomes UTF-8.
   */
  #tooLong(buf: Buffer, s: number, e: number): boolean {
    const max = this.#max;
    if (e - s > max) return true;
    if (!this.#o.latin1 || 2 * (e - s) <= max) return false;
    let n = e - s;
    for (let i = s; i < e; i++) if ((buf[i] as number) > 0x7f) n++;
    return n > max;
  }

  /** The bytes of each piece of a line split: as UTF-8, at most max_line_bytes (Latin-1 may double). */
  #pieceBytes(): number {
    return this.#o.latin1 ? Math.max(1, Math.floor(this.#max / 2)) : this.#max;
  }

  #emit(buf: Buffer, s: number, e: number): void {
    if (this.#o.latin1 && !isAscii(buf.subarray(s, e))) {
      const utf8 = Buffer.from(buf.toString('latin1', s, e), 'utf8');
      this.#sink.line(utf8, 0, utf8.length);
      return;
    }
    this.#sink.line(buf, s, e);
  }
}

/** Where to cut a line longer than `max` bytes starting at `s`: at a UTF-8 character boundary. */
function cut(buf: Buffer, s: number, max: number): number {
  const e = utf8Boundary(buf, s, s + max);
  return e > s ? e : s + max;
}
