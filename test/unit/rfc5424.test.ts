import { describe, expect, it } from 'vitest';
import { Rfc5424Formatter, escapeSdValue, intakeKeyElement } from '../../src/syslog/format.ts';
import { parseSyslog, type HeaderDefaults } from '../../src/syslog/parse.ts';
import { checkMessage } from '../../src/emulator/intake-emulator.ts';
import { assertRfc5424Frame, octetFrames } from '../helpers/rfc5424-grammar.ts';

const D: HeaderDefaults = { pri: 13, hostname: '', appName: '', procId: '' };
const at = Date.UTC(2026, 10, 22, 10, 0, 0, 123);
const ev = (line: string) => {
  const buf = Buffer.from(line);
  return parseSyslog(buf, 0, buf.length, at, '192.0.2.7', D);
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

  it('converts each distinct source timestamp once, and never reuses one for another value or format', () => {
    const s = new Rfc5424Formatter('K', 'source');
    const ts = (line: string) => s.message(ev(line)).split(' ')[1];
    expect(ts('<13>Nov 22 09:00:00 h a: m')).toMatch(/^2026-11-22T09:00:00\.000/);
    expect(ts('<13>Nov 22 09:00:00 h a: n')).toMatch(/^2026-11-22T09:00:00\.000/);
    expect(ts('<13>Nov 22 09:00:01 h a: m')).toMatch(/^2026-11-22T09:00:01\.000/);
    // Not a valid TIMESTAMP: the reception time, then the cached BSD value is not taken for another.
    expect(ts('<13>1 Nov-22-09:00:01 h a - - - m')).toBe('2026-11-22T10:00:00.123Z');
    expect(ts('<13>Nov 22 09:00:01 h a: m')).toMatch(/^2026-11-22T09:00:01\.000/);
    expect(ts('<13>Foo 22 09:00:01 h a: m')).toBe('2026-11-22T10:00:00.123Z');
    expect(ts('<13>1 2003-10-11T22:14:15.003Z h a - - - m')).toBe('2003-10-11T22:14:15.003Z');
    expect(ts('<13>1 2003-10-11T22:14:15.004Z h a - - - m')).toBe('2003-10-11T22:14:15.004Z');
  });

  it('a repeated BSD timestamp gets the year of each reception time, also across a new year', () => {
    const s = new Rfc5424Formatter('K', 'source');
    const line = Buffer.from('<13>Jan  1 00:00:00 h a: m');
    const tsAt = (when: number) => s.message(parseSyslog(line, 0, line.length, when, '192.0.2.7', D)).split(' ')[1];
    // A sender whose clock is stuck at Jan 1, read over two years: each year's line is that year's.
    expect(tsAt(new Date(2026, 5, 1).getTime())).toMatch(/^2026-01-01T00:00:00\.000/);
    expect(tsAt(new Date(2026, 5, 1, 0, 0, 1).getTime())).toMatch(/^2026-01-01T00:00:00\.000/);
    expect(tsAt(new Date(2027, 5, 1).getTime())).toMatch(/^2027-01-01T00:00:00\.000/);
    // A December line read early in January is last year's; the same line read later in December, this year's.
    const dec = Buffer.from('<13>Dec 31 23:59:59 h a: m');
    const decAt = (when: number) => s.message(parseSyslog(dec, 0, dec.length, when, '192.0.2.7', D)).split(' ')[1];
    expect(decAt(new Date(2027, 0, 1, 0, 0, 5).getTime())).toMatch(/^2026-12-31T23:59:59/);
    expect(decAt(new Date(2027, 11, 31, 23, 59, 58).getTime())).toMatch(/^2027-12-31T23:59:59/);
    expect(decAt(new Date(2027, 11, 5).getTime())).toMatch(/^2027-12-31T23:59:59/);
    expect(decAt(new Date(2027, 10, 29).getTime())).toMatch(/^2026-12-31T23:59:59/);
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

describe('RFC 5424 output follows the grammar whatever came in (issue 12)', () => {
  const f = new Rfc5424Formatter('KEY123', 'received');
  const raw = (...parts: (string | number[])[]) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));
  const evBytes = (b: Buffer) => parseSyslog(b, 0, b.length, at, '192.0.2.7', D);
  const frame = (f: Rfc5424Formatter, b: Buffer) => {
    const out = octetFrames(f.frames([evBytes(b)]));
    expect(out).toHaveLength(1);
    return assertRfc5424Frame(out[0]!);
  };

  it.each([
    ['a NILVALUE SD followed by a character', raw('<34>1 2003-10-11T22:14:15.003Z host su - ID47 -', [0xc3, 0xa9], ' seq=1'), { msg: 'é seq=1' }],
    ['a NILVALUE SD followed by a letter', raw('<34>1 2003-10-11T22:14:15.003Z host su - ID47 -Aseq=2'), { msg: 'Aseq=2' }],
    ['an SD followed by a character', raw('<13>1 - h a - - [x@1 v="1"]', [0xe2, 0x82, 0xac]), { extraSd: '[x@1 v="1"]', msg: '€' }],
    ['control bytes in every 5424 field', raw('<13>1 - h\x00s a\rp p\n1 m\tid - msg'), { hostname: 'h_s', appName: 'a_p', procId: 'p_1', msgId: 'LOG', msg: 'msg' }],
    ['control bytes in a BSD header', raw('<13>Nov 22 10:00:00 ho\x7fst ap\x00p[1\x1b2]: msg'), { hostname: 'ho_st', appName: 'ap_p', procId: '1_2', msg: 'msg' }],
    ['a space in a BSD PID', raw('<13>Nov 22 10:00:00 host app[12 3]: seq=5'), { hostname: 'host', appName: '', procId: '', msg: 'app[12 3]: seq=5' }],
    ['an unescaped ] in an SD value', raw('<13>1 - h a - - [x@1 v="a]b"] m'), { extraSd: '', msg: '[x@1 v="a]b"] m' }],
    ['an SD-NAME with a control byte', raw('<13>1 - h a - - [x\x01@1] m'), { extraSd: '', msg: '[x\x01@1] m' }],
    ['a repeated SD-ID', raw('<13>1 - h a - - [x@1 v="1"][x@1 v="2"] m'), { extraSd: '', msg: '[x@1 v="1"][x@1 v="2"] m' }],
    ['another relay\'s key element first', raw('<13>1 - h a - - [SEKOIA@53288 intake_key="OTHER"][x@1 v="1"] m'), { extraSd: '[x@1 v="1"]', msg: 'm' }],
    ['a key element after another', raw('<13>1 - h a - - [x@1 v="1"][SEKOIA@53288 intake_key="OTHER"] m'), { extraSd: '', msg: '[x@1 v="1"][SEKOIA@53288 intake_key="OTHER"] m' }],
  ])('%s', (_what, line, want) => {
    expect(frame(f, line)).toMatchObject({ intakeKey: 'KEY123', ...want });
  });

  it('writes a source TIMESTAMP only when RFC 5424 allows it: real dates, at most 6 fraction digits', () => {
    const s = new Rfc5424Formatter('K', 'source');
    const ts = (t: string) => frame(s, raw(`<13>1 ${t} h a - - - m`)).timestamp;
    expect(ts('2026-11-22T10:00:00.123456789Z')).toBe('2026-11-22T10:00:00.123456Z');
    expect(ts('2026-11-22T10:00:00.1234567+01:00')).toBe('2026-11-22T10:00:00.123456+01:00');
    expect(ts('2024-02-29T10:00:00Z')).toBe('2024-02-29T10:00:00Z');
    for (const bad of ['2026-13-01T10:00:00Z', '2026-02-29T10:00:00Z', '2026-04-31T10:00:00Z', '2026-11-22T24:00:00Z', '2026-11-22T10:00:60Z', '2026-11-22t10:00:00z', '2026-11-22T10:00:00+25:00']) {
      expect(ts(bad), bad).toBe('2026-11-22T10:00:00.123Z'); // the reception time instead
    }
    expect(frame(s, raw('<13>2026-11-22T10:00:00.123456789+01:00 host app: m')).timestamp).toBe('2026-11-22T10:00:00.123456+01:00');
  });
});
