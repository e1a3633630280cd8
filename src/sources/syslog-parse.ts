// Lenient syslog header parsing: RFC 5424 (§6), RFC 3164 (§4.1) and the variants real devices send
// (no hostname, no tag, ISO timestamps in BSD lines, a year after the date). A line that matches no
// header is still an event: its whole text becomes the message. Never throws.

import type { LogEvent } from '../core/event.ts';

/** Values for the header fields a line did not carry (configured per input). */
export interface HeaderDefaults {
  readonly pri: number;
  /** '' = use the sender's address. */
  readonly hostname: string;
  readonly appName: string;
  readonly procId: string;
}

const MONTHS = 'JanFebMarAprMayJunJulAugSepOctNovDec';
const NON_PRINTABLE = /[^\x21-\x7e]/g;
const MAX_HOSTNAME = 255;
const MAX_APP_NAME = 48;
const MAX_PROCID = 128;
const MAX_MSGID = 32;

/**
 * Parse one frame. `ascii` says the line is known to be pure ASCII (checked per read), so header
 * fields need no cleaning; otherwise bytes outside PRINTUSASCII in header fields become '_'.
 */
export function parseSyslog(
  line: string,
  byteSize: number,
  receivedAt: number,
  sender: string,
  defaults: HeaderDefaults,
  ascii: boolean,
): LogEvent {
  const pri = parsePri(line);
  if (pri >= 0) {
    const close = line.indexOf('>');
    if (line.charCodeAt(close + 1) === 0x31 /* 1 */ && line.charCodeAt(close + 2) === 0x20) {
      const e = parse5424(line, close + 3, pri, byteSize, receivedAt, sender, defaults, ascii);
      if (e) return e;
    }
    return parse3164(line, close + 1, pri, byteSize, receivedAt, sender, defaults, ascii);
  }
  return headerless(line, byteSize, receivedAt, sender, defaults);
}

function headerless(line: string, byteSize: number, receivedAt: number, sender: string, d: HeaderDefaults): LogEvent {
  return {
    message: line,
    byteSize,
    receivedAt,
    sender,
    pri: d.pri,
    format: 0,
    timestamp: '',
    hostname: d.hostname || sender,
    appName: d.appName,
    procId: d.procId,
    msgId: '',
    structuredData: '',
  };
}

/** PRI value of `<N>` at the start (1 to 3 digits, at most 191), or -1. */
function parsePri(line: string): number {
  if (line.charCodeAt(0) !== 0x3c) return -1;
  let v = 0;
  let i = 1;
  for (; i < 5 && i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c === 0x3e) break;
    if (c < 0x30 || c > 0x39) return -1;
    v = v * 10 + (c - 0x30);
  }
  if (i === 1 || i >= 5 || line.charCodeAt(i) !== 0x3e || v > 191) return -1;
  return v;
}

function field(line: string, start: number): [value: string, next: number] {
  const sp = line.indexOf(' ', start);
  if (sp < 0) return [line.slice(start), line.length];
  return [line.slice(start, sp), sp + 1];
}

function nil(v: string): string {
  return v === '-' ? '' : v;
}

function clean(v: string, max: number, ascii: boolean): string {
  const s = ascii ? v : v.replace(NON_PRINTABLE, '_');
  return s.length > max ? s.slice(0, max) : s;
}

function parse5424(
  line: string,
  at: number,
  pri: number,
  byteSize: number,
  receivedAt: number,
  sender: string,
  d: HeaderDefaults,
  ascii: boolean,
): LogEvent | undefined {
  const [ts, p1] = field(line, at);
  const [host, p2] = field(line, p1);
  const [app, p3] = field(line, p2);
  const [proc, p4] = field(line, p3);
  const [msgId, p5] = field(line, p4);
  if (p5 >= line.length && p4 >= line.length) return undefined; // too few fields: not 5424
  let structuredData = '';
  let msgStart: number;
  if (line.charCodeAt(p5) === 0x2d /* - */) {
    msgStart = p5 + 2;
  } else if (line.charCodeAt(p5) === 0x5b /* [ */) {
    const end = scanStructuredData(line, p5);
    if (end < 0) {
      msgStart = p5; // malformed SD: keep it as part of the message rather than lose it
    } else {
      structuredData = line.slice(p5, end);
      msgStart = end + 1;
    }
  } else {
    msgStart = p5; // no SD field at all: lenient, the rest is the message
  }
  const hostname = nil(host);
  return {
    message: msgStart < line.length ? line.slice(msgStart) : '',
    byteSize,
    receivedAt,
    sender,
    pri,
    format: 5424,
    timestamp: nil(ts),
    hostname: hostname ? clean(hostname, MAX_HOSTNAME, ascii) : d.hostname || sender,
    appName: clean(nil(app), MAX_APP_NAME, ascii),
    procId: clean(nil(proc), MAX_PROCID, ascii),
    msgId: clean(nil(msgId), MAX_MSGID, ascii),
    structuredData,
  };
}

/**
 * End (exclusive) of the SD-ELEMENTs starting at `start` (RFC 5424 §6.3), or -1 when malformed.
 * Inside a quoted PARAM-VALUE, `\"`, `\\` and `\]` are escapes and `]` does not close.
 */
export function scanStructuredData(line: string, start: number): number {
  let i = start;
  const n = line.length;
  while (i < n && line.charCodeAt(i) === 0x5b) {
    i++;
    let quoted = false;
    let closed = false;
    for (; i < n; i++) {
      const c = line.charCodeAt(i);
      if (quoted) {
        if (c === 0x5c) i++;
        else if (c === 0x22) quoted = false;
      } else if (c === 0x22) {
        quoted = true;
      } else if (c === 0x5d) {
        closed = true;
        i++;
        break;
      }
    }
    if (!closed) return -1;
  }
  if (i < n && line.charCodeAt(i) !== 0x20) return -1;
  return i;
}

/** Length of a BSD timestamp at `at` ("Mmm dd hh:mm:ss", optional .fraction and year), or 0. */
function bsdTimestampLength(line: string, at: number): number {
  if (line.length < at + 15) return 0;
  const m = MONTHS.indexOf(line.slice(at, at + 3));
  if (m < 0 || m % 3 !== 0 || line.charCodeAt(at + 3) !== 0x20) return 0;
  const d1 = line.charCodeAt(at + 4);
  if (!(d1 === 0x20 || isDigit(d1)) || !isDigit(line.charCodeAt(at + 5)) || line.charCodeAt(at + 6) !== 0x20) return 0;
  let i = at + 7;
  // Some devices put the year here: "Mmm dd yyyy hh:mm:ss".
  if (isDigit(line.charCodeAt(i + 2)) && line.charCodeAt(i + 4) === 0x20) i += 5;
  if (!(isDigit(line.charCodeAt(i)) && isDigit(line.charCodeAt(i + 1)) && line.charCodeAt(i + 2) === 0x3a)) return 0;
  if (!(isDigit(line.charCodeAt(i + 3)) && isDigit(line.charCodeAt(i + 4)) && line.charCodeAt(i + 5) === 0x3a)) return 0;
  if (!(isDigit(line.charCodeAt(i + 6)) && isDigit(line.charCodeAt(i + 7)))) return 0;
  i += 8;
  if (line.charCodeAt(i) === 0x2e) {
    i++;
    while (isDigit(line.charCodeAt(i))) i++;
  }
  return i - at;
}

/** Length of an RFC 3339 timestamp at `at` (rsyslog's high-precision BSD lines), or 0. */
function isoTimestampLength(line: string, at: number): number {
  if (!(isDigit(line.charCodeAt(at)) && line.charCodeAt(at + 4) === 0x2d && line.charCodeAt(at + 10) === 0x54)) return 0;
  const sp = line.indexOf(' ', at);
  return sp < 0 ? 0 : sp - at;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function parse3164(
  line: string,
  at: number,
  pri: number,
  byteSize: number,
  receivedAt: number,
  sender: string,
  d: HeaderDefaults,
  ascii: boolean,
): LogEvent {
  let i = at;
  let timestamp = '';
  let hostname = '';
  const tsLen = bsdTimestampLength(line, i) || isoTimestampLength(line, i);
  if (tsLen > 0 && line.charCodeAt(i + tsLen) === 0x20) {
    timestamp = line.slice(i, i + tsLen);
    i += tsLen + 1;
    // HOSTNAME, unless the next token is already the TAG ("app:" or "app[pid]:").
    const sp = line.indexOf(' ', i);
    if (sp > i) {
      const tok = line.slice(i, sp);
      if (!tok.endsWith(':') && !tok.includes('[')) {
        hostname = tok;
        i = sp + 1;
      }
    }
  }
  let appName = '';
  let procId = '';
  const tag = scanTag(line, i);
  if (tag) {
    appName = line.slice(i, tag.nameEnd);
    if (tag.pidStart > 0) procId = line.slice(tag.pidStart, tag.pidEnd);
    i = tag.next;
  }
  return {
    message: i < line.length ? line.slice(i) : '',
    byteSize,
    receivedAt,
    sender,
    pri,
    format: 3164,
    timestamp,
    hostname: hostname ? clean(hostname, MAX_HOSTNAME, ascii) : d.hostname || sender,
    appName: appName ? clean(appName, MAX_APP_NAME, ascii) : d.appName,
    procId: procId ? clean(procId, MAX_PROCID, ascii) : appName ? '' : d.procId,
    msgId: '',
    structuredData: '',
  };
}

interface Tag {
  nameEnd: number;
  pidStart: number;
  pidEnd: number;
  next: number;
}

/**
 * A TAG at `at`: `name:` or `name[pid]:` followed by a space or the end of the line. "CEF:0|..."
 * (no space after the colon) is not a tag, so such payloads stay whole in the message.
 */
function scanTag(line: string, at: number): Tag | undefined {
  const n = line.length;
  let i = at;
  while (i < n && i - at <= MAX_APP_NAME) {
    const c = line.charCodeAt(i);
    if (c === 0x3a || c === 0x5b || c === 0x20) break;
    i++;
  }
  if (i === at || i >= n || i - at > MAX_APP_NAME) return undefined;
  const nameEnd = i;
  let pidStart = 0;
  let pidEnd = 0;
  if (line.charCodeAt(i) === 0x5b) {
    const close = line.indexOf(']', i);
    if (close < 0 || close - i > MAX_PROCID + 1) return undefined;
    pidStart = i + 1;
    pidEnd = close;
    i = close + 1;
    if (line.charCodeAt(i) !== 0x3a) {
      // "app[123] msg" without the colon: accept when a space follows.
      if (line.charCodeAt(i) === 0x20) return { nameEnd, pidStart, pidEnd, next: i + 1 };
      return undefined;
    }
  }
  if (line.charCodeAt(i) !== 0x3a) return undefined;
  i++;
  if (i < n && line.charCodeAt(i) !== 0x20) return undefined;
  return { nameEnd, pidStart, pidEnd, next: i < n ? i + 1 : i };
}

/**
 * An RFC 3339 rendering of a BSD timestamp ("Mmm dd hh:mm:ss", no year, no zone): the relay's
 * local zone, and the year that puts it nearest to `now` (a December line read in January).
 */
export function bsdToRfc3339(ts: string, now: number): string | undefined {
  const len = bsdTimestampLength(ts, 0);
  if (len === 0) return undefined;
  const month = MONTHS.indexOf(ts.slice(0, 3)) / 3;
  const day = Number(ts.slice(4, 6).trim());
  let rest = ts.slice(7);
  let year = new Date(now).getFullYear();
  let explicitYear = false;
  if (rest.charCodeAt(4) === 0x20) {
    year = Number(rest.slice(0, 4));
    rest = rest.slice(5);
    explicitYear = true;
  }
  const [hh, mm, ssFrac] = rest.split(':') as [string, string, string];
  const sec = Number(ssFrac.slice(0, 2));
  const frac = ssFrac.length > 3 ? Number(`0${ssFrac.slice(2)}`) : 0;
  let date = new Date(year, month, day, Number(hh), Number(mm), sec, Math.round(frac * 1000));
  if (!explicitYear && date.getTime() - now > 31 * 86_400_000) {
    date = new Date(year - 1, month, day, Number(hh), Number(mm), sec, Math.round(frac * 1000));
  }
  if (Number.isNaN(date.getTime())) return undefined;
  return toRfc3339Local(date);
}

function toRfc3339Local(d: Date): string {
  const off = -d.getTimezoneOffset();
  const sign = off >= 0 ? '+' : '-';
  const abs = Math.abs(off);
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  return (
    `${p(d.getFullYear(), 4)}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}` +
    `.${p(d.getMilliseconds(), 3)}${sign}${p(Math.floor(abs / 60))}:${p(abs % 60)}`
  );
}
