// The PROXY protocol header parser (v1 text, v2 binary) at every split position, and its refusals.
import { describe, expect, it } from 'vitest';
import { compressIPv6, looksLikeProxyHeader, mayBeProxyHeader, parseProxyHeader, V2_SIGNATURE } from '../../src/inputs/proxy-protocol.ts';

const BOTH = ['v1', 'v2'] as const;

/** A v2 header: command (0 LOCAL, 1 PROXY), family/transport byte, address bytes, then TLV bytes. */
function v2(command: number, famProto: number, body: Buffer, version = 2): Buffer {
  const head = Buffer.alloc(16);
  V2_SIGNATURE.copy(head);
  head[12] = (version << 4) | command;
  head[13] = famProto;
  head.writeUInt16BE(body.length, 14);
  return Buffer.concat([head, body]);
}

function inet(src: number[], sport: number, tlv = Buffer.alloc(0)): Buffer {
  const b = Buffer.alloc(12);
  Buffer.from(src).copy(b, 0);
  Buffer.from([10, 0, 0, 1]).copy(b, 4);
  b.writeUInt16BE(sport, 8);
  b.writeUInt16BE(514, 10);
  return Buffer.concat([b, tlv]);
}

function inet6(groups: number[], sport: number): Buffer {
  const b = Buffer.alloc(36);
  groups.forEach((g, i) => b.writeUInt16BE(g, i * 2));
  b.writeUInt16BE(1, 16 + 14);
  b.writeUInt16BE(sport, 32);
  b.writeUInt16BE(514, 34);
  return b;
}

describe('PROXY protocol v1', () => {
  it('reads TCP4 and TCP6 headers, and leaves what follows', () => {
    const line = Buffer.from('PROXY TCP4 192.0.2.7 10.0.0.1 51234 514\r\n<13>hello\n');
    expect(parseProxyHeader(line, ['v1'])).toEqual({ kind: 'header', version: 'v1', length: 41, source: { address: '192.0.2.7', port: 51234 }, local: false });
    const six = Buffer.from('PROXY TCP6 2001:db8::7 2001:db8::1 65535 0\r\n');
    expect(parseProxyHeader(six, BOTH)).toMatchObject({ kind: 'header', length: six.length, source: { address: '2001:db8::7', port: 65535 } });
  });

  it('writes a TCP6 source as Node writes a peer\'s address, IPv4-mapped ones dotted', () => {
    const src = (a: string) => {
      const r = parseProxyHeader(Buffer.from(`PROXY TCP6 ${a} ::1 1 2\r\n`), ['v1']);
      return r.kind === 'header' ? r.source?.address : r.kind;
    };
    expect(src('::FFFF:a00:1')).toBe('::ffff:10.0.0.1');
    expect(src('0:0:0:0:0:ffff:10.0.0.1')).toBe('::ffff:10.0.0.1');
    expect(src('2001:DB8:0:0:0:0:0:7')).toBe('2001:db8::7');
  });

  it('refuses an IPv6 address with a zone, which Node\'s isIPv6 takes and no URL parser does', () => {
    for (const a of ['fe80::1%eth0', '::1%25', '::1%a/b']) {
      expect(parseProxyHeader(Buffer.from(`PROXY TCP6 ${a} ::1 1000 514\r\n`), ['v1'])).toEqual({ kind: 'invalid', reason: 'version 1 header with an address that is not IPv6' });
      expect(parseProxyHeader(Buffer.from(`PROXY TCP6 ::1 ${a} 1000 514\r\n`), ['v1'])).toMatchObject({ kind: 'invalid' });
    }
  });

  it('UNKNOWN names no sender: the connection\'s own address stands', () => {
    expect(parseProxyHeader(Buffer.from('PROXY UNKNOWN\r\n'), ['v1'])).toEqual({ kind: 'header', version: 'v1', length: 15, source: undefined, local: false });
    expect(parseProxyHeader(Buffer.from('PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n'), ['v1'])).toMatchObject({ kind: 'header', source: undefined });
  });

  it('is partial at every split before the CRLF', () => {
    const line = Buffer.from('PROXY TCP4 192.0.2.7 10.0.0.1 51234 514\r\n');
    for (let i = 1; i < line.length; i++) expect(parseProxyHeader(line.subarray(0, i), BOTH).kind, `at ${i}`).toBe('partial');
  });

  it.each([
    ['PROXY TCP4 192.0.2.300 10.0.0.1 1 2\r\n', 'not IPv4'],
    ['PROXY TCP4 2001:db8::1 10.0.0.1 1 2\r\n', 'not IPv4'],
    ['PROXY TCP6 192.0.2.1 10.0.0.1 1 2\r\n', 'not IPv6'],
    ['PROXY TCP4 192.0.2.1 10.0.0.1 65536 2\r\n', 'bad port'],
    ['PROXY TCP4 192.0.2.1 10.0.0.1 0123 2\r\n', 'bad port'],
    ['PROXY TCP4 192.0.2.1 10.0.0.1 -1 2\r\n', 'bad port'],
    ['PROXY TCP4 192.0.2.1 10.0.0.1 1\r\n', 'malformed'],
    ['PROXY TCP4  192.0.2.1 10.0.0.1 1 2\r\n', 'malformed'],
    ['PROXY UDP4 192.0.2.1 10.0.0.1 1 2\r\n', 'malformed'],
    ['PROXY TCP4 192.0.2.1 10.0.0.1 1 2\n', 'CRLF'],
    ['PROXX TCP4 192.0.2.1 10.0.0.1 1 2\r\n', 'no PROXY'],
  ])('refuses %j (%s)', (text, why) => {
    const r = parseProxyHeader(Buffer.from(text), BOTH);
    expect(r.kind).toBe('invalid');
    expect(r.kind === 'invalid' && r.reason).toContain(why);
  });

  it('refuses a line over 107 bytes without waiting for its end', () => {
    const long = Buffer.from(`PROXY UNKNOWN ${'x'.repeat(100)}`);
    expect(parseProxyHeader(long, ['v1'])).toMatchObject({ kind: 'invalid', reason: expect.stringContaining('107') });
  });

  it('refuses a v1 header where only v2 is accepted, and the other way round', () => {
    expect(parseProxyHeader(Buffer.from('PROXY UNKNOWN\r\n'), ['v2'])).toMatchObject({ kind: 'invalid', reason: expect.stringContaining('version 2 is expected') });
    expect(parseProxyHeader(v2(0, 0, Buffer.alloc(0)), ['v1'])).toMatchObject({ kind: 'invalid', reason: expect.stringContaining('version 1 is expected') });
  });
});

describe('PROXY protocol v2', () => {
  it('reads INET with TLVs skipped, and INET6', () => {
    const h = v2(1, 0x11, inet([198, 51, 100, 9], 40000, Buffer.from([0x04, 0x00, 0x02, 0xaa, 0xbb])));
    expect(parseProxyHeader(Buffer.concat([h, Buffer.from('<13>x')]), BOTH)).toEqual({ kind: 'header', version: 'v2', length: h.length, source: { address: '198.51.100.9', port: 40000 }, local: false });
    const h6 = v2(1, 0x21, inet6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 7], 443));
    expect(parseProxyHeader(h6, ['v2'])).toMatchObject({ kind: 'header', length: 52, source: { address: '2001:db8::7', port: 443 } });
  });

  it('LOCAL, UNSPEC and UNIX name no sender; LOCAL says it is the balancer\'s own connection', () => {
    expect(parseProxyHeader(v2(0, 0x00, Buffer.alloc(0)), BOTH)).toEqual({ kind: 'header', version: 'v2', length: 16, source: undefined, local: true });
    expect(parseProxyHeader(v2(0, 0x11, inet([1, 2, 3, 4], 1)), BOTH)).toMatchObject({ kind: 'header', source: undefined, local: true });
    expect(parseProxyHeader(v2(1, 0x31, Buffer.alloc(216)), BOTH)).toMatchObject({ kind: 'header', length: 232, source: undefined, local: false });
    expect(parseProxyHeader(v2(1, 0x00, Buffer.alloc(0)), BOTH)).toMatchObject({ kind: 'header', source: undefined, local: false });
  });

  it('is partial at every split of a header', () => {
    const h = v2(1, 0x11, inet([198, 51, 100, 9], 40000, Buffer.alloc(20)));
    for (let i = 1; i < h.length; i++) expect(parseProxyHeader(h.subarray(0, i), BOTH).kind, `at ${i}`).toBe('partial');
    expect(parseProxyHeader(h, BOTH).kind).toBe('header');
  });

  it.each([
    [v2(1, 0x11, inet([1, 2, 3, 4], 1), 1), 'version 1'],
    [v2(2, 0x11, inet([1, 2, 3, 4], 1)), 'unknown command'],
    [v2(1, 0x41, inet([1, 2, 3, 4], 1)), 'family'],
    [v2(1, 0x13, inet([1, 2, 3, 4], 1)), 'family'],
    [v2(1, 0x11, Buffer.alloc(8)), 'too short'],
    [v2(1, 0x21, Buffer.alloc(12)), 'too short'],
  ])('refuses a bad header (%#: %s)', (h, why) => {
    expect(parseProxyHeader(h, BOTH)).toMatchObject({ kind: 'invalid', reason: expect.stringContaining(why) });
  });
});

describe('telling a header from syslog', () => {
  it('a stream that starts like neither is no header', () => {
    for (const s of ['<13>Oct 11 22:14:15 host app: x\n', '57 <13>1 - - - - - - x', '\x16\x03\x01']) {
      expect(looksLikeProxyHeader(Buffer.from(s)), s).toBe(false);
      expect(mayBeProxyHeader(Buffer.from(s)), s).toBe(false);
      expect(parseProxyHeader(Buffer.from(s), BOTH).kind).toBe('invalid');
    }
  });

  it('waits while the first bytes are a prefix of a signature, and knows once they are whole', () => {
    expect(mayBeProxyHeader(Buffer.from('PRO'))).toBe(true);
    expect(mayBeProxyHeader(Buffer.from('\r\n\r\n'))).toBe(true);
    expect(mayBeProxyHeader(Buffer.from('PROXY '))).toBe(false);
    expect(looksLikeProxyHeader(Buffer.from('PROXY TCP4'))).toBe(true);
    expect(looksLikeProxyHeader(V2_SIGNATURE)).toBe(true);
    // An empty line then syslog: not the v2 signature once 12 bytes are in.
    expect(looksLikeProxyHeader(Buffer.from('\r\n<13>hello world\n'))).toBe(false);
  });
});

describe('compressIPv6', () => {
  it.each([
    [[0x2001, 0xdb8, 0, 0, 0, 0, 0, 1], '2001:db8::1'],
    [[0, 0, 0, 0, 0, 0, 0, 1], '::1'],
    [[0, 0, 0, 0, 0, 0, 0, 0], '::'],
    [[0x2001, 0xdb8, 0, 1, 0, 0, 0, 1], '2001:db8:0:1::1'],
    [[0x2001, 0, 0, 1, 0, 0, 0, 1], '2001:0:0:1::1'],
    [[0x2001, 0xdb8, 1, 1, 1, 1, 0, 1], '2001:db8:1:1:1:1:0:1'],
    [[0, 0, 0, 0, 0, 0xffff, 0xc000, 0x0207], '::ffff:192.0.2.7'],
  ])('%j -> %s', (groups, text) => {
    expect(compressIPv6(groups.map((g) => g.toString(16)))).toBe(text);
  });
});
