// Syslog lines for tests: numbered events whose messages a test can list again, in order, to
// compare with what the intake received.

/** A BSD header, the space after the tag included. */
export const BSD_HEADER = '<14>Nov 23 10:00:00 host app: ';

/** One line per event i in [from, to): `header` + message(i) + LF, as one string. */
export function syslogLines(from: number, to: number, message: (i: number) => string, header = BSD_HEADER): string {
  let s = '';
  for (let i = from; i < to; i++) s += `${header}${message(i)}\n`;
  return s;
}

/** The messages of those events: what the intake must receive, in order. */
export function syslogMessages(from: number, to: number, message: (i: number) => string): string[] {
  return Array.from({ length: to - from }, (_, k) => message(from + k));
}
