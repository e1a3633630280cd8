// A TLS server's certificate, key and optional client CA, read at load for the inputs that serve TLS.

import type { ResolveContext, TlsFiles } from '../core/component.ts';

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
  return cert && key ? { cert, key, ca } : undefined;
}
