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

/**
 * The TLS side of an output's connections to one intake. The syslog output opens a connection
 * whenever the intake must confirm by closing (every resend_window_ms at low rates, every half
 * window under load), so its handshakes add up, on both ends. Two things cut them by about a third
 * (bench/tls-handshake.ts, client and server in one process: 2.6–3.8 ms of CPU per connection →
 * 1.6–2.5):
 * - one secure context for all connections: the CA, the client certificate and the key are parsed
 *   once (0.3–0.4 ms per connection otherwise);
 * - the next connection resumes the session the intake last offered (a TLS 1.3 ticket or a 1.2
 *   session): no certificate exchanged, signed or checked again. Where the intake does not offer
 *   one, or declines it, the handshake is a full one; a failed handshake forgets it.
 * One per output instance: a reload with other TLS settings starts afresh.
 */
export class IntakeTls {
  readonly #o: VerifiedTls;
  #context: tls.SecureContext | undefined;
  #session: Buffer | undefined;

  constructor(o: VerifiedTls) {
    this.#o = o;
  }

  /** Options for tls.connect. Throws what tls.createSecureContext throws for bad TLS material. */
  connectOptions(): tls.ConnectionOptions {
    const { name, ca, cert, key } = this.#o;
    this.#context ??= tls.createSecureContext({ ca, cert, key, minVersion: 'TLSv1.2' });
    return {
      servername: isIP(name) ? undefined : name,
      checkServerIdentity: (_host, c) => tls.checkServerIdentity(name, c),
      secureContext: this.#context,
      rejectUnauthorized: true,
      session: this.#session,
    };
  }

  /** Keeps the sessions the intake offers on `socket`, for the next connection. */
  watch(socket: tls.TLSSocket): void {
    socket.on('session', (session: Buffer) => {
      this.#session = session;
    });
  }

  /** A handshake failed: the next connection starts without a session. */
  forget(): void {
    this.#session = undefined;
  }
}
