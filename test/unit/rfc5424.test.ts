import { describe, expect, it } from 'vitest';
import { Rfc5424Formatter, escapeSdValue, intakeKeyElement } from '../../src/sinks/rfc5424.ts';
import { parseSyslog, type HeaderDefaults } from '../../src/sources/syslog-parse.ts';
import { checkMessage } from '../../src/emulator/intake-emulator.ts';

const D: HeaderDefaults = { pri: 13, hostname: '', appName: '', procId: '' };
const at = Date.UTC(2026, 10, 22, 10, 0, 0, 123);
const ev = (line: string) => {
  const buf = Buffer.from(line);
  return parseSyslog(buf, 0, buf.length, at, '192.0.2.7', D, false);
};

describe('RFC 5424 output', () => {
  const f = new Rfc5424Formatter('KEY123', 'received');

  it('writes the intake key element first, then the source SD, then MSG', () => {
    expect(f.message(ev('<165>1 2003-10-11T22:14:15.003Z host app 42 ID47 [a@1 x="1"] hello'))).toBe(
      '<165>1 2026-11-22T10:00:00.123Z host app 42 LOG [SEKOIA@53288 intake_key="KEY123"][a@1 x="1"] hello',
    );
    expect(f.message(ev('<34>Oct 11 22:14:15 mymachine su: failed'))).toBe(
      '<34>1 2026-11-22T10:00:00.123Z mymachine su - LOG [SEKOIA@53288 intake_key="KEY123"] failed',
    );
    expect(f.message(ev('no header at all'))).toBe('<13>1 2026-11-22T10:00:00.123Z 192.0.2.7 - - LOG [SEKOIA@53288 intake_key="KEY123"] no header at all');
    expect(f.message(ev('<13>1 - h a - - -'))).toBe('<13>1 2026-11-22T10:00:00.123Z h a - LOG [SEKOIA@53288 intake_key="KEY123"]');
  });

  it('uses the source timestamp on request, converting BSD ones', () => {
    const s = new Rfc5424Formatter('K', 'source');
    expect(s.message(ev('<13>1 2003-10-11T22:14:15.003Z h a - - - m'))).toContain(' 2003-10-11T22:14:15.003Z h ');
    expect(s.message(ev('<13>Nov 22 09:00:00 h a: m'))).toMatch(/^<13>1 2026-11-22T09:00:00\.000[+-]\d\d:\d\d h a /);
    expect(s.message(ev('<13>1 - h a - - - m'))).toContain(' 2026-11-22T10:00:00.123Z h ');
  });

  it('frames with byte counts, so multi-byte characters keep the stream in sync', () => {
    const events = [ev('<13>1 - h a - - - héllo €'), ev('plain 日本語')];
    const buf = f.frames(events);
    let pos = 0;
    const got: string[] = [];
    while (pos < buf.length) {
      const sp = buf.indexOf(0x20, pos);
      const n = Number(buf.toString('latin1', pos, sp));
      got.push(buf.toString('utf8', sp + 1, sp + 1 + n));
      pos = sp + 1 + n;
    }
    expect(got).toEqual(events.map((e) => f.message(e)));
    for (const m of got) expect(checkMessage(m).problems).toEqual([]);
  });

  it('escapes SD-PARAM values (RFC 5424 §6.3.3)', () => {
    expect(escapeSdValue('a"b\\c]d')).toBe('a\\"b\\\\c\\]d');
    expect(intakeKeyElement('x]"')).toBe('[SEKOIA@53288 intake_key="x\\]\\""]');
  });
});
