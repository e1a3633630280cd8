// Certificates, keys and CA bundles checked when the configuration is loaded, so that a bad file is
// a configuration error with its place (exit 78) instead of raw OpenSSL text at start, or a
// listener that fails every handshake: each file must be PEM of the right kind, a key must match
// its certificate, and a certificate close to its end is worth a warning.

import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import tls from 'node:tls';
import { isoUtc } from '../core/iso-time.ts';

const DAY_MS = 86_400_000;
/** A certificate that ends sooner than this gets a warning at load. */
export const EXPIRY_WARNING_DAYS = 14;

export interface TlsProblem {
  /** Which of the files: 'cert', 'key' or 'ca'. */
  readonly file: 'cert' | 'key' | 'ca';
  readonly message: string;
}

export interface TlsCheck {
  readonly problems: TlsProblem[];
  readonly warnings: string[];
}

const PEM = /-----BEGIN ([A-Z0-9 ]+)-----/;

/** The certificates of a PEM bundle, or a problem. */
function certificates(pem: Buffer, what: 'cert' | 'ca', problems: TlsProblem[]): X509Certificate[] {
  const text = pem.toString('latin1');
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) {
    const kind = PEM.exec(text)?.[1];
    problems.push({ file: what, message: kind ? `holds a ${kind}, not a PEM certificate` : 'is not PEM (no "-----BEGIN CERTIFICATE-----"): convert a DER file with `openssl x509 -inform der`' });
    return [];
  }
  const out: X509Certificate[] = [];
  for (const b of blocks) {
    try {
      out.push(new X509Certificate(b));
    } catch {
      problems.push({ file: what, message: 'holds a certificate that cannot be read (damaged PEM)' });
    }
  }
  return out;
}

function privateKey(pem: Buffer, problems: TlsProblem[]): KeyObject | undefined {
  const text = pem.toString('latin1');
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text)) {
    const kind = PEM.exec(text)?.[1];
    problems.push({ file: 'key', message: kind ? `holds a ${kind}, not a PEM private key` : 'is not a PEM private key (no "-----BEGIN ... PRIVATE KEY-----")' });
    return undefined;
  }
  if (/ENCRYPTED/.test(text)) {
    problems.push({ file: 'key', message: 'is encrypted: intake-relay needs the key without a passphrase (`openssl pkey -in key.pem -out plain.pem`)' });
    return undefined;
  }
  try {
    return createPrivateKey(pem);
  } catch {
    problems.push({ file: 'key', message: 'cannot be read as a private key (damaged PEM)' });
    return undefined;
  }
}

function expiry(c: X509Certificate, now: number, warnings: string[], what: string): string | undefined {
  const end = Date.parse(c.validTo);
  if (end < now) return `expired on ${isoUtc(end).slice(0, 10)} (${c.subject.replace(/\n/g, ', ')})`;
  if (Date.parse(c.validFrom) > now) return `is not valid before ${isoUtc(Date.parse(c.validFrom)).slice(0, 10)}`;
  if (end - now < EXPIRY_WARNING_DAYS * DAY_MS) warnings.push(`${what} expires on ${isoUtc(end).slice(0, 10)}, in ${Math.ceil((end - now) / DAY_MS)} days`);
  return undefined;
}

/**
 * A certificate (chain) with its key, and an optional CA bundle: PEM, the key matching the first
 * certificate, in date, and a secure context OpenSSL accepts.
 */
export function checkCertAndKey(cert: Buffer, key: Buffer, ca: Buffer | undefined, now = Date.now()): TlsCheck {
  const problems: TlsProblem[] = [];
  const warnings: string[] = [];
  const chain = certificates(cert, 'cert', problems);
  const k = privateKey(key, problems);
  const leaf = chain[0];
  if (leaf) {
    const e = expiry(leaf, now, warnings, 'the certificate');
    if (e) problems.push({ file: 'cert', message: `holds a certificate that ${e}` });
    if (k && !leaf.checkPrivateKey(k)) problems.push({ file: 'key', message: `does not match the certificate (a ${k.asymmetricKeyType?.toUpperCase()} key for a ${leaf.publicKey.asymmetricKeyType?.toUpperCase()} certificate, or another pair's key)` });
  }
  if (ca) checkCaInto(ca, problems, warnings, now);
  if (problems.length === 0) {
    try {
      tls.createSecureContext({ cert, key, ca });
    } catch (err) {
      problems.push({ file: 'cert', message: `is refused by OpenSSL (${(err as { code?: string }).code ?? 'error'})` });
    }
  }
  return { problems, warnings };
}

/** A CA bundle: PEM certificates, none expired. */
export function checkCa(ca: Buffer, now = Date.now()): TlsCheck {
  const problems: TlsProblem[] = [];
  const warnings: string[] = [];
  checkCaInto(ca, problems, warnings, now);
  return { problems, warnings };
}

function checkCaInto(ca: Buffer, problems: TlsProblem[], warnings: string[], now: number): void {
  for (const c of certificates(ca, 'ca', problems)) {
    const e = expiry(c, now, warnings, 'a CA certificate');
    if (e) problems.push({ file: 'ca', message: `holds a CA certificate that ${e}` });
  }
}
