// A throwaway self-signed certificate (ECDSA P-256, SAN localhost / 127.0.0.1 / ::1) for the local
// intake emulator, built with node:crypto and a minimal DER writer (RFC 5280 §4.1), so trying
// intake-relay out needs neither openssl nor a certificate on disk.

import { generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';

const tlv = (tag: number, body: Buffer): Buffer => Buffer.concat([Buffer.from([tag]), derLength(body.length), body]);
const seq = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));

function derLength(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function oid(dotted: string): Buffer {
  const arcs = dotted.split('.').map(Number);
  const out = [40 * (arcs[0] as number) + (arcs[1] as number)];
  for (const arc of arcs.slice(2)) {
    const b: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) b.unshift((v & 0x7f) | 0x80);
    out.push(...b);
  }
  return tlv(0x06, Buffer.from(out));
}

function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z';
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(iso.slice(2), 'latin1')) : tlv(0x18, Buffer.from(iso, 'latin1'));
}

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));

export interface SelfSigned {
  readonly cert: string;
  readonly key: string;
}

/** Who signs instead of the certificate itself: a CA's common name and its (P-256) key. */
export interface Issuer {
  readonly commonName: string;
  readonly key: KeyObject;
}

const nameOf = (commonName: string): Buffer => seq(set(seq(oid('2.5.4.3'), tlv(0x0c, Buffer.from(commonName, 'utf8')))));

/**
 * `validFrom` / `validTo` (ms) default to an hour ago and `days` from now; tests make expired ones,
 * and with `issuer`, ones a CA of theirs signed.
 */
export function selfSignedCertificate(commonName = 'intake-relay emulator', days = 30, validFrom?: number, validTo?: number, issuer?: Issuer): SelfSigned {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const serial = randomBytes(16);
  // DER INTEGER: positive (top bit clear) and minimal (first byte not 0): OpenSSL refuses a
  // leading zero byte as "illegal padding", which 1 serial in 256 would otherwise have.
  serial[0] = ((serial[0] as number) & 0x7f) | 0x01;
  const name = nameOf(commonName);
  const now = Date.now();
  const san = seq(
    tlv(0x82, Buffer.from('localhost', 'latin1')),
    tlv(0x87, Buffer.from([127, 0, 0, 1])),
    tlv(0x87, Buffer.concat([Buffer.alloc(15), Buffer.from([1])])),
  );
  const extensions = tlv(
    0xa3,
    seq(
      seq(oid('2.5.29.19'), tlv(0x01, Buffer.from([0xff])), tlv(0x04, seq(tlv(0x01, Buffer.from([0xff]))))),
      seq(oid('2.5.29.17'), tlv(0x04, san)),
    ),
  );
  const tbs = seq(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))),
    tlv(0x02, serial),
    ECDSA_SHA256,
    issuer ? nameOf(issuer.commonName) : name,
    seq(time(new Date(validFrom ?? now - 3_600_000)), time(new Date(validTo ?? now + days * 86_400_000))),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    extensions,
  );
  const signature = sign('sha256', tbs, issuer?.key ?? privateKey);
  const der = seq(tbs, ECDSA_SHA256, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
  const b64 = der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '');
  return {
    cert: `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`,
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}
