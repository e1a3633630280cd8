// Syslog timestamps: the length of a BSD (RFC 3164 §4.1.2) or ISO one at the start of a header,
// and a BSD timestamp (no year, no zone) as RFC 3339 in local time, its year the nearest one.

const MONTHS = 'JanFebMarAprMayJunJulAugSepOctNovDec';

/** Length of a BSD timestamp at `at` ("Mmm dd hh:mm:ss", optional .fraction and year), or 0. */
export function bsdTimestampLength(line: string, at: number): number {
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
export function isoTimestampLength(line: string, at: number): number {
  if (!(isDigit(line.charCodeAt(at)) && line.charCodeAt(at + 4) === 0x2d && line.charCodeAt(at + 10) === 0x54)) return 0;
  const sp = line.indexOf(' ', at);
  return sp < 0 ? 0 : sp - at;
}

function isDigit(ch: number): boolean {
  return ch >= 0x30 && ch <= 0x39;
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
