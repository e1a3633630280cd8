// ISO 8601 UTC text of a time in ms, as Date.prototype.toISOString writes it, computed without Date.
// V8's toISOString looks up the local time zone's display name on its first call (ICU's time-zone
// name data: about 1 MiB of the executable's pages kept resident), although the text is UTC. The
// daemon writes such times in every log line and every syslog header, so it writes them itself.

const MS_PER_DAY = 86_400_000;
/** Days from 0000-03-01 to 1970-01-01 (the civil-from-days epoch). */
const EPOCH_SHIFT = 719_468;
const TWO = Array.from({ length: 100 }, (_, i) => (i < 10 ? `0${i}` : `${i}`));

/** `YYYY-MM-DDTHH:MM:SS.sssZ` for 0000-01-01 to 9999-12-31; other times as toISOString writes them. */
export function isoUtc(ms: number): string {
  if (!(ms >= -62_167_219_200_000 && ms < 253_402_300_800_000)) return new Date(ms).toISOString();
  const t = Math.trunc(ms);
  const days = Math.floor(t / MS_PER_DAY);
  let rest = t - days * MS_PER_DAY;
  // Howard Hinnant's civil_from_days: proleptic Gregorian, years from March.
  const z = days + EPOCH_SHIFT;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const hh = Math.floor(rest / 3_600_000);
  rest -= hh * 3_600_000;
  const mm = Math.floor(rest / 60_000);
  rest -= mm * 60_000;
  const ss = Math.floor(rest / 1000);
  const msec = rest - ss * 1000;
  return `${String(year).padStart(4, '0')}-${TWO[month]}-${TWO[day]}T${TWO[hh]}:${TWO[mm]}:${TWO[ss]}.${String(msec).padStart(3, '0')}Z`;
}
