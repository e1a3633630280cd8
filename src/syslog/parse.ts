// Lenient syslog header parsing: RFC 5424 (§6), RFC 3164 (§4.1) and the variants real devices send
// (no hostname, no tag, ISO timestamps in BSD lines, a year after the date). A line that matches no
// header is still an event: its whole text becomes the message. Never throws.
//
// The header is read from the frame's bytes in place: no decoded copy of the line, no per-event
// string but the header fields that changed since the previous event of the stream. Header fields
// must be printable ASCII in RFC 5424 (other bytes become '_'). STRUCTURED-DATA and MSG are kept as
// byte ranges of the frame. Every cut is made just after an ASCII byte (SP, '-', ']', ':', '>'), so
// a range of a valid UTF-8 frame never splits a character. What the relay writes must follow RFC
// 5424's grammar whatever came in: a field is cleaned (and counted) rather than forwarded as is,
// and text that fits no field stays in MSG.

import type { LogEvent } from '../core/event.ts';
import { byteAt, indexOfByte } from './bytes.ts';
import { bsdTimestampAt, isoTimestampAt } from './timestamps.ts';

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

/**
 * An input's parsing state. The last header field strings: a stream mostly repeats its HOSTNAME,
 * APP-NAME, PROCID and MSGID, so a field with the same bytes reuses the previous string instead of
 * allocating one per event. `repaired`: events whose header did not fit RFC 5424 (a field cleaned or
 * cut, a BSD tag or malformed STRUCTURED-DATA left in MSG), for the input to count and reset once
 * per read. `tail`: the last header's fields after its timestamp, by their bytes (see HeaderTail).
 */
export interface FieldCache {
  host: string;
  app: string;
  proc: string;
  msgId: string;
  repaired: number;
  readonly tail: HeaderTail;
}

/**
 * The bytes after the timestamp up to STRUCTURED-DATA (RFC 5424: "host app procid msgid ") or MSG
 * (BSD: "host app[pid]: "), and the fields they gave. Every decision the parser made there looked
 * only at these bytes and found each of them before the end of the frame, so a frame with the same
 * bytes at the same place, and more after them, gives the same fields: they are taken whole, after
 * one comparison, instead of being searched for and compared field by field. Kept only for a
 * header that needed no repair.
 */
interface HeaderTail {
  readonly bytes: Uint8Array;
  /** Bytes held; 0: none. */
  length: number;
  /** Which parse stored it (3164 or 5424): the same bytes mean other fields in the other one. */
  format: number;
  host: string;
  app: string;
  proc: string;
  msgId: string;
}

/** The longest tail kept: longer ones (a 255-byte HOSTNAME) are parsed each time. */
const MAX_TAIL = 128;

export function fieldCache(): FieldCache {
  return {
    host: '', app: '', proc: '', msgId: '', repaired: 0,
    tail: { bytes: new Uint8Array(MAX_TAIL), length: 0, format: 0, host: '', app: '', proc: '', msgId: '' },
  };
}

/** Whether buf[at, end) starts with the tail (of the parse `format`) and has more after it. */
function tailMatches(t: HeaderTail, format: number, buf: Buffer, at: number, end: number): boolean {
  const n = t.length;
  if (n === 0 || t.format !== format || at + n >= end) return false;
  const b = t.bytes;
  for (let k = 0; k < n; k++) if (buf[at + k] !== b[k]) return false;
  return true;
}

/** Keeps buf[at, next) as the tail that gave these fields (none when it is too long). */
function keepTail(t: HeaderTail, format: number, buf: Buffer, at: number, next: number, host: string, app: string, proc: string, msgId: string): void {
  const n = next - at;
  if (n <= 0 || n > MAX_TAIL) {
    t.length = 0;
    return;
  }
  buf.copy(t.bytes, 0, at, next);
  t.length = n;
  t.format = format;
  t.host = host;
  t.app = app;
  t.proc = proc;
  t.msgId = msgId;
}

// Scratch state of the parse in progress (parsing is synchronous, one frame at a time): set by the
// helpers, read by their caller, so that no object is allocated per frame for it.
/** Something in the header had to be repaired to fit RFC 5424. */
let repaired = false;
/** The TAG found by scanTag: its name ends at tagNameEnd; PROCID is [tagPidStart, tagPidEnd), or none when tagPidStart < 0. */
let tagNameEnd = 0;
let tagPidStart = -1;
let tagPidEnd = -1;

/**
 * Parse the frame buf[start, end), which must be valid UTF-8 (the input checks or repairs it): the
 * SD and MSG ranges are then valid UTF-8 too.
 */
export function parseSyslog(
  buf: Buffer, start: number, end: number, receivedAt: number, sender: string, defaults: HeaderDefaults,
  cache: FieldCache = fieldCache(),
): LogEvent {
  repaired = false;
  let e: LogEvent | undefined;
  const close = priClose(buf, start, end);
  if (close > 0) {
    const pri = priValue(buf, start, close);
    if (byteAt(buf, close + 1, end) === 0x31 /* 1 */ && byteAt(buf, close + 2, end) === 0x20) {
      e = parse5424(buf, start, end, close + 3, pri, receivedAt, sender, defaults, cache);
    }
    e ??= parse3164(buf, start, end, close + 1, pri, receivedAt, sender, defaults, cache);
  } else {
    e = event(buf, start, end, defaults.pri, 0, start, start, start, start, start, receivedAt, sender, defaults.hostname || sender, defaults.appName, defaults.procId, '');
  }
  if (repaired) cache.repaired++;
  return e;
}

/** An event without a syslog header: buf[start, end) is the whole message; fields from `d`. */
export function headerlessEvent(buf: Buffer, start: number, end: number, receivedAt: number, sender: string, d: HeaderDefaults): LogEvent {
  return event(buf, start, end, d.pri, 0, start, start, start, start, start, receivedAt, sender, d.hostname || sender, d.appName, d.procId, '');
}

function event(
  buf: Buffer, start: number, end: number, pri: number, format: 0 | 3164 | 5424,
  tsStart: number, tsEnd: number, sdStart: number, sdEnd: number, msgStart: number,
  receivedAt: number, sender: string, hostname: string, appName: string, procId: string, msgId: string,
): LogEvent {
  return { buf, start, end, sdStart, sdEnd, msgStart, tsStart, tsEnd, receivedAt, sender, pri, format, hostname, appName, procId, msgId };
}

/** Index of the '>' closing a PRI `<N>` at the start (1 to 3 digits, at most 191), or -1. */
function priClose(buf: Buffer, start: number, end: number): number {
  if (start >= end || buf[start] !== 0x3c) return -1;
  let v = 0;
  let i = start + 1;
  for (; i < start + 5 && i < end; i++) {
    const ch = buf[i] as number;
    if (ch === 0x3e) break;
    if (ch < 0x30 || ch > 0x39) return -1;
    v = v * 10 + (ch - 0x30);
  }
  if (i === start + 1 || i >= start + 5 || byteAt(buf, i, end) !== 0x3e || v > 191) return -1;
  return i;
}

/** The PRI's digits, between the '<' at `start` and the '>' at `close`, as a number. */
function priValue(buf: Buffer, start: number, close: number): number {
  let v = 0;
  for (let i = start + 1; i < close; i++) v = v * 10 + ((buf[i] as number) - 0x30);
  return v;
}

/** End of the space-delimited field at `at` (the SP, or the end of the frame). */
function fieldEnd(buf: Buffer, at: number, end: number): number {
  const sp = indexOfByte(buf, 0x20, at, end);
  return sp >= 0 ? sp : end;
}

/** The field buf[a, b) as text, reusing `prev` when it has the same characters (no allocation). */
function repeatOr(buf: Buffer, prev: string, a: number, b: number, max: number): string {
  const n = b - a;
  if (n === prev.length && n > 0) {
    let i = 0;
    while (i < n && buf[a + i] === prev.charCodeAt(i)) i++;
    if (i === n) return prev;
  }
  return text(buf, a, b, max);
}

/**
 * A header field as a string, cut to `max` and cleaned: each byte outside PRINTUSASCII (33..126)
 * becomes '_'. Pure ASCII is no guarantee (CR, LF, NUL, TAB), so every field is checked; the loop
 * is the fast path, the regex the rare one. NILVALUE ('-') is ''.
 */
function text(buf: Buffer, a: number, b: number, max: number): string {
  if (b - a === 1 && buf[a] === 0x2d) return '';
  let len = b - a;
  if (len <= 0) return '';
  if (len > max) {
    len = max;
    repaired = true;
  }
  const s = buf.toString('latin1', a, a + len);
  for (let i = a; i < a + len; i++) {
    const ch = buf[i] as number;
    if (ch < 0x21 || ch > 0x7e) {
      repaired = true;
      return s.replace(NON_PRINTABLE, '_');
    }
  }
  return s;
}

function parse5424(
  buf: Buffer, start: number, end: number, at: number, pri: number,
  receivedAt: number, sender: string, d: HeaderDefaults, cache: FieldCache,
): LogEvent | undefined {
  const tsEnd = fieldEnd(buf, at, end);
  const tail = cache.tail;
  let hostname: string;
  let appName: string;
  let procId: string;
  let msgId: string;
  let sd: number;
  if (tailMatches(tail, 5424, buf, tsEnd + 1, end)) {
    ({ host: hostname, app: appName, proc: procId, msgId } = tail);
    sd = tsEnd + 1 + tail.length;
  } else {
    const hostEnd = fieldEnd(buf, tsEnd + 1, end);
    const appEnd = fieldEnd(buf, hostEnd + 1, end);
    const procEnd = fieldEnd(buf, appEnd + 1, end);
    if (procEnd >= end) return undefined; // too few fields: not RFC 5424
    const msgIdEnd = fieldEnd(buf, procEnd + 1, end);
    sd = msgIdEnd + 1;
    hostname = cache.host = repeatOr(buf, cache.host, tsEnd + 1, hostEnd, MAX_HOSTNAME);
    appName = cache.app = repeatOr(buf, cache.app, hostEnd + 1, appEnd, MAX_APP_NAME);
    procId = cache.proc = repeatOr(buf, cache.proc, appEnd + 1, procEnd, MAX_PROCID);
    msgId = cache.msgId = repeatOr(buf, cache.msgId, procEnd + 1, msgIdEnd, MAX_MSGID);
    if (!repaired && msgIdEnd < end) keepTail(tail, 5424, buf, tsEnd + 1, sd, hostname, appName, procId, msgId);
  }
  let sdStart = sd;
  let sdEnd = sd;
  let msgStart: number;
  const first = byteAt(buf, sd, end);
  if (first === 0x2d /* - */) {
    msgStart = msgAfter(buf, sd + 1, end);
  } else if (first === 0x5b /* [ */) {
    const sdClose = scanStructuredData(buf, sd, end);
    if (sdClose < 0) {
      // Malformed SD: forwarded verbatim it would break the frame's grammar; as MSG nothing is lost.
      msgStart = sd;
      repaired = true;
    } else {
      sdEnd = sdClose;
      msgStart = msgAfter(buf, sdClose, end);
      if (ownFirst) {
        // Another relay's key element: ours replaces it (what follows it stays).
        sdStart = ownFirstEnd;
        repaired = true;
      }
    }
  } else {
    msgStart = sd; // no SD field at all: lenient, the rest is the message
    if (sd < end) repaired = true;
  }
  msgStart = Math.min(msgStart, end);
  if (sdEnd === sd || sdStart === sdEnd) sdStart = sdEnd = msgStart;
  const tsNil = tsEnd - at === 1 && buf[at] === 0x2d;
  return event(
    buf, start, end, pri, 5424, tsNil ? start : at, tsNil ? start : tsEnd, sdStart, sdEnd, msgStart,
    receivedAt, sender, hostname || d.hostname || sender, appName, procId, msgId,
  );
}

/**
 * Where MSG starts after the SD field ending at `at`: past the SP. A byte other than SP starts MSG
 * right there, as rsyslog and syslog-ng read it (skipping it would cut a character in two).
 */
function msgAfter(buf: Buffer, at: number, end: number): number {
  if (at >= end) return at;
  if (buf[at] === 0x20) return at + 1;
  repaired = true;
  return at;
}

/**
 * End (exclusive) of the SD-ELEMENTs starting at buf[start], or -1 unless they follow RFC 5424 §6.3
 * exactly before `end`, since they are forwarded verbatim: `[SD-ID *(SP PARAM-NAME="PARAM-VALUE")]`,
 * names of 1 to 32 PRINTUSASCII except '=', SP, ']' and '"'; in a value '"', '\\' and ']' must be
 * escaped (a backslash before another character is a plain backslash, §6.3.3); each SD-ID once, and
 * the relay's own (SEKOIA@53288) only first (ownFirst, ownFirstEnd: the caller leaves it out).
 */
export function scanStructuredData(buf: Uint8Array, start: number, end: number): number {
  let i = start;
  let ids = 0;
  /** SD-IDs stored in sdIds by this scan (the relay's own is not). */
  let stored = 0;
  ownFirst = false;
  do {
    const id = i + 1;
    i = sdNameEnd(buf, id, end); // SD-ID
    if (i < 0) return -1;
    // Each SD-ID once (RFC 5424 §6.3.2): a strict parser refuses a repeated one, and the relay
    // writes its own element first. A source's own-element first (another relay's output, sent
    // on) is left out, replaced by ours; anywhere else the SD is no valid SD for the frame.
    if (sameBytes(buf, id, i, OWN_SD_ID, 0, OWN_SD_ID.length)) {
      if (ids > 0) return -1;
      ownFirst = true;
    } else if (stored < MAX_IDS_CHECKED) {
      for (let k = 0; k < stored; k++) if (sameBytes(buf, id, i, buf, sdIds[2 * k] as number, sdIds[2 * k + 1] as number)) return -1;
      sdIds[2 * stored] = id;
      sdIds[2 * stored + 1] = i;
      stored++;
    }
    ids++;
    for (;;) {
      const ch = byteAt(buf, i, end);
      if (ch === 0x5d) break;
      if (ch !== 0x20) return -1;
      i = sdNameEnd(buf, i + 1, end); // PARAM-NAME
      if (i < 0 || byteAt(buf, i, end) !== 0x3d || byteAt(buf, i + 1, end) !== 0x22) return -1;
      i = paramValueEnd(buf, i + 2, end);
      if (i < 0) return -1;
    }
    i++;
    if (ownFirst && ids === 1) ownFirstEnd = i;
  } while (byteAt(buf, i, end) === 0x5b);
  return i;
}

/** Set by scanStructuredData: the first SD-ELEMENT is the relay's own, and ends at ownFirstEnd. */
let ownFirst = false;
let ownFirstEnd = 0;
/** The SD-ID of the element the relay writes first (the intake key's). */
const OWN_SD_ID = Buffer.from('SEKOIA@53288', 'latin1');
/** SD-IDs compared for repeats (a source writes a few; more than this are not compared). */
const MAX_IDS_CHECKED = 16;
/** Start and end of each SD-ID seen in the current scan. */
const sdIds = new Int32Array(2 * MAX_IDS_CHECKED);

/** Whether a[aStart, aEnd) and b[bStart, bEnd) hold the same bytes. */
function sameBytes(a: Uint8Array, aStart: number, aEnd: number, b: Uint8Array, bStart: number, bEnd: number): boolean {
  if (aEnd - aStart !== bEnd - bStart) return false;
  for (let k = 0; k < aEnd - aStart; k++) if (a[aStart + k] !== b[bStart + k]) return false;
  return true;
}

/** End of the SD-NAME at `at`, or -1 when there is none or it is longer than 32. */
function sdNameEnd(buf: Uint8Array, at: number, end: number): number {
  let i = at;
  for (; i < end && i - at <= 32; i++) {
    const ch = buf[i] as number;
    if (ch < 0x21 || ch > 0x7e || ch === 0x3d || ch === 0x5d || ch === 0x22) break;
  }
  return i === at || i - at > 32 ? -1 : i;
}

/** Position after the '"' closing the PARAM-VALUE that starts at `at`, or -1. */
function paramValueEnd(buf: Uint8Array, at: number, end: number): number {
  for (let i = at; i < end; i++) {
    const ch = buf[i];
    if (ch === 0x5c) i++;
    else if (ch === 0x22) return i + 1;
    else if (ch === 0x5d) return -1;
  }
  return -1;
}

function parse3164(
  buf: Buffer, start: number, end: number, at: number, pri: number,
  receivedAt: number, sender: string, d: HeaderDefaults, cache: FieldCache,
): LogEvent {
  let i = at;
  let tsStart = start;
  let tsEnd = start;
  let hostname = '';
  const tsLen = bsdTimestampAt(buf, i, end) || isoTimestampAt(buf, i, end);
  const stamped = tsLen > 0 && byteAt(buf, i + tsLen, end) === 0x20;
  if (stamped) {
    tsStart = i;
    tsEnd = i + tsLen;
    i += tsLen + 1;
    const tail = cache.tail;
    if (tailMatches(tail, 3164, buf, i, end)) {
      return bsdEvent(buf, start, end, pri, tsStart, tsEnd, i + tail.length, receivedAt, sender, d, tail.host, tail.app, tail.proc);
    }
    // HOSTNAME, unless the next token is already the TAG ("app:" or "app[pid]:"), or is longer
    // than a HOSTNAME may be (a JSON payload right after the timestamp): such text stays whole in MSG.
    const sp = indexOfByte(buf, 0x20, i, Math.min(end, i + MAX_HOSTNAME + 1));
    if (sp > i && buf[sp - 1] !== 0x3a && indexOfByte(buf, 0x5b, i, sp) < 0) {
      hostname = cache.host = repeatOr(buf, cache.host, i, sp, MAX_HOSTNAME);
      i = sp + 1;
    }
  }
  const next = scanTag(buf, i, end);
  if (next < 0) return bsdEvent(buf, start, end, pri, tsStart, tsEnd, i, receivedAt, sender, d, hostname, '', '');
  const appName = (cache.app = repeatOr(buf, cache.app, i, tagNameEnd, MAX_APP_NAME));
  const procId = tagPidStart >= 0 ? (cache.proc = repeatOr(buf, cache.proc, tagPidStart, tagPidEnd, MAX_PROCID)) : '';
  // The tail after a timestamp is kept only with a TAG: without one, the scan for it looked at
  // bytes past the HOSTNAME.
  if (stamped && !repaired && next < end) keepTail(cache.tail, 3164, buf, tsEnd + 1, next, hostname, appName, procId, '');
  return bsdEvent(buf, start, end, pri, tsStart, tsEnd, next, receivedAt, sender, d, hostname, appName, procId);
}

/** A BSD line's event: MSG from `msgStart`; the input's defaults for the fields it did not carry. */
function bsdEvent(
  buf: Buffer, start: number, end: number, pri: number, tsStart: number, tsEnd: number, msgStart: number,
  receivedAt: number, sender: string, d: HeaderDefaults, hostname: string, appName: string, procId: string,
): LogEvent {
  return event(
    buf, start, end, pri, 3164, tsStart, tsEnd, msgStart, msgStart, msgStart, receivedAt, sender,
    hostname || d.hostname || sender,
    appName || d.appName,
    procId || (appName ? '' : d.procId),
    '',
  );
}

/**
 * A TAG at `at`: `name:` or `name[pid]:` followed by a space or the end of the frame. "CEF:0|..."
 * (no space after the colon) is not a tag, so such payloads stay whole in the message. Neither is
 * `name[1 2]:`: a space cannot be in PROCID (it would shift every later field), so the text stays
 * whole in MSG (counted as a repair). Returns where MSG starts after the tag (and sets tagNameEnd,
 * tagPidStart, tagPidEnd), or -1 when there is no tag.
 */
function scanTag(buf: Buffer, at: number, end: number): number {
  let i = at;
  while (i < end && i - at <= MAX_APP_NAME) {
    const ch = buf[i];
    if (ch === 0x3a || ch === 0x5b || ch === 0x20) break;
    i++;
  }
  if (i === at || i >= end || i - at > MAX_APP_NAME) return -1;
  tagNameEnd = i;
  tagPidStart = -1;
  tagPidEnd = -1;
  if (buf[i] === 0x5b) {
    const close = indexOfByte(buf, 0x5d, i, Math.min(end, i + MAX_PROCID + 2));
    if (close < 0) return -1;
    tagPidStart = i + 1;
    tagPidEnd = close;
    i = close + 1;
  }
  let next: number;
  const ch = byteAt(buf, i, end);
  if (ch === 0x3a) {
    i++;
    if (i < end && buf[i] !== 0x20) return -1;
    next = i < end ? i + 1 : i;
  } else if (ch === 0x20 && tagPidStart >= 0) {
    next = i + 1; // "app[123] msg" without the colon
  } else {
    return -1;
  }
  if (tagPidEnd > tagPidStart && indexOfByte(buf, 0x20, tagPidStart, tagPidEnd) >= 0) {
    repaired = true;
    return -1;
  }
  return next;
}
