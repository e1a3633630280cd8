// Lenient syslog header parsing: RFC 5424 (§6), RFC 3164 (§4.1) and the variants real devices send
// (no hostname, no tag, ISO timestamps in BSD lines, a year after the date). A line that matches no
// header is still an event: its whole text becomes the message. Never throws.
//
// The header is read from a latin1 view of the frame, so character offsets are byte offsets and
// nothing is decoded twice; header fields must be printable ASCII in RFC 5424 anyway (other bytes
// become '_'). STRUCTURED-DATA and MSG are kept as byte ranges of the frame. Every cut is made
// just after an ASCII byte (SP, '-', ']', ':', '>'), so a range of a valid UTF-8 frame never splits
// a character. What the relay writes must follow RFC 5424's grammar whatever came in: a field is
// cleaned (and counted) rather than forwarded as is, and text that fits no field stays in MSG.

import type { LogEvent } from '../core/event.ts';
import { bsdTimestampLength, isoTimestampLength } from './timestamps.ts';

/** Values for the header fields a line did not carry (configured per input). */
export interface HeaderDefaults {
  readonly pri: number;
  /** '' = use the sender's address. */
  readonly hostname: string;
  readonly appName: string;
  readonly procId: string;
}

const NON_PRINTABLE = /[^\x21-\x7e]/g;
const MAX_HOSTNAME = 255;
const MAX_APP_NAME = 48;
const MAX_PROCID = 128;
const MAX_MSGID = 32;
/** Bytes decoded to find the header; a longer header (large SD) is read whole. */
const HEADER_SCAN = 256;
/** Substrings this long or longer would keep the whole decoded line alive (V8 sliced strings). */
const SLICE_MIN = 13;

/** Thrown inside a parse when the header runs past the decoded prefix: parse the whole frame. */
const NEED_WHOLE = Symbol('need whole frame');

/**
 * An input's parsing state. The last header field strings: a stream mostly repeats its HOSTNAME,
 * APP-NAME and PROCID, so an equal field reuses the previous string instead of allocating one per
 * event. `repaired`: events whose header did not fit RFC 5424 (a field cleaned or cut, a BSD tag or
 * malformed STRUCTURED-DATA left in MSG), for the input to count and reset once per read.
 */
export interface FieldCache {
  host: string;
  app: string;
  proc: string;
  repaired: number;
}

export function fieldCache(): FieldCache {
  return { host: '', app: '', proc: '', repaired: 0 };
}

interface Ctx {
  readonly cache: FieldCache;
  readonly buf: Buffer;
  readonly start: number;
  readonly end: number;
  line: string;
  /** `line` covers the whole frame. */
  whole: boolean;
  readonly receivedAt: number;
  readonly sender: string;
  readonly d: HeaderDefaults;
  /** Something in the header had to be repaired to fit RFC 5424. */
  repaired: boolean;
}

/**
 * Parse the frame buf[start, end), which must be valid UTF-8 (the input checks or repairs it): the
 * SD and MSG ranges are then valid UTF-8 too.
 */
export function parseSyslog(
  buf: Buffer, start: number, end: number, receivedAt: number, sender: string, defaults: HeaderDefaults,
  cache: FieldCache = fieldCache(),
): LogEvent {
  const scanEnd = Math.min(end, start + HEADER_SCAN);
  const c: Ctx = { cache, buf, start, end, line: buf.toString('latin1', start, scanEnd), whole: scanEnd === end, receivedAt, sender, d: defaults, repaired: false };
  let e = parseWith(c);
  if (!e) {
    c.line = buf.toString('latin1', start, end);
    c.whole = true;
    c.repaired = false;
    e = parseWith(c) as LogEvent;
  }
  if (c.repaired) cache.repaired++;
  return e;
}

/** An event without a syslog header: buf[start, end) is the whole message; fields from `d`. */
export function headerlessEvent(buf: Buffer, start: number, end: number, receivedAt: number, sender: string, d: HeaderDefaults): LogEvent {
  return {
    buf, start, end, sdStart: start, sdEnd: start, msgStart: start, tsStart: start, tsEnd: start,
    receivedAt, sender, pri: d.pri, format: 0, hostname: d.hostname || sender, appName: d.appName, procId: d.procId, msgId: '',
  };
}

function parseWith(c: Ctx): LogEvent | undefined {
  try {
    const pri = parsePri(c.line);
    if (pri >= 0) {
      const close = c.line.indexOf('>');
      if (c.line.charCodeAt(close + 1) === 0x31 /* 1 */ && c.line.charCodeAt(close + 2) === 0x20) {
        const e = parse5424(c, close + 3, pri);
        if (e) return e;
      }
      return parse3164(c, close + 1, pri);
    }
    return event(c, c.d.pri, 0, 0, 0, 0, 0, 0, c.d.hostname || c.sender, c.d.appName, c.d.procId, '');
  } catch (err) {
    if (err === NEED_WHOLE) return undefined;
    throw err;
  }
}

function event(
  c: Ctx, pri: number, format: 0 | 3164 | 5424,
  tsStart: number, tsEnd: number, sdStart: number, sdEnd: number, msgStart: number,
  hostname: string, appName: string, procId: string, msgId: string,
): LogEvent {
  const s = c.start;
  return {
    buf: c.buf,
    start: s,
    end: c.end,
    sdStart: s + sdStart,
    sdEnd: s + sdEnd,
    msgStart: Math.min(s + msgStart, c.end),
    tsStart: s + tsStart,
    tsEnd: s + tsEnd,
    receivedAt: c.receivedAt,
    sender: c.sender,
    pri,
    format,
    hostname,
    appName,
    procId,
    msgId,
  };
}

/** PRI value of `<N>` at the start (1 to 3 digits, at most 191), or -1. */
function parsePri(line: string): number {
  if (line.charCodeAt(0) !== 0x3c) return -1;
  let v = 0;
  let i = 1;
  for (; i < 5 && i < line.length; i++) {
    const ch = line.charCodeAt(i);
    if (ch === 0x3e) break;
    if (ch < 0x30 || ch > 0x39) return -1;
    v = v * 10 + (ch - 0x30);
  }
  if (i === 1 || i >= 5 || line.charCodeAt(i) !== 0x3e || v > 191) return -1;
  return v;
}

/** End of the space-delimited field at `at` (the SP, or the end of the line). */
function fieldEnd(c: Ctx, at: number): number {
  const sp = c.line.indexOf(' ', at);
  if (sp >= 0) return sp;
  if (!c.whole) throw NEED_WHOLE;
  return c.line.length;
}

/** `text`, reusing `prev` when the field has the same characters (no allocation). */
function repeatOr(c: Ctx, prev: string, a: number, b: number, max: number): string {
  if (prev.length === b - a && prev.length > 0 && c.line.startsWith(prev, a)) return prev;
  return text(c, a, b, max);
}

/**
 * A header field as a string of its own (not a slice that would keep the line alive), cut to `max`
 * and cleaned: each byte outside PRINTUSASCII (33..126) becomes '_'. Pure ASCII is no guarantee
 * (CR, LF, NUL, TAB), so every field is checked; the loop is the fast path, the regex the rare one.
 */
function text(c: Ctx, a: number, b: number, max: number): string {
  const line = c.line;
  if (b - a === 1 && line.charCodeAt(a) === 0x2d) return ''; // NILVALUE
  let len = b - a;
  if (len > max) {
    len = max;
    c.repaired = true;
  }
  const s = len >= SLICE_MIN ? c.buf.toString('latin1', c.start + a, c.start + a + len) : line.slice(a, a + len);
  for (let i = a; i < a + len; i++) {
    const ch = line.charCodeAt(i);
    if (ch < 0x21 || ch > 0x7e) {
      c.repaired = true;
      return s.replace(NON_PRINTABLE, '_');
    }
  }
  return s;
}

function parse5424(c: Ctx, at: number, pri: number): LogEvent | undefined {
  const line = c.line;
  const tsEnd = fieldEnd(c, at);
  const hostEnd = fieldEnd(c, tsEnd + 1);
  const appEnd = fieldEnd(c, hostEnd + 1);
  const procEnd = fieldEnd(c, appEnd + 1);
  if (procEnd >= line.length) return undefined; // too few fields: not RFC 5424
  const msgIdEnd = fieldEnd(c, procEnd + 1);
  const sd = msgIdEnd + 1;
  let sdStart = sd;
  let sdEnd = sd;
  let msgStart: number;
  const first = line.charCodeAt(sd);
  if (first === 0x2d /* - */) {
    msgStart = msgAfter(c, sd + 1);
  } else if (first === 0x5b /* [ */) {
    const end = scanStructuredData(line, sd);
    if (end < 0) {
      if (!c.whole) throw NEED_WHOLE;
      // Malformed SD: forwarded verbatim it would break the frame's grammar; as MSG nothing is lost.
      msgStart = sd;
      c.repaired = true;
    } else {
      sdEnd = end;
      msgStart = msgAfter(c, end);
    }
  } else {
    if (sd >= line.length && !c.whole) throw NEED_WHOLE;
    msgStart = sd; // no SD field at all: lenient, the rest is the message
    if (sd < line.length) c.repaired = true;
  }
  if (sdEnd === sd) sdStart = sdEnd = Math.min(msgStart, line.length);
  const cache = c.cache;
  const hostname = (cache.host = repeatOr(c, cache.host, tsEnd + 1, hostEnd, MAX_HOSTNAME));
  const appName = (cache.app = repeatOr(c, cache.app, hostEnd + 1, appEnd, MAX_APP_NAME));
  const procId = (cache.proc = repeatOr(c, cache.proc, appEnd + 1, procEnd, MAX_PROCID));
  const tsNil = tsEnd - at === 1 && line.charCodeAt(at) === 0x2d;
  return event(
    c, pri, 5424, tsNil ? 0 : at, tsNil ? 0 : tsEnd, sdStart, sdEnd, msgStart,
    hostname || c.d.hostname || c.sender,
    appName,
    procId,
    text(c, procEnd + 1, msgIdEnd, MAX_MSGID),
  );
}

/**
 * Where MSG starts after the SD field ending at `at`: past the SP. A byte other than SP starts MSG
 * right there, as rsyslog and syslog-ng read it (skipping it would cut a character in two).
 */
function msgAfter(c: Ctx, at: number): number {
  if (at >= c.line.length) {
    if (!c.whole) throw NEED_WHOLE;
    return at;
  }
  if (c.line.charCodeAt(at) === 0x20) return at + 1;
  c.repaired = true;
  return at;
}

/**
 * End (exclusive) of the SD-ELEMENTs starting at `start`, or -1 unless they follow RFC 5424 §6.3
 * exactly, since they are forwarded verbatim: `[SD-ID *(SP PARAM-NAME="PARAM-VALUE")]`, names of 1
 * to 32 PRINTUSASCII except '=', SP, ']' and '"'; in a value '"', '\\' and ']' must be escaped
 * (a backslash before another character is a plain backslash, §6.3.3).
 */
export function scanStructuredData(line: string, start: number): number {
  let i = start;
  do {
    i = sdNameEnd(line, i + 1); // SD-ID
    if (i < 0) return -1;
    for (;;) {
      const ch = line.charCodeAt(i);
      if (ch === 0x5d) break;
      if (ch !== 0x20) return -1;
      i = sdNameEnd(line, i + 1); // PARAM-NAME
      if (i < 0 || line.charCodeAt(i) !== 0x3d || line.charCodeAt(i + 1) !== 0x22) return -1;
      i = paramValueEnd(line, i + 2);
      if (i < 0) return -1;
    }
    i++;
  } while (line.charCodeAt(i) === 0x5b);
  return i;
}

/** End of the SD-NAME at `at`, or -1 when there is none or it is longer than 32. */
function sdNameEnd(line: string, at: number): number {
  let i = at;
  for (; i < line.length && i - at <= 32; i++) {
    const ch = line.charCodeAt(i);
    if (ch < 0x21 || ch > 0x7e || ch === 0x3d || ch === 0x5d || ch === 0x22) break;
  }
  return i === at || i - at > 32 ? -1 : i;
}

/** Position after the '"' closing the PARAM-VALUE that starts at `at`, or -1. */
function paramValueEnd(line: string, at: number): number {
  for (let i = at; i < line.length; i++) {
    const ch = line.charCodeAt(i);
    if (ch === 0x5c) i++;
    else if (ch === 0x22) return i + 1;
    else if (ch === 0x5d) return -1;
  }
  return -1;
}




function parse3164(c: Ctx, at: number, pri: number): LogEvent {
  const line = c.line;
  let i = at;
  let tsStart = 0;
  let tsEnd = 0;
  let hostname = '';
  const tsLen = bsdTimestampLength(line, i) || isoTimestampLength(line, i);
  if (tsLen > 0 && line.charCodeAt(i + tsLen) === 0x20) {
    tsStart = i;
    tsEnd = i + tsLen;
    i += tsLen + 1;
    // HOSTNAME, unless the next token is already the TAG ("app:" or "app[pid]:").
    const sp = line.indexOf(' ', i);
    if (sp > i) {
      const last = line.charCodeAt(sp - 1);
      const bracket = line.indexOf('[', i);
      if (last !== 0x3a && (bracket < 0 || bracket > sp)) {
        hostname = c.cache.host = repeatOr(c, c.cache.host, i, sp, MAX_HOSTNAME);
        i = sp + 1;
      }
    }
  }
  let appName = '';
  let procId = '';
  const tag = scanTag(c, i);
  if (tag) {
    appName = c.cache.app = repeatOr(c, c.cache.app, i, tag.nameEnd, MAX_APP_NAME);
    if (tag.pidStart > 0) procId = c.cache.proc = repeatOr(c, c.cache.proc, tag.pidStart, tag.pidEnd, MAX_PROCID);
    i = tag.next;
  }
  return event(
    c, pri, 3164, tsStart, tsEnd, i, i, i,
    hostname || c.d.hostname || c.sender,
    appName || c.d.appName,
    procId || (appName ? '' : c.d.procId),
    '',
  );
}

interface Tag {
  nameEnd: number;
  pidStart: number;
  pidEnd: number;
  next: number;
}

/**
 * A TAG at `at`: `name:` or `name[pid]:` followed by a space or the end of the line. "CEF:0|..."
 * (no space after the colon) is not a tag, so such payloads stay whole in the message. Neither is
 * `name[1 2]:`: a space cannot be in PROCID (it would shift every later field), so the text stays
 * whole in MSG (counted as a repair).
 */
function scanTag(c: Ctx, at: number): Tag | undefined {
  const line = c.line;
  const n = line.length;
  let i = at;
  while (i < n && i - at <= MAX_APP_NAME) {
    const ch = line.charCodeAt(i);
    if (ch === 0x3a || ch === 0x5b || ch === 0x20) break;
    i++;
  }
  // A tag cut by the end of the decoded prefix cannot be judged: read the whole frame.
  if (i >= n && !c.whole) throw NEED_WHOLE;
  if (i === at || i >= n || i - at > MAX_APP_NAME) return undefined;
  const nameEnd = i;
  let pidStart = 0;
  let pidEnd = 0;
  if (line.charCodeAt(i) === 0x5b) {
    const close = line.indexOf(']', i);
    if (close < 0 && !c.whole) throw NEED_WHOLE;
    if (close < 0 || close - i > MAX_PROCID + 1) return undefined;
    pidStart = i + 1;
    pidEnd = close;
    i = close + 1;
  }
  let next: number;
  if (i + 1 >= n && !c.whole) throw NEED_WHOLE;
  const ch = line.charCodeAt(i);
  if (ch === 0x3a) {
    i++;
    if (i < n && line.charCodeAt(i) !== 0x20) return undefined;
    next = i < n ? i + 1 : i;
  } else if (ch === 0x20 && pidStart > 0) {
    next = i + 1; // "app[123] msg" without the colon
  } else {
    return undefined;
  }
  if (pidEnd > pidStart) {
    const sp = line.indexOf(' ', pidStart);
    if (sp >= 0 && sp < pidEnd) {
      c.repaired = true;
      return undefined;
    }
  }
  return { nameEnd, pidStart, pidEnd, next };
}


