// How the outputs (and `check`) open TLS to the intake: TLS 1.2 or later, the certificate verified
// against the given CA (or the system's) and against `name` (an IP is matched against IP SANs; SNI
// carries names only), with a client certificate when one is configured.

import { isIP } from 'node:net';
import tls from 'node:tls';

export interface VerifiedTls {
  /** The name the certificate must carry. */
  readonly name: string;
  readonly ca: Buffer | undefined;
  readonly cert: Buffer | undefined;
  readonly key: Buffer | undefined;
}

export function verifiedTlsOptions(o: VerifiedTls): tls.ConnectionOptions {
  return {
    servername: isIP(o.name) ? undefined : o.name,
    checkServerIdentity: (_host, cert) => tls.checkServerIdentity(o.name, cert),
    ca: o.ca,
    cert: o.cert,
    key: o.key,
    minVersion: 'TLSv1.2',
    rejectUnauthorized: true,
  };
}
