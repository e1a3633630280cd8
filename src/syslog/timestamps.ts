// Syslog timestamps: the length of a BSD (RFC 3164 §4.1.2) or ISO one at the start of a header,
// and a BSD timestamp (no year, no zone) as RFC 3339 in local time, its year the nearest one.

import { byteAt, indexOfByte, isDigit } from './bytes.ts';

const MONTHS = 'JanFebMarAprMayJunJulAugSepOctNovDec';
/** Each month's three letters as one number (the bytes' values, big-endian). */
const MONTH_CODES = Array.from({ length: 12 }, (_, m) => (MONTHS.charCodeAt(3 * m) << 16) | (MONTHS.charCodeAt(3 * m + 1) << 8) | MONTHS.charCodeAt(3 * m + 2));

/** The last month's code seen: a stream's lines share their month, so the list is rarely searched. */
let lastMonth = 0;

/** Whether `code` is a month's three letters. */
function isMonth(code: number): boolean {
  if (code === lastMonth) return true;
  if (!MONTH_CODES.includes(code)) return false;
  lastMonth = code;
  return true;
}

/** Length of a BSD timestamp at buf[at] ("Mmm dd hh:mm:ss", optional .fraction and year) before `end`, or 0. */
export function bsdTimestampAt(buf: Uint8Array, at: number, end: number): number {
  if (end - at < 15) return 0;
  const month = ((buf[at] as number) << 16) | ((buf[at + 1] as number) << 8) | (buf[at + 2] as number);
  if (!isMonth(month) || buf[at + 3] !== 0x20) return 0;
  const d1 = buf[at + 4] as number;
  if (!(d1 === 0x20 || isDigit(d1)) || !isDigit(buf[at + 5] as number) || buf[at + 6] !== 0x20) return 0;
  let i = at + 7;
  // Some devices put the year here: "Mmm dd yyyy hh:mm:ss".
  if (isDigit(byteAt(buf, i + 2, end)) && byteAt(buf, i + 4, end) === 0x20) i += 5;
  if (!(isDigit(byteAt(buf, i, end)) && isDigit(byteAt(buf, i + 1, end)) && byteAt(buf, i + 2, end) === 0x3a)) return 0;
  if (!(isDigit(byteAt(buf, i + 3, end)) && isDigit(byteAt(buf, i + 4, end)) && byteAt(buf, i + 5, end) === 0x3a)) return 0;
  if (!(isDigit(byteAt(buf, i + 6, end)) && isDigit(byteAt(buf, i + 7, end)))) return 0;
  i += 8;
  if (byteAt(buf, i, end) === 0x2e) {
    // At most 9 fraction digits: more and it is not a timestamp (the text stays in MSG).
    const digits = i + 1;
    i++;
    while (i - digits < 9 && isDigit(byteAt(buf, i, end))) i++;
  }
  return i - at;
}

/** The longest RFC 3339 timestamp read at the start of a BSD line ("2026-11-26T10:00:00.123456789+01:00" is 35). */
const MAX_ISO_TIMESTAMP = 40;

/** Length of an RFC 3339 timestamp at buf[at] (rsyslog's high-precision BSD lines) before `end`, or 0. */
export function isoTimestampAt(buf: Uint8Array, at: number, end: number): number {
  if (!(isDigit(byteAt(buf, at, end)) && byteAt(buf, at + 4, end) === 0x2d && byteAt(buf, at + 10, end) === 0x54)) return 0;
  const sp = indexOfByte(buf, 0x20, at, Math.min(end, at + MAX_ISO_TIMESTAMP + 1));
  return sp < 0 ? 0 : sp - at;
}

export interface BsdConversion {
  readonly text: string;
  /** The same text for any `now` in [validFrom, validUntil): the year inferred stays the same. */
  readonly validFrom: number;
  readonly validUntil: number;
}

const DAY = 86_400_000;

/**
 * An RFC 3339 rendering of a BSD timestamp ("Mmm dd hh:mm:ss", no year, no zone): the relay's
 * local zone, and the year that puts it nearest to `now` (a December line read in January); with
 * the reception times for which that answer holds (a cache's key).
 */
export function bsdConversion(ts: string, now: number): BsdConversion | undefined {
  if (bsdTimestampAt(Buffer.from(ts, 'latin1'), 0, ts.length) === 0) return undefined;
  const month = MONTHS.indexOf(ts.slice(0, 3)) / 3;
  const day = Number(ts.slice(4, 6).trim());
  let rest = ts.slice(7);
  const nowYear = new Date(now).getFullYear();
  let year = nowYear;
  let explicitYear = false;
  if (rest.charCodeAt(4) === 0x20) {
    year = Number(rest.slice(0, 4));
    rest = rest.slice(5);
    explicitYear = true;
  }
  const [hh, mm, ssFrac] = rest.split(':') as [string, string, string];
  const sec = Number(ssFrac.slice(0, 2));
  const frac = ssFrac.length > 3 ? Number(`0${ssFrac.slice(2)}`) : 0;
  // Milliseconds cut, not rounded: .9999 at 23:59:59 on Dec 31 must not become the next year.
  const at = (y: number): Date => new Date(y, month, day, Number(hh), Number(mm), sec, Math.floor(frac * 1000));
  let date = at(year);
  let validFrom = -Infinity;
  let validUntil = Infinity;
  if (!explicitYear) {
    // The year is now's, or the one before when that puts the line more than 31 days ahead: the
    // answer holds while now stays in its year and on the same side of that 31-day line.
    validFrom = new Date(nowYear, 0, 1).getTime();
    validUntil = new Date(nowYear + 1, 0, 1).getTime();
    const turn = date.getTime() - 31 * DAY;
    if (now < turn) {
      date = at(year - 1);
      validUntil = Math.min(validUntil, turn);
    } else {
      validFrom = Math.max(validFrom, turn);
    }
  }
  // No such day (Feb 30, which Date would move into March), or a year RFC 3339 cannot write.
  if (Number.isNaN(date.getTime()) || date.getMonth() !== month || date.getDate() !== day || date.getFullYear() > 9999) return undefined;
  return { text: toRfc3339Local(date), validFrom, validUntil };
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
