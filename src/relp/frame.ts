// RELP framing (librelp doc/relp.html, "RELP FRAME"):
//   TXNR SP COMMAND SP DATALEN [SP DATA] LF
// TXNR and DATALEN are 1 to 9 digits, COMMAND 1 to 32 letters; a frame without data ends right
// after DATALEN. Reads are deframed in place (frames refer to the read's buffer, never copied
// unless one straddles two reads); memory is bounded by the largest DATALEN accepted plus one read,
// and a frame announcing more is skipped unread (its data is never held).

export interface RelpFrameSink {
  /**
   * A whole frame: its DATA is buf[start, end) (empty when DATALEN is 0). `buf` is never modified
   * nor reused (it may be kept), unless the deframer reads borrowed buffers: then it is valid only
   * during the call.
   */
  frame(txnr: number, command: string, buf: Buffer, start: number, end: number): void;
  /** A frame whose DATALEN is over the limit: its data was skipped, never read into memory. */
  oversized(txnr: number, command: string, datalen: number): void;
}

export const RELP_TXNR_MAX = 999_999_999;
const MAX_DIGITS = 9;
const MAX_COMMAND = 32;
/** TXNR SP COMMAND SP DATALEN SP: the longest header. */
const MAX_HEADER = MAX_DIGITS + 1 + MAX_COMMAND + 1 + MAX_DIGITS + 1;
/** Reads of one frame kept apart at most; then joined (a sender trickling bytes). */
const MAX_PIECES = 1024;
const LF = 0x0a;
const SP = 0x20;
const ZERO = 0x30;
const NINE = 0x39;

/** The commands a session uses, by their bytes, so that parsing one makes no string. */
const KNOWN = ['syslog', 'rsp', 'open', 'close', 'serverclose', 'starttls'].map((c) => [Buffer.from(c), c] as const);

/**
 * The next transaction number after `txnr` (latched at 999,999,999, then 1 again, as relp.html
 * says). librelp itself goes on to 1,000,000,000 before 1: a librelp server may end the session
 * there, once per 10^9 messages of one session; the sink then resends at most its window.
 */
export function nextTxnr(txnr: number): number {
  return txnr >= RELP_TXNR_MAX ? 1 : txnr + 1;
}

/** A frame's header bytes (TXNR SP COMMAND SP DATALEN, and SP when there is data). */
export function relpHeader(txnr: number, command: string, datalen: number): string {
  return datalen > 0 ? `${txnr} ${command} ${datalen} ` : `${txnr} ${command} 0`;
}

/** A whole frame, for commands other than syslog (open, close, rsp, serverclose). */
export function relpFrame(txnr: number, command: string, data: string | Buffer = ''): Buffer {
  const body = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const head = Buffer.from(relpHeader(txnr, command, body.length), 'latin1');
  return Buffer.concat([head, body, Buffer.from('\n')]);
}

export class RelpFramingError extends Error {}

interface Header {
  readonly txnr: number;
  readonly command: string;
  readonly datalen: number;
  /** Offset of DATA (or of the trailer when DATALEN is 0). */
  readonly data: number;
}

const INCOMPLETE = 0;

export class RelpDeframer {
  readonly #maxData: number;
  readonly #sink: RelpFrameSink;
  /** The start of a frame that the next read completes. */
  #pending: Buffer | undefined;
  /** Reads after #pending, kept apart until the frame (#need bytes from #pending's start, once known) is whole. */
  #more: Buffer[] = [];
  #moreLen = 0;
  #need = 0;
  /** Bytes of an oversized frame's DATA still to skip; then its trailer. */
  #skip = 0;
  #skipTrailer = false;
  #error: string | undefined;
  /** Reads are valid only during push() (a socket's one read buffer): what is kept is copied. */
  readonly #borrowed: boolean;

  /**
   * `maxData`: the largest DATALEN read; a larger frame is skipped and reported as oversized.
   * `borrowed`: each read's buffer is reused after push() returns (a socket's `onread` buffer).
   */
  constructor(maxData: number, sink: RelpFrameSink, borrowed = false) {
    this.#maxData = maxData;
    this.#sink = sink;
    this.#borrowed = borrowed;
  }

  /** Bytes held back waiting for the rest of a frame. */
  get pendingBytes(): number {
    return (this.#pending?.length ?? 0) + this.#moreLen;
  }

  /**
   * Deframes one read. Throws RelpFramingError when the stream is not RELP (a bad header, a
   * missing trailer): it cannot be resynchronised, the session must be closed.
   */
  push(chunk: Buffer): void {
    if (this.#error) throw new RelpFramingError(this.#error);
    try {
      this.#push(chunk);
    } catch (err) {
      if (err instanceof RelpFramingError) this.#error = err.message;
      throw err;
    }
  }

  #push(chunk: Buffer): void {
    const pending = this.#pending;
    if (!pending) {
      this.#consume(chunk, 0);
      return;
    }
    if (this.#need > 0) {
      // The frame's size is known: keep the reads until it is whole, then join them once (not
      // once per read: a sender trickling a large frame must not cost a copy per read).
      this.#more.push(this.#borrowed ? Buffer.from(chunk) : chunk);
      this.#moreLen += chunk.length;
      if (pending.length + this.#moreLen < this.#need) {
        // A byte-at-a-time sender: a Buffer object per byte is memory too; join every so often.
        if (this.#more.length >= MAX_PIECES) this.#more = [Buffer.concat(this.#more)];
        return;
      }
      const parts = [pending, ...this.#more];
      this.#pending = undefined;
      this.#more = [];
      this.#moreLen = 0;
      this.#need = 0;
      this.#consume(Buffer.concat(parts), 0);
      return;
    }
    this.#pending = undefined;
    // Join only what completes the frame begun in the last read; the rest is read in place.
    const head = Buffer.concat([pending, chunk.subarray(0, MAX_HEADER)]);
    const h = this.#header(head, 0);
    if (h === INCOMPLETE || h.datalen > this.#maxData) {
      this.#consume(Buffer.concat([pending, chunk]), 0);
      return;
    }
    const need = h.data + h.datalen + 1 - pending.length;
    if (need > chunk.length) {
      this.#pending = pending;
      this.#more = [this.#borrowed ? Buffer.from(chunk) : chunk];
      this.#moreLen = chunk.length;
      this.#need = h.data + h.datalen + 1;
      return;
    }
    this.#consume(Buffer.concat([pending, chunk.subarray(0, need)]), 0);
    this.#consume(chunk, need);
  }

  #consume(buf: Buffer, pos: number): void {
    const len = buf.length;
    if (this.#skip > 0) {
      const n = Math.min(this.#skip, len - pos);
      this.#skip -= n;
      pos += n;
    }
    if (this.#skipTrailer && pos < len && this.#skip === 0) {
      if (buf[pos] !== LF) throw new RelpFramingError('a frame does not end with LF');
      this.#skipTrailer = false;
      pos++;
    }
    while (pos < len) {
      const h = this.#header(buf, pos);
      if (h === INCOMPLETE) break;
      if (h.datalen > this.#maxData) {
        this.#sink.oversized(h.txnr, h.command, h.datalen);
        const available = len - h.data;
        if (available > h.datalen) {
          if (buf[h.data + h.datalen] !== LF) throw new RelpFramingError('a frame does not end with LF');
          pos = h.data + h.datalen + 1;
          continue;
        }
        this.#skip = h.datalen - available;
        this.#skipTrailer = true;
        return;
      }
      const end = h.data + h.datalen;
      if (end >= len) break;
      if (buf[end] !== LF) throw new RelpFramingError('a frame does not end with LF (DATALEN does not match its data)');
      this.#sink.frame(h.txnr, h.command, buf, h.data, end);
      pos = end + 1;
    }
    if (pos < len) this.#pending = Buffer.from(buf.subarray(pos));
  }

  /** Parses a header at `pos`: INCOMPLETE when the read ends inside it. */
  #header(buf: Buffer, pos: number): Header | typeof INCOMPLETE {
    const len = buf.length;
    let j = pos;
    let txnr = 0;
    while (j < len && j - pos < MAX_DIGITS + 1) {
      const d = buf[j] as number;
      if (d < ZERO || d > NINE) break;
      txnr = txnr * 10 + d - ZERO;
      j++;
    }
    if (j === len) return INCOMPLETE;
    if (j === pos || j - pos > MAX_DIGITS || buf[j] !== SP) throw new RelpFramingError('a frame does not start with a transaction number');
    const cmdStart = ++j;
    while (j < len && j - cmdStart <= MAX_COMMAND && isAlpha(buf[j] as number)) j++;
    if (j === len) return INCOMPLETE;
    if (j === cmdStart || j - cmdStart > MAX_COMMAND || buf[j] !== SP) throw new RelpFramingError('a frame has no valid command');
    const command = commandOf(buf, cmdStart, j);
    const lenStart = ++j;
    let datalen = 0;
    while (j < len && j - lenStart <= MAX_DIGITS) {
      const d = buf[j] as number;
      if (d < ZERO || d > NINE) break;
      datalen = datalen * 10 + d - ZERO;
      j++;
    }
    if (j === len) return INCOMPLETE;
    if (j === lenStart || j - lenStart > MAX_DIGITS) throw new RelpFramingError('a frame has no valid DATALEN');
    if (datalen === 0) {
      // No data: the trailer follows DATALEN (some senders put a space before it).
      if (buf[j] === SP) {
        if (j + 1 === len) return INCOMPLETE;
        if (buf[j + 1] === LF) return { txnr, command, datalen, data: j + 1 };
      }
      if (buf[j] !== LF) throw new RelpFramingError('a frame without data does not end after DATALEN');
      return { txnr, command, datalen, data: j };
    }
    if (buf[j] !== SP) throw new RelpFramingError('a frame has no space after DATALEN');
    return { txnr, command, datalen, data: j + 1 };
  }
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= ZERO && c <= NINE;
}

function isAlpha(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a);
}

function commandOf(buf: Buffer, start: number, end: number): string {
  // Byte by byte: Buffer#compare is a call into C++, several times the cost for 3 to 11 bytes.
  for (const [bytes, name] of KNOWN) {
    if (bytes.length !== end - start) continue;
    let i = 0;
    while (i < bytes.length && buf[start + i] === bytes[i]) i++;
    if (i === bytes.length) return name;
  }
  return buf.toString('latin1', start, end);
}

/** An "open" command's or answer's offers: `name[=value[,value...]]` per line (librelp's offers). */
export function parseOffers(text: string): Map<string, string[]> {
  const offers = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const eq = line.indexOf('=');
    const name = eq < 0 ? line : line.slice(0, eq);
    offers.set(name, eq < 0 ? [] : line.slice(eq + 1).split(','));
  }
  return offers;
}

/** A "rsp" frame's data: `CODE [SP TEXT] [LF DATA]`; undefined when it has no 3-digit code. */
export function parseResponse(buf: Buffer, start: number, end: number): { code: number; text: string; data: string } | undefined {
  if (end - start < 3 || !isDigit(buf[start]) || !isDigit(buf[start + 1]) || !isDigit(buf[start + 2])) return undefined;
  // STATUS is exactly 3 digits: "2000" is no 200.
  if (end > start + 3 && buf[start + 3] !== SP && buf[start + 3] !== LF) return undefined;
  const code = Number(buf.toString('latin1', start, start + 3));
  const rest = buf.toString('utf8', start + 3, end);
  const lf = rest.indexOf('\n');
  const line = lf < 0 ? rest : rest.slice(0, lf);
  return { code, text: line.trim().slice(0, 80), data: lf < 0 ? '' : rest.slice(lf + 1) };
}
