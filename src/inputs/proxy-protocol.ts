// The PROXY protocol header (HAProxy's proxy-protocol.txt, versions 1 and 2) a load balancer puts
// before a connection's first byte to tell who connected to it. Pure: the listener side
// (inputs/proxied.ts) feeds it the bytes received so far and acts on the verdict.
//
// v1: "PROXY TCP4|TCP6 <src> <dst> <sport> <dport>\r\n" or "PROXY UNKNOWN...\r\n", at most 107 bytes.
// v2: a 12-byte signature, version/command, family/transport, a 16-bit length, the addresses
// (INET 12 bytes, INET6 36, UNIX 216) and TLVs (skipped). LOCAL (a balancer's own health check),
// UNKNOWN, UNSPEC and UNIX carry no address of a sender: the connection's own address stands.

import { isIPv4, isIPv6 } from 'node:net';

export type ProxyVersion = 'v1' | 'v2';

export type ProxyHeader =
  /** Not enough bytes yet to decide. */
  | { readonly kind: 'partial' }
  /**
   * A whole header of `length` bytes; `source` is the original sender, absent when it names none;
   * `local`: a v2 LOCAL command, the balancer's own connection (its health check), not a sender's.
   */
  | { readonly kind: 'header'; readonly version: ProxyVersion; readonly length: number; readonly source: { readonly address: string; readonly port: number } | undefined; readonly local: boolean }
  /** The bytes are no header of the versions asked for: why. */
  | { readonly kind: 'invalid'; readonly reason: string };

const V1_PREFIX = Buffer.from('PROXY ', 'latin1');
export const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
const V1_MAX = 107;
const PARTIAL: ProxyHeader = { kind: 'partial' };

/** Does `buf` start like a header of either version (true also while too short to tell)? */
export function looksLikeProxyHeader(buf: Buffer): boolean {
  return startsWith(buf, V1_PREFIX) || startsWith(buf, V2_SIGNATURE);
}

/** Can `buf` (the first bytes of a connection) still turn out to start like a header? */
export function mayBeProxyHeader(buf: Buffer): boolean {
  return (buf.length < V1_PREFIX.length && startsWith(buf, V1_PREFIX)) || (buf.length < V2_SIGNATURE.length && startsWith(buf, V2_SIGNATURE));
}

/** `buf` and `prefix` agree over the shorter of the two. */
function startsWith(buf: Buffer, prefix: Buffer): boolean {
  const n = Math.min(buf.length, prefix.length);
  return buf.compare(prefix, 0, n, 0, n) === 0;
}

/** Reads the header at the start of `buf`, of the versions in `accept`. */
export function parseProxyHeader(buf: Buffer, accept: readonly ProxyVersion[]): ProxyHeader {
  if (buf.length === 0) return PARTIAL;
  if (buf[0] === 0x50 /* P */) {
    if (!startsWith(buf, V1_PREFIX)) return { kind: 'invalid', reason: 'no PROXY protocol header' };
    if (!accept.includes('v1')) return { kind: 'invalid', reason: 'a version 1 header where version 2 is expected' };
    return parseV1(buf);
  }
  if (buf[0] === 0x0d) {
    if (!startsWith(buf, V2_SIGNATURE)) return { kind: 'invalid', reason: 'no PROXY protocol header' };
    if (!accept.includes('v2')) return { kind: 'invalid', reason: 'a version 2 header where version 1 is expected' };
    return parseV2(buf);
  }
  return { kind: 'invalid', reason: 'no PROXY protocol header' };
}

function parseV1(buf: Buffer): ProxyHeader {
  const lf = buf.indexOf(0x0a);
  if (lf < 0) return buf.length >= V1_MAX ? { kind: 'invalid', reason: 'version 1 header longer than 107 bytes' } : PARTIAL;
  if (lf + 1 > V1_MAX) return { kind: 'invalid', reason: 'version 1 header longer than 107 bytes' };
  if (buf[lf - 1] !== 0x0d) return { kind: 'invalid', reason: 'version 1 header not ended by CRLF' };
  const line = buf.toString('latin1', V1_PREFIX.length, lf - 1);
  const length = lf + 1;
  const parts = line.split(' ');
  // UNKNOWN: the rest of the line is to be ignored, and the connection's own address used.
  if (parts[0] === 'UNKNOWN') return { kind: 'header', version: 'v1', length, source: undefined, local: false };
  const [proto, src, dst, sport, dport] = parts;
  if (parts.length !== 5 || (proto !== 'TCP4' && proto !== 'TCP6')) return { kind: 'invalid', reason: `malformed version 1 header "${printable(line)}"` };
  // Node's isIPv6 takes a zone ("fe80::1%eth0"), which the protocol's addresses never have (and
  // which no URL parser takes: canonicalIPv6 would throw on it).
  const isFamily = proto === 'TCP4' ? isIPv4 : (a: string): boolean => isIPv6(a) && !a.includes('%');
  if (!isFamily(src as string) || !isFamily(dst as string)) return { kind: 'invalid', reason: `version 1 header with an address that is not ${proto === 'TCP4' ? 'IPv4' : 'IPv6'}` };
  const port = v1Port(sport as string);
  if (port === undefined || v1Port(dport as string) === undefined) return { kind: 'invalid', reason: 'version 1 header with a bad port' };
  return { kind: 'header', version: 'v1', length, source: { address: proto === 'TCP6' ? canonicalIPv6(src as string) : (src as string), port }, local: false };
}

/**
 * An IPv6 address as Node writes a peer's (RFC 5952, lower case; IPv4-mapped ones as
 * "::ffff:a.b.c.d"), whatever the header's spelling ("::FFFF:a00:1", "0:0:0:0:0:ffff:10.0.0.1").
 */
function canonicalIPv6(a: string): string {
  const h = new URL(`http://[${a}]`).hostname.slice(1, -1);
  const m = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(h);
  if (!m) return h;
  const hi = parseInt(m[1] as string, 16);
  const lo = parseInt(m[2] as string, 16);
  return `::ffff:${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
}

/** A decimal port without a leading zero, at most 65535. */
function v1Port(s: string): number | undefined {
  if (!/^(?:0|[1-9][0-9]{0,4})$/.test(s)) return undefined;
  const n = Number(s);
  return n <= 65535 ? n : undefined;
}

function parseV2(buf: Buffer): ProxyHeader {
  if (buf.length < 16) return PARTIAL;
  const verCmd = buf[12] as number;
  if (verCmd >> 4 !== 2) return { kind: 'invalid', reason: `version 2 signature with version ${verCmd >> 4}` };
  const command = verCmd & 0x0f;
  if (command > 1) return { kind: 'invalid', reason: `version 2 header with unknown command ${command}` };
  const famProto = buf[13] as number;
  const family = famProto >> 4;
  const transport = famProto & 0x0f;
  if (family > 3 || transport > 2) return { kind: 'invalid', reason: `version 2 header with unknown family/transport 0x${famProto.toString(16).padStart(2, '0')}` };
  const bodyLength = buf.readUInt16BE(14);
  const length = 16 + bodyLength;
  const need = family === 1 ? 12 : family === 2 ? 36 : family === 3 ? 216 : 0;
  if (bodyLength < need) return { kind: 'invalid', reason: `version 2 header too short for its address family (${bodyLength} < ${need} bytes)` };
  if (buf.length < length) return PARTIAL;
  // LOCAL: the balancer speaking for itself (a health check): no sender to stand for.
  if (command === 0 || family === 0 || family === 3) return { kind: 'header', version: 'v2', length, source: undefined, local: command === 0 };
  if (family === 1) {
    const address = `${buf[16]}.${buf[17]}.${buf[18]}.${buf[19]}`;
    return { kind: 'header', version: 'v2', length, source: { address, port: buf.readUInt16BE(24) }, local: false };
  }
  const groups: string[] = [];
  for (let i = 0; i < 8; i++) groups.push(buf.readUInt16BE(16 + i * 2).toString(16));
  return { kind: 'header', version: 'v2', length, source: { address: compressIPv6(groups), port: buf.readUInt16BE(48) }, local: false };
}

/** RFC 5952 text of eight hex groups: the longest run of two or more zero groups becomes "::"; an IPv4-mapped address is written as Node writes it (::ffff:a.b.c.d). */
export function compressIPv6(groups: readonly string[]): string {
  if (groups.slice(0, 5).every((g) => g === '0') && groups[5] === 'ffff') {
    const a = parseInt(groups[6] as string, 16);
    const b = parseInt(groups[7] as string, 16);
    return `::ffff:${a >> 8}.${a & 0xff}.${b >> 8}.${b & 0xff}`;
  }
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (bestLen < 2) return groups.join(':');
  return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLen).join(':')}`;
}

/** At most 60 printable characters of a header line, for a log. */
function printable(s: string): string {
  const clean = s.replace(/[^\x20-\x7e]/g, '?');
  return clean.length > 60 ? `${clean.slice(0, 60)}...` : clean;
}
