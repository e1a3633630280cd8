// A TLS server's certificate, key and optional client CA, read and checked at load for the inputs
// that serve TLS.

import type { ResolveContext, TlsFiles } from '../core/component.ts';
import { checkCertAndKey } from '../platform/tls-material.ts';

interface TlsServerConfig {
  readonly cert_file: string;
  readonly key_file: string;
  readonly client_ca_file?: string | undefined;
}

/** The files of `tls` (at key `tls` of the component), or undefined when absent or unreadable (a problem is reported). */
export function readTlsFiles(tls: TlsServerConfig | undefined, ctx: ResolveContext): TlsFiles | undefined {
  if (!tls) return undefined;
  const cert = ctx.readFile(tls.cert_file, ['tls', 'cert_file']);
  const key = ctx.readFile(tls.key_file, ['tls', 'key_file']);
  const ca = tls.client_ca_file ? ctx.readFile(tls.client_ca_file, ['tls', 'client_ca_file']) : undefined;
  if (!cert || !key || (tls.client_ca_file && !ca)) return undefined;
  // Checked now: a bad file is a configuration error with its place, not OpenSSL's text at start.
  const files = { cert: tls.cert_file, key: tls.key_file, ca: tls.client_ca_file ?? '' };
  const names = { cert: 'cert_file', key: 'key_file', ca: 'client_ca_file' } as const;
  const check = checkCertAndKey(cert, key, ca);
  for (const p of check.problems) ctx.problem(['tls', names[p.file]], `${files[p.file]} ${p.message}`);
  for (const w of check.warnings) ctx.warn(`tls.cert_file: ${w}`);
  return check.problems.length === 0 ? { cert, key, ca } : undefined;
}
