// The TLS files of an output checked at load (platform/tls-material.ts): the CA bundle it verifies the
// intake with, and a client certificate with its key; problems at their keys, warnings for expiry.

import type { ResolveContext } from '../core/component.ts';
import { checkCa, checkCertAndKey } from '../platform/tls-material.ts';

export function checkTlsFiles(
  ctx: ResolveContext,
  ca: Buffer | undefined,
  caFile: string | undefined,
  client: { readonly cert: Buffer; readonly key: Buffer; readonly certFile: string; readonly keyFile: string } | undefined,
): void {
  if (ca && caFile) {
    const c = checkCa(ca);
    for (const p of c.problems) ctx.problem(['ca_file'], `${caFile} ${p.message}`);
    for (const w of c.warnings) ctx.warn(`ca_file: ${w}`);
  }
  if (client) {
    const c = checkCertAndKey(client.cert, client.key, undefined);
    const at = { cert: ['client_cert_file', client.certFile], key: ['client_key_file', client.keyFile], ca: ['ca_file', caFile ?? ''] } as const;
    for (const p of c.problems) ctx.problem([at[p.file][0]], `${at[p.file][1]} ${p.message}`);
    for (const w of c.warnings) ctx.warn(`client_cert_file: ${w}`);
  }
}
