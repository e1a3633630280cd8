import { describe, expect, it } from 'vitest';
import { fieldCache, parseSyslog, type HeaderDefaults } from '../../src/syslog/parse.ts';
import { bsdConversion } from '../../src/syslog/timestamps.ts';
import { messageText, structuredDataText, timestampText } from '../../src/core/event.ts';

const D: HeaderDefaults = { pri: 13, hostname: '', appName: '', procId: '' };
const parse = (line: string, d = D) => {
  // Inside a larger buffer, to check that offsets are relative to the frame.
  const buf = Buffer.from(`xx${line}yy`);
  return parseSyslog(buf, 2, buf.length - 2, 1_700_000_000_000, '10.1.2.3', d);
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

describe('a frame inside a shared read buffer', () => {
  it('reads nothing past the frame\'s end, even where the next bytes would complete a field', () => {
    const alone = (line: string) => parseSyslog(Buffer.from(line), 0, Buffer.byteLength(line), 1, '10.1.2.3', D);
    const fields = (e: ReturnType<typeof alone>) => ({ pri: e.pri, format: e.format, ts: timestampText(e), host: e.hostname, app: e.appName, pid: e.procId, msgid: e.msgId, sd: structuredDataText(e), msg: messageText(e) });
    for (const [frame, next] of [
      ['<13>1 - h a -', ' - - msg'], // too few fields for RFC 5424: not completed by the next frame
      ['<13>1 - h a - - [x@1 v="1"', '] m'], // unclosed SD
      ['<13>1 - h a - - [x@1 v="1\\', ']"] m'], // a backslash at the end
      ['<13>1 - h a - ID', '47 - m'], // MSGID
      ['<14>Nov 22 10:00:00 host app[12', ']: m'], // PID
      ['<14>Nov 22 10:00:0', '0 host app: m'], // timestamp
      ['<14>Nov 22 10:00:00 host app', ': m'], // tag
      ['<14', '>m'], // PRI
    ] as const) {
      const buf = Buffer.from(frame + next);
      const e = parseSyslog(buf, 0, Buffer.byteLength(frame), 1, '10.1.2.3', D);
      expect(fields(e), frame).toEqual(fields(alone(frame)));
      expect(e.end).toBe(Buffer.byteLength(frame));
      expect(Math.max(e.msgStart, e.sdEnd, e.tsEnd)).toBeLessThanOrEqual(e.end);
    }
  });

  it('reuses the previous event\'s field strings when the bytes are the same', () => {
    const cache = fieldCache();
    const a = parseSyslog(Buffer.from('<13>1 - host app 12 ID47 - m'), 0, 29, 1, '', D, cache);
    const b = parseSyslog(Buffer.from('<13>1 - host app 12 ID47 - n'), 0, 29, 1, '', D, cache);
    expect([b.hostname, b.appName, b.procId, b.msgId]).toEqual(['host', 'app', '12', 'ID47']);
    expect(b.hostname).toBe(a.hostname);
    const c = parseSyslog(Buffer.from('<13>1 - hosu apq 13 ID48 - m'), 0, 29, 1, '', D, cache);
    expect([c.hostname, c.appName, c.procId, c.msgId]).toEqual(['hosu', 'apq', '13', 'ID48']);
  });
});

describe('a stream parsed with one cache (the header after the timestamp taken whole when it repeats)', () => {
  const fields = (e: ReturnType<typeof parseSyslog>, cache?: ReturnType<typeof fieldCache>) => ({
    pri: e.pri, format: e.format, ts: timestampText(e), host: e.hostname, app: e.appName, pid: e.procId, msgid: e.msgId,
    sd: structuredDataText(e), msg: messageText(e), repaired: cache?.repaired ?? 0,
  });
  const alone = (frame: string, d: HeaderDefaults) => {
    const cache = fieldCache();
    return fields(parseSyslog(Buffer.from(frame), 0, Buffer.byteLength(frame), 1, '10.1.2.3', d, cache), cache);
  };

  it('gives each frame exactly what it gives alone, whatever came before it', () => {
    const heads = [
      '<14>Nov 22 10:00:00 host app[12]: ', '<14>Nov 22 10:00:01 host app[12]: ', '<14>Nov 22 10:00:00 host app: ',
      '<14>Nov 22 10:00:00 host app[12] ', '<14>Nov 22 10:00:00 app[12]: ', '<14>Nov 22 10:00:00 host ', '<14>Nov 22 10:00:00 host app[1 2]: ',
      '<14>Nov 22 10:00:00 host - ', '<14>Nov 22 10:00:00 - app: ', '<14>Nov 22 10:00:00 host app:', '<14>Nov 22 10:00:00 host app[12]:',
      '<14>Nov 22 10:00:00 h\tst app[12]: ', `<14>Nov 22 10:00:00 host ${'a'.repeat(60)}: `, `<14>Nov 22 10:00:00 ${'h'.repeat(120)} app[12]: `,
      '<14>2026-11-22T10:00:00Z host app[12]: ', '<14>host app[12]: ',
      '<13>1 2026-11-22T10:00:00Z host app 12 ID47 ', '<13>1 2026-11-22T10:00:01Z host app 12 ID47 ', '<13>1 - host app 12 ID47 ',
      '<13>1 - host app 12 ', '<13>1 - host app 12 ID47', '<13>1 - h\tst app 12 ID47 ', `<13>1 - host ${'a'.repeat(60)} 12 ID47 `,
      '<13>1 - - - - - ', '<13>1 - host  12 ID47 ',
    ];
    const tails = ['', 'm', ' m', '- m', '[x@1 v="1"] m', '[x@1 v="1"', 'app[12]: m', ': m', 'x'];
    const d: HeaderDefaults = { pri: 13, hostname: '', appName: 'dflt', procId: '7' };
    const frames: string[] = [];
    // A fixed pseudo-random order, so that each header follows many others (and itself).
    let seed = 12345;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let k = 0; k < 3000; k++) frames.push((heads[next(heads.length)] as string) + (tails[next(tails.length)] as string));
    const cache = fieldCache();
    // The frames one after another in one buffer, as in a read.
    const buf = Buffer.from(frames.join(''));
    let at = 0;
    for (const frame of frames) {
      const end = at + Buffer.byteLength(frame);
      cache.repaired = 0;
      const e = parseSyslog(buf, at, end, 1, '10.1.2.3', d, cache);
      expect(fields(e, cache), frame).toEqual(alone(frame, d));
      at = end;
    }
  });

  it('a frame that ends inside the previous header\'s bytes, the read\'s next bytes completing them, is read alone', () => {
    const d: HeaderDefaults = { pri: 13, hostname: '', appName: 'dflt', procId: '7' };
    for (const [first, cut] of [['<14>Nov 22 10:00:00 host app[12]: m', 30], ['<13>1 - host app 12 ID47 - m', 20]] as const) {
      const c = fieldCache();
      parseSyslog(Buffer.from(first), 0, first.length, 1, '10.1.2.3', d, c);
      const e = parseSyslog(Buffer.from(first), 0, cut, 1, '10.1.2.3', d, c);
      expect(fields(e, c), first.slice(0, cut)).toEqual(alone(first.slice(0, cut), d));
    }
  });
});

describe('BSD lines whose first token is not what it looks like', () => {
  it('a token longer than a HOSTNAME may be after the timestamp stays whole in MSG (nothing cut, nothing lost)', () => {
    const json = `{"k":"${'a'.repeat(300)}","ua":"Mozilla/5.0 (X11)"}`;
    expect(pick(`<14>Nov 26 10:00:00 ${json}`)).toMatchObject({ host: '10.1.2.3', app: '', msg: json });
    // 255 characters is still a HOSTNAME.
    expect(pick(`<14>Nov 26 10:00:00 ${'h'.repeat(255)} app: m`)).toMatchObject({ host: 'h'.repeat(255), app: 'app', msg: 'm' });
  });

  it('a timestamp-like token too long to be one is not taken as the TIMESTAMP: it stays in MSG', () => {
    const long = `2026-11-26T10:00:00.${'1'.repeat(60)}Z`;
    expect(pick(`<14>${long} host app: m`)).toMatchObject({ ts: '', msg: `${long} host app: m` });
    const fraction = `Nov 26 10:00:00.${'1'.repeat(20)}`;
    expect(pick(`<14>${fraction} host app: m`)).toMatchObject({ ts: '', msg: `${fraction} host app: m` });
    expect(pick('<14>Nov 26 10:00:00.123456789 host app: m')).toMatchObject({ ts: 'Nov 26 10:00:00.123456789', host: 'host', msg: 'm' });
  });
});

describe('bsdConversion', () => {
  const bsdToRfc3339 = (ts: string, now: number): string | undefined => bsdConversion(ts, now)?.text;
  it('picks the nearest year and the local zone', () => {
    const jan2 = new Date(2027, 0, 2, 12).getTime();
    expect(bsdToRfc3339('Dec 31 23:59:59', jan2)).toMatch(/^2026-12-31T23:59:59\.000[+-]\d{2}:\d{2}$/);
    expect(bsdToRfc3339('Jan  1 00:00:01', jan2)).toMatch(/^2027-01-01T00:00:01\.000/);
    expect(bsdToRfc3339('Nov 22 2020 10:00:00.5', jan2)).toMatch(/^2020-11-22T10:00:00\.500/);
    expect(bsdToRfc3339('Foo 22 10:00:00', jan2)).toBeUndefined();
  });

  it('writes only dates RFC 3339 has: no day that does not exist, no year past 9999, a fraction cut rather than rounded into the next second', () => {
    const jan2 = new Date(2027, 0, 2, 12).getTime();
    expect(bsdToRfc3339('Feb 30 10:00:00', jan2)).toBeUndefined();
    expect(bsdToRfc3339('Feb 29 2023 10:00:00', jan2)).toBeUndefined();
    expect(bsdToRfc3339('Feb 29 2024 10:00:00', jan2)).toMatch(/^2024-02-29T10:00:00\.000/);
    expect(bsdToRfc3339('Dec 31 9999 23:59:59.9999', jan2)).toMatch(/^9999-12-31T23:59:59\.999/);
    expect(bsdToRfc3339('Dec 31 2026 23:59:59.9996', jan2)).toMatch(/^2026-12-31T23:59:59\.999/);
  });
});

describe('what RFC 5424 allows through (issue 12)', () => {
  /** Fields of a frame given as bytes, and whether the parser counted a header repair. */
  const bytes = (b: Buffer) => {
    const cache = fieldCache();
    const buf = Buffer.concat([Buffer.from('xx'), b, Buffer.from('yy')]);
    const e = parseSyslog(buf, 2, buf.length - 2, 1_700_000_000_000, '10.1.2.3', D, cache);
    return {
      host: e.hostname, app: e.appName, pid: e.procId, msgid: e.msgId,
      sd: structuredDataText(e), msg: buf.toString('utf8', e.msgStart, e.end), repaired: cache.repaired,
    };
  };
  const raw = (...parts: (string | number[])[]) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));

  it('keeps the byte after a NILVALUE SD that is not a space: MSG starts there (never half a character)', () => {
    const e = bytes(raw('<34>1 2003-10-11T22:14:15.003Z host su - ID47 -', [0xc3, 0xa9], ' seq=1'));
    expect(e.msg).toBe('é seq=1');
    expect(e.repaired).toBe(1);
    expect(bytes(raw('<34>1 2003-10-11T22:14:15.003Z host su - ID47 -Aseq=2')).msg).toBe('Aseq=2');
    expect(bytes(raw('<34>1 - host su - ID47 - seq=3'))).toMatchObject({ msg: 'seq=3', repaired: 0 });
    expect(bytes(raw('<34>1 - host su - ID47 -'))).toMatchObject({ sd: '', msg: '', repaired: 0 });
  });

  it('each SD-ID once: an SD that repeats one goes into MSG whole, counted as repaired', () => {
    expect(bytes(raw('<13>1 - h a - - [x@1 v="1"][y@2][x@1 v="2"] m'))).toMatchObject({ sd: '', msg: '[x@1 v="1"][y@2][x@1 v="2"] m', repaired: 1 });
    expect(bytes(raw('<13>1 - h a - - [x@1 v="1"][x@12 v="2"] m'))).toMatchObject({ sd: '[x@1 v="1"][x@12 v="2"]', msg: 'm', repaired: 0 });
  });

  it('the relay\'s own element (another relay\'s output sent on): left out first, so that ours is the only one; anywhere else, the SD goes into MSG', () => {
    expect(bytes(raw('<13>1 - h a - - [SEKOIA@53288 intake_key="other"][x@1 v="1"] m'))).toMatchObject({ sd: '[x@1 v="1"]', msg: 'm', repaired: 1 });
    expect(bytes(raw('<13>1 - h a - - [SEKOIA@53288 intake_key="other"] m'))).toMatchObject({ sd: '', msg: 'm', repaired: 1 });
    expect(bytes(raw('<13>1 - h a - - [x@1 v="1"][SEKOIA@53288 intake_key="other"] m'))).toMatchObject({ sd: '', msg: '[x@1 v="1"][SEKOIA@53288 intake_key="other"] m', repaired: 1 });
    // The next frame starts afresh.
    expect(bytes(raw('<13>1 - h a - - [x@1 v="1"] m'))).toMatchObject({ sd: '[x@1 v="1"]', msg: 'm', repaired: 0 });
  });

  it('compares each SD-ID with this frame\'s only: one frame after another in the same read, the second led by a key element', () => {
    const f1 = '<13>1 - h a p m [origin@123 ip="1.2.3.4"] first';
    const f2 = '<13>1 - h a p m [SEKOIA@53288 intake_key="UPSTREAM"][origin@123 ip="1.2.3.4"] second';
    const buf = Buffer.from(`${f1}\n${f2}`);
    parseSyslog(buf, 0, f1.length, 1_700_000_000_000, '10.1.2.3', D);
    const e = parseSyslog(buf, f1.length + 1, buf.length, 1_700_000_000_000, '10.1.2.3', D);
    expect({ sd: structuredDataText(e), msg: buf.toString('utf8', e.msgStart, e.end) }).toEqual({ sd: '[origin@123 ip="1.2.3.4"]', msg: 'second' });
  });

  it('keeps the byte after a closing ] that is not a space: SD stays SD, MSG starts there', () => {
    expect(bytes(raw('<13>1 - h a - - [x@1 v="1"]', [0xc3, 0xa9], 'z'))).toMatchObject({ sd: '[x@1 v="1"]', msg: 'éz', repaired: 1 });
    expect(bytes(raw('<13>1 - h a - - [x@1 v="1"][y@2]Aseq'))).toMatchObject({ sd: '[x@1 v="1"][y@2]', msg: 'Aseq' });
  });

  it('a large SD that ends exactly where the scanned prefix ends is read whole', () => {
    const head = '<13>1 - h a - - ';
    const sd = `[big@1 v="${'x'.repeat(256 - head.length - 12)}"]`;
    expect(head.length + sd.length).toBe(256);
    expect(bytes(raw(head, sd, 'Z rest'))).toMatchObject({ sd, msg: 'Z rest' });
    expect(bytes(raw(head, sd, ' rest'))).toMatchObject({ sd, msg: 'rest', repaired: 0 });
  });

  it('keeps STRUCTURED-DATA outside the RFC grammar in MSG, whole, and counts it', () => {
    for (const sd of ['[x@1 v="a]b"]', '[x@1 v=1]', '[x@1  v="1"]', '[x@1 v="1" ]', '[]', '[x@1 ="1"]', '[a=b]', `[${'n'.repeat(33)}]`, '[x@1 v="1"][', '[x@1 v="1\x00\n"', '[x\x01@1]']) {
      expect(bytes(raw(`<13>1 - h a - - ${sd} m`)), sd).toMatchObject({ sd: '', msg: `${sd} m`, repaired: 1 });
    }
    for (const sd of ['[x@1]', '[x@1 v=""]', '[x@1 v="a\\]b\\"c\\\\d\\e"]', `[${'n'.repeat(32)} ${'p'.repeat(32)}="\x00\n"]`, '[a@1 x="1"][b@2 y="2"]']) {
      expect(bytes(raw(`<13>1 - h a - - ${sd} m`)), sd).toMatchObject({ sd, msg: 'm', repaired: 0 });
    }
  });

  it('cleans control bytes in RFC 5424 header fields even when the frame is pure ASCII', () => {
    const e = bytes(raw('<13>1 - h\x00s\tt a\rp p\n1 m\x7fid - msg'));
    expect(e).toMatchObject({ host: 'h_s_t', app: 'a_p', pid: 'p_1', msgid: 'm_id', msg: 'msg', repaired: 1 });
    expect(bytes(raw('<13>1 - host app 12 ID - msg')).repaired).toBe(0);
  });

  it('cleans control bytes in BSD hostnames, tags and PIDs', () => {
    const e = bytes(raw('<13>Nov 22 10:00:00 ho\x00st ap\x1bp[1\n2]: msg'));
    expect(e).toMatchObject({ host: 'ho_st', app: 'ap_p', pid: '1_2', msg: 'msg', repaired: 1 });
  });

  it('leaves a BSD tag with a space in its PID whole in MSG, with the input\'s defaults, and counts it', () => {
    for (const line of ['<13>Nov 22 10:00:00 host app[12 3]: seq=5', '<13>Nov 22 10:00:00 app[12 3]: seq=5', '<13>Nov 22 10:00:00 host app[1 2] seq=5']) {
      const tag = line.slice(line.indexOf('app['));
      expect(bytes(raw(line)), line).toMatchObject({ app: '', pid: '', msg: tag, repaired: 1 });
    }
    expect(bytes(raw('<13>Nov 22 10:00:00 host app[123]: seq=5'))).toMatchObject({ app: 'app', pid: '123', msg: 'seq=5', repaired: 0 });
    // Brackets that are no tag at all are not counted.
    expect(bytes(raw('<13>Nov 22 10:00:00 host Error[code 5]x'))).toMatchObject({ app: '', repaired: 0 });
  });

  it('a BSD tag cut by the end of the scanned prefix is judged on the whole frame', () => {
    // The 256-byte prefix ends just after "CEF:": only the next byte says it is no tag.
    const host = 'h'.repeat(231);
    expect(pick(`<14>Nov 23 10:00:00 ${host} CEF:0|Vendor|x`)).toMatchObject({ host, app: '', msg: 'CEF:0|Vendor|x' });
    expect(pick(`<14>Nov 23 10:00:00 ${host} app: message`)).toMatchObject({ host, app: 'app', msg: 'message' });
    expect(pick(`<14>Nov 23 10:00:00 ${'h'.repeat(228)} app[12 3]: x`)).toMatchObject({ app: '', msg: 'app[12 3]: x' });
  });

  it('counts a field cut to its RFC length, once per event', () => {
    expect(bytes(raw(`<13>1 - ${'h'.repeat(300)} ${'a'.repeat(60)} - - - m`))).toMatchObject({ app: 'a'.repeat(48), repaired: 1 });
  });

  it('counts a 5424 line whose SD field is neither "-" nor "[": the rest is MSG', () => {
    expect(bytes(raw('<13>1 - h a - - msg without sd'))).toMatchObject({ sd: '', msg: 'msg without sd', repaired: 1 });
  });

  it('does not count the RFC examples', () => {
    for (const line of [
      '<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - \'su root\' failed for lonvick on /dev/pts/8',
      '<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"]',
      '<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - %% It\'s time to make the do-nuts.',
      '<34>Oct 11 22:14:15 mymachine su: \'su root\' failed',
    ]) expect(bytes(raw(line)).repaired, line).toBe(0);
  });
});
