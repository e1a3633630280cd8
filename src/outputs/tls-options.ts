// How the outputs (and `check`) open TLS to the intake: TLS 1.2 or later, the certificate verified
// against the given CA (or the system's) and against `name` (an IP is matched against IP SANs; SNI
// carries names only), with a client certificate when one is configured.

import { isIP, type OnReadOpts } from 'node:net';
import tls from 'node:tls';

/** How long after the last full handshake sessions are resumed: the intake's certificate is checked again at least this often. */
const RESUME_FOR_MS = 60 * 60 * 1000;

export interface VerifiedTls {
  /** The name the certificate must carry. */
  readonly name: string;
  readonly ca: Buffer | undefined;
  readonly cert: Buffer | undefined;
  readonly key: Buffer | undefined;
}

export function verifiedTlsOptions(o: VerifiedTls): tls.ConnectionOptions {
  return { ...verifiedName(o.name), ca: o.ca, cert: o.cert, key: o.key, minVersion: MIN_VERSION };
}

const MIN_VERSION = 'TLSv1.2';

/** The certificate checked, and against `name`. */
function verifiedName(name: string): tls.ConnectionOptions {
  return {
    servername: isIP(name) ? undefined : name,
    checkServerIdentity: (_host, cert) => tls.checkServerIdentity(name, cert),
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
 *   one, or declines it, the handshake is a full one. A failed connect forgets it. Sessions are
 *   resumed for at most RESUME_FOR_MS after the last full handshake, so that the intake's
 *   certificate is checked again at least that often.
 * Some servers abort a resumed handshake with an alert instead of falling back to a full one
 * (OpenSSL servers that check client certificates without a session id context, such as rsyslog's
 * ossl driver in its x509 modes): when a handshake that offered a session ends in an alert from
 * the intake, the caller connects again at once without one (failed()), and if that full
 * handshake succeeds, this instance offers no session any more. Other failures (a reset, a
 * timeout) only forget the session.
 * One per output instance: a reload with other TLS settings starts afresh.
 */
export class IntakeTls {
  readonly #o: VerifiedTls;
  #context: tls.SecureContext | undefined;
  #session: Buffer | undefined;
  /** When the last full handshake (not resumed) completed (performance.now()). */
  #fullAt = -Infinity;
  #resumable = true;
  /** A resumed handshake ended in an alert: if the next full one succeeds, resumption is off. */
  #probing = false;
  /** Sockets that offered a session: whether their TCP connection was made, and their handshake completed. */
  readonly #offered = new WeakMap<tls.TLSSocket, { tcp: boolean; secure: boolean }>();

  constructor(o: VerifiedTls) {
    this.#o = o;
  }

  /**
   * Makes the secure context now (parsing the CA bundle, the client certificate and key: tens of
   * milliseconds with the system's CAs), not in the first connect, which comes with the first
   * events: meanwhile nothing reads the inputs, and a UDP socket's buffer may overflow.
   */
  prepare(): void {
    const { ca, cert, key } = this.#o;
    this.#context ??= tls.createSecureContext({ ca, cert, key, minVersion: MIN_VERSION });
  }

  /**
   * Opens a TLS connection. Throws what tls.createSecureContext throws for bad TLS material.
   * `onread`: what is read goes to its callback in its one buffer instead of 'data' events.
   */
  connect(host: string, port: number, onread?: OnReadOpts): tls.TLSSocket {
    const { name } = this.#o;
    this.prepare();
    const context = this.#context as tls.SecureContext;
    const session = this.#resumable && performance.now() - this.#fullAt < RESUME_FOR_MS ? this.#session : undefined;
    const socket = tls.connect({ host, port, ...verifiedName(name), secureContext: context, session, ...(onread ? { onread } : {}) });
    const state = { tcp: false, secure: false };
    if (session) this.#offered.set(socket, state);
    socket.once('connect', () => {
      state.tcp = true;
    });
    socket.on('session', (s: Buffer) => {
      this.#session = s;
    });
    socket.once('secureConnect', () => {
      state.secure = true;
      if (socket.isSessionReused()) return;
      this.#fullAt = performance.now();
      if (this.#probing && !session) {
        this.#probing = false;
        this.#resumable = false;
      }
    });
    return socket;
  }

  /**
   * A connect over `socket` failed with `err`: the session is forgotten. True when the socket had
   * offered one and its handshake ended in an alert from the intake: the caller should connect
   * again at once (what failed may be only the resumption).
   */
  failed(socket: tls.TLSSocket, err: unknown): boolean {
    this.#session = undefined;
    const state = this.#offered.get(socket);
    if (!state?.tcp || state.secure || !isPeerAlert(err)) {
      // The full handshake tried after an alert failed too: the alert was not about resuming.
      if (!state) this.#probing = false;
      return false;
    }
    this.#probing = true;
    return true;
  }
}

/** An alert the TLS peer sent (ERR_SSL_TLSV1_ALERT_INTERNAL_ERROR, ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE, ...). */
function isPeerAlert(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' && /^ERR_SSL_(TLSV1|SSLV3|SSL\/TLS)_ALERT_/.test(code);
}

/**
 * Runs `attempt` (a connect through an IntakeTls), and once more at once when it rejects with
 * ResumedHandshakeFailed (that one then offers no session), unless `signal` aborted meanwhile.
 */
export async function againWithoutSession<T>(attempt: () => Promise<T>, signal: AbortSignal): Promise<T> {
  try {
    return await attempt();
  } catch (err) {
    if (!(err instanceof ResumedHandshakeFailed)) throw err;
    if (signal.aborted) throw err.error;
    return attempt();
  }
}

/** A connect that offered a TLS session failed in its handshake: connect again at once without one. */
export class ResumedHandshakeFailed extends Error {
  readonly error: unknown;

  constructor(error: unknown) {
    super('A resumed TLS handshake failed.');
    this.error = error;
  }
}
