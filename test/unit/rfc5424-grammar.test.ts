// The strict RFC 5424 checker the tests run on every frame the relay writes: it must accept what
// the RFC allows and refuse each thing it does not, or the tests that rely on it prove nothing.
import { describe, expect, it } from 'vitest';
import { assertRfc5424Frame, octetFrames, rfc5424Problems } from '../helpers/rfc5424-grammar.ts';

const K = '[SEKOIA@53288 intake_key="AbC123"]';
const b = (s: string | Buffer) => (typeof s === 'string' ? Buffer.from(s, 'latin1') : s);

describe('assertRfc5424Frame', () => {
  it('accepts what RFC 5424 allows and returns the fields', () => {
    expect(assertRfc5424Frame(b(`<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 LOG ${K}[x@1 a="\\]\\"\\\\ \\q"] %% It's`))).toEqual({
      pri: 165, timestamp: '2003-08-24T05:14:15.000003-07:00', hostname: '192.0.2.1', appName: 'myproc', procId: '8710', msgId: 'LOG',
      intakeKey: 'AbC123', extraSd: '[x@1 a="\\]\\"\\\\ \\q"]', msg: '%% It\'s',
    });
    for (const ok of [
      `<0>1 - - - - - ${K}`,
      `<191>1 2024-02-29T23:59:59Z ${'h'.repeat(255)} ${'a'.repeat(48)} ${'p'.repeat(128)} ${'m'.repeat(32)} ${K} `,
      `<13>1 2026-11-22T10:00:00.1+14:00 h a - - ${K}[a@1][b@2 x="" y="é"] ${'multi\nline\x00 é'}`,
    ]) expect(rfc5424Problems(Buffer.from(ok)), ok).toEqual([]);
  });

  it.each([
    ['no PRI', `1 - h a - - ${K} m`],
    ['PRI over 191', `<192>1 - h a - - ${K} m`],
    ['PRI with a leading zero', `<013>1 - h a - - ${K} m`],
    ['VERSION 2', `<13>2 - h a - - ${K} m`],
    ['a month 13', `<13>1 2026-13-01T00:00:00Z h a - - ${K} m`],
    ['February 30th', `<13>1 2026-02-30T00:00:00Z h a - - ${K} m`],
    ['7 fraction digits', `<13>1 2026-01-01T00:00:00.1234567Z h a - - ${K} m`],
    ['a lower-case z', `<13>1 2026-01-01T00:00:00z h a - - ${K} m`],
    ['a control byte in HOSTNAME', `<13>1 - h\x00 a - - ${K} m`],
    ['a byte over 126 in APP-NAME', `<13>1 - h \xe9 - - ${K} m`],
    ['an extra header field', `<13>1 - h a 12 3 LOG ${K} m`],
    ['an empty field', `<13>1 - h  - - ${K} m`],
    ['HOSTNAME of 256', `<13>1 - ${'h'.repeat(256)} a - - ${K} m`],
    ['APP-NAME of 49', `<13>1 - h ${'a'.repeat(49)} - - ${K} m`],
    ['PROCID of 129', `<13>1 - h a ${'p'.repeat(129)} - ${K} m`],
    ['MSGID of 33', `<13>1 - h a - ${'m'.repeat(33)} ${K} m`],
    ['no intake key element', `<13>1 - h a - - [x@1 a="1"] m`],
    ['the key element second', `<13>1 - h a - - [x@1]${K} m`],
    ['the key element with another parameter', `<13>1 - h a - - [SEKOIA@53288 intake_key="k" x="1"] m`],
    ['an unescaped ] in a value', `<13>1 - h a - - ${K}[x@1 a="]"] m`],
    ['an unclosed value', `<13>1 - h a - - ${K}[x@1 a="1] m`],
    ['an unquoted value', `<13>1 - h a - - ${K}[x@1 a=1] m`],
    ['two spaces before a parameter', `<13>1 - h a - - ${K}[x@1  a="1"] m`],
    ['an SD-ID of 33', `<13>1 - h a - - ${K}[${'x'.repeat(33)}] m`],
    ['an SD-ID with =', `<13>1 - h a - - ${K}[x=1] m`],
    ['MSG without SP', `<13>1 - h a - - ${K}m`],
    ['text between SD elements', `<13>1 - h a - - ${K} [x@1] m`.replace(' [', 'x[')],
  ])('refuses %s', (_what, frame) => {
    expect(rfc5424Problems(b(frame))).toHaveLength(1);
    expect(() => assertRfc5424Frame(b(frame))).toThrow(/^not RFC 5424: /);
  });

  it('refuses invalid UTF-8 in MSG or in a PARAM-VALUE', () => {
    expect(rfc5424Problems(Buffer.concat([b(`<13>1 - h a - - ${K} `), Buffer.from([0xa9]), b(' seq=1')]))).toEqual([expect.stringMatching(/invalid UTF-8/)]);
    expect(rfc5424Problems(Buffer.concat([b(`<13>1 - h a - - ${K}[x@1 a="`), Buffer.from([0xc3]), b('"]')]))).toEqual([expect.stringMatching(/invalid UTF-8/)]);
  });

  it('splits an octet-counted stream and refuses bad framing', () => {
    expect(octetFrames(Buffer.from('3 abc2 é')).map((f) => f.toString())).toEqual(['abc', 'é']);
    expect(() => octetFrames(Buffer.from('3 abc5 é'))).toThrow(/cut/);
    expect(() => octetFrames(Buffer.from('03 abc'))).toThrow(/octet count/);
  });
});
