import { describe, expect, it } from 'vitest';
import { bsdToRfc3339, parseSyslog, type HeaderDefaults } from '../../src/sources/syslog-parse.ts';
import { messageText, structuredDataText, timestampText } from '../../src/core/event.ts';

const D: HeaderDefaults = { pri: 13, hostname: '', appName: '', procId: '' };
const parse = (line: string, d = D) => {
  // Inside a larger buffer, to check that offsets are relative to the frame.
  const buf = Buffer.from(`xx${line}yy`);
  return parseSyslog(buf, 2, buf.length - 2, 1_700_000_000_000, '10.1.2.3', d, /^[\x00-\x7f]*$/.test(line));
};
const pick = (line: string, d = D) => {
  const e = parse(line, d);
  return { pri: e.pri, format: e.format, ts: timestampText(e), host: e.hostname, app: e.appName, pid: e.procId, msgid: e.msgId, sd: structuredDataText(e), msg: messageText(e) };
};

describe('RFC 5424', () => {
  it('parses the RFC examples', () => {
    expect(pick('<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - \'su root\' failed for lonvick on /dev/pts/8')).toEqual({
      pri: 34, format: 5424, ts: '2003-10-11T22:14:15.003Z', host: 'mymachine.example.com', app: 'su', pid: '', msgid: 'ID47', sd: '',
      msg: '\'su root\' failed for lonvick on /dev/pts/8',
    });
    expect(pick('<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"] \uFEFFAn application event')).toMatchObject({
      pri: 165, app: 'evntslog', sd: '[exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"]', msg: '\uFEFFAn application event',
    });
    expect(pick('<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - %% It\'s time to make the do-nuts.')).toMatchObject({
      ts: '2003-08-24T05:14:15.000003-07:00', host: '192.0.2.1', app: 'myproc', pid: '8710', sd: '', msg: '%% It\'s time to make the do-nuts.',
    });
  });

  it('keeps escaped "]" and quotes inside SD values, and an SD-only message', () => {
    expect(pick('<13>1 - h a - - [x@1 v="a\\]b\\"c"]')).toMatchObject({ sd: '[x@1 v="a\\]b\\"c"]', msg: '', ts: '' });
  });

  it('keeps a malformed SD in the message rather than losing it', () => {
    expect(pick('<13>1 - h a - - [unclosed x="1" rest')).toMatchObject({ format: 5424, sd: '', msg: '[unclosed x="1" rest' });
  });

  it('cleans non-ASCII header fields and caps their length', () => {
    const e = pick(`<13>1 - hôst ${'a'.repeat(60)} - - - m`);
    expect(e.host).toBe('h__st'); // one '_' per byte outside printable ASCII
    expect(e.app).toHaveLength(48);
  });
});

describe('RFC 3164 and what devices really send', () => {
  it.each([
    ['<34>Oct 11 22:14:15 mymachine su: \'su root\' failed', { pri: 34, format: 3164, ts: 'Oct 11 22:14:15', host: 'mymachine', app: 'su', pid: '', msg: '\'su root\' failed' }],
    ['<30>Nov  2 07:05:09 web01 systemd[1]: Started foo.', { ts: 'Nov  2 07:05:09', host: 'web01', app: 'systemd', pid: '1', msg: 'Started foo.' }],
    ['<13>Feb  5 17:32:18 10.0.0.99 Use the BFG!', { host: '10.0.0.99', app: '', msg: 'Use the BFG!' }],
    ['<13>Nov 22 22:00:00 sshd[42]: no hostname here', { host: '10.1.2.3', app: 'sshd', pid: '42', msg: 'no hostname here' }],
    ['<14>Nov 22 22:00:00 fw01 CEF:0|Vendor|Product|1.0|100|name|5|src=1.2.3.4', { host: 'fw01', app: '', msg: 'CEF:0|Vendor|Product|1.0|100|name|5|src=1.2.3.4' }],
    ['<166>%ASA-6-302013: Built outbound TCP connection', { ts: '', host: '10.1.2.3', app: '%ASA-6-302013', msg: 'Built outbound TCP connection' }],
    ['<189>date=2024-01-01 time=10:00:00 devname=fg01 type=traffic', { ts: '', app: '', msg: 'date=2024-01-01 time=10:00:00 devname=fg01 type=traffic' }],
    ['<13>2026-11-22T10:00:00.123456+01:00 host app[7]: rsyslog high precision', { ts: '2026-11-22T10:00:00.123456+01:00', host: 'host', app: 'app', pid: '7', msg: 'rsyslog high precision' }],
    ['<13>Nov 22 2026 10:00:00 sw1 year after date', { ts: 'Nov 22 2026 10:00:00', host: 'sw1', msg: 'year after date' }],
    ['<13>Nov 22 10:00:00.123 sw1 app: fraction', { ts: 'Nov 22 10:00:00.123', host: 'sw1', app: 'app', msg: 'fraction' }],
    ['<13>Nov 22 10:00:00 host app[12] no colon', { app: 'app', pid: '12', msg: 'no colon' }],
    ['<13>Nov 22 10:00:00 host app:', { app: 'app', msg: '' }],
    ['<0>1990 Oct 22 10:52:01 TZ-6 scapegoat.dmz.example.org sched[0]: odd', { pri: 0, ts: '', msg: '1990 Oct 22 10:52:01 TZ-6 scapegoat.dmz.example.org sched[0]: odd' }],
  ])('%s', (line, want) => {
    expect(pick(line)).toMatchObject(want);
  });

  it('reads a header longer than the scanned prefix (a large SD)', () => {
    const sd = `[big@1 v="${'x'.repeat(3000)}"]`;
    expect(pick(`<13>1 - h a - - ${sd} after`)).toMatchObject({ sd, msg: 'after' });
  });

  it('treats lines without a valid PRI as headerless, with the input\'s defaults', () => {
    const d: HeaderDefaults = { pri: 14, hostname: 'app-host', appName: 'myapp', procId: '-' };
    for (const line of ['plain text', '<>x', '<1234>x', '<192>too big', '<13 no close', '']) {
      expect(pick(line, d)).toEqual({ pri: 14, format: 0, ts: '', host: 'app-host', app: 'myapp', pid: '-', msgid: '', sd: '', msg: line });
    }
    expect(pick('plain').host).toBe('10.1.2.3');
  });
});

describe('bsdToRfc3339', () => {
  it('picks the nearest year and the local zone', () => {
    const jan2 = new Date(2027, 0, 2, 12).getTime();
    expect(bsdToRfc3339('Dec 31 23:59:59', jan2)).toMatch(/^2026-12-31T23:59:59\.000[+-]\d{2}:\d{2}$/);
    expect(bsdToRfc3339('Jan  1 00:00:01', jan2)).toMatch(/^2027-01-01T00:00:01\.000/);
    expect(bsdToRfc3339('Nov 22 2020 10:00:00.5', jan2)).toMatch(/^2020-11-22T10:00:00\.500/);
    expect(bsdToRfc3339('Foo 22 10:00:00', jan2)).toBeUndefined();
  });
});
