// Coded errors: callers match on `code`, never on message text. Messages never contain intake keys.

/** The codes any component may report: name resolution, connecting, TLS, a listener, state, stopping. */
export type CoreErrorCode =
  | 'ERELAY_DNS'
  | 'ERELAY_CONNECT_REFUSED'
  | 'ERELAY_CONNECT_TIMEOUT'
  | 'ERELAY_CONNECTION_LOST'
  | 'ERELAY_WRITE_TIMEOUT'
  | 'ERELAY_UNCONFIRMED'
  | 'ERELAY_TLS_CERT'
  | 'ERELAY_TLS_HOSTNAME'
  | 'ERELAY_TLS_HANDSHAKE'
  | 'ERELAY_NETWORK'
  | 'ERELAY_LISTEN'
  | 'ERELAY_KEY_REJECTED'
  | 'ERELAY_SHUTDOWN'
  /** A state directory or file (a disk queue, file checkpoints) cannot be used. */
  | 'ERELAY_STATE';

/**
 * A core code, or a component's own (a protocol's: ERELAY_RELP_OPEN, ERELAY_HTTP_STATUS), which
 * its folder names where it throws it. Every code the source uses has its heading in
 * docs/guides/troubleshooting.md (test/unit/docs-links.test.ts checks).
 */
export type RelayErrorCode = CoreErrorCode | `ERELAY_${Uppercase<string>}`;

export class RelayError extends Error {
  readonly code: RelayErrorCode;
  constructor(code: RelayErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = 'RelayError';
  }
}

const CERT_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'INVALID_CA',
]);

/** Turns a socket/TLS error into a RelayError that says what failed and what to check. */
export function classifyConnectError(err: unknown, host: string, port: number): RelayError {
  const code = typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : '';
  const where = `${host}:${port}`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new RelayError('ERELAY_DNS', `Cannot resolve ${host} (${code}): check the host name and DNS.`, { cause: err });
  }
  if (code === 'ECONNREFUSED') {
    return new RelayError('ERELAY_CONNECT_REFUSED', `Connection to ${where} refused: nothing listens there, or a firewall rejects it.`, { cause: err });
  }
  if (code === 'ETIMEDOUT' || code === 'ERELAY_CONNECT_TIMEOUT') {
    return new RelayError('ERELAY_CONNECT_TIMEOUT', `Connection to ${where} timed out: check routes and firewalls for outbound TCP ${port}.`, { cause: err });
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return new RelayError('ERELAY_TLS_HOSTNAME', `TLS certificate of ${where} does not match the host name: set output.server_name or use the name on the certificate.`, { cause: err });
  }
  if (CERT_CODES.has(code)) {
    return new RelayError('ERELAY_TLS_CERT', `TLS certificate of ${where} was not accepted (${code}): check output.ca_file, or whether a proxy intercepts TLS.`, { cause: err });
  }
  if (code.startsWith('ERR_SSL') || code.startsWith('ERR_TLS') || code === 'ECONNRESET') {
    return new RelayError('ERELAY_TLS_HANDSHAKE', `TLS handshake with ${where} failed (${code || 'reset'}).`, { cause: err });
  }
  const text = err instanceof Error ? err.message : String(err);
  return new RelayError('ERELAY_NETWORK', `Connection to ${where} failed: ${text}`, { cause: err });
}
