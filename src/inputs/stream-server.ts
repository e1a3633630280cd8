// The listening side of the stream inputs (syslog over TCP or TLS, RELP): a TCP or TLS server
// (mutual TLS when the files give a client CA), failed handshakes and connections over
// max_connections counted and logged. With the PROXY protocol, each connection's first bytes are
// read by a ProxyAcceptor (proxied.ts) before TLS and before the input sees it; the input is told
// the original sender's address. The input keeps the server (a stop may come while it starts to
// listen), listens with listen() and closes it with close().

import net from 'node:net';
import tls from 'node:tls';
import type { TlsFiles } from '../core/component.ts';
import type { ProxyProtocolSettings } from '../core/config-values.ts';
import { listen } from '../platform/net.ts';
import type { SyslogInputTelemetry } from '../core/telemetry.ts';
import { senderAddress } from './frame-builder.ts';
import { ProxyAcceptor } from './proxied.ts';

export interface StreamServerOptions {
  readonly maxConnections: number;
  readonly tls: TlsFiles | undefined;
  /** Keep our side open after the sender ends its own (RELP: its answers still go out). */
  readonly allowHalfOpen: boolean;
  readonly proxy: ProxyProtocolSettings | undefined;
  /** The input's idle timeout (0: none), also for a connection still to send its first bytes. */
  readonly idleTimeoutMs: number;
}

export class StreamServer {
  /** What listens: the TCP server (TLS starts on each connection after its PROXY header, if any). */
  readonly #server: net.Server;
  readonly #proxy: ProxyAcceptor | undefined;

  /** `onSocket` gets each connection (TLS: once its handshake is done) and its sender's address. */
  constructor(o: StreamServerOptions, t: SyslogInputTelemetry, onSocket: (socket: net.Socket, from: string) => void) {
    const proxy = o.proxy ? new ProxyAcceptor(o.proxy, t, o.idleTimeoutMs) : undefined;
    this.#proxy = proxy;
    const from = (s: net.Socket): string => (proxy ? proxy.origin(s) : senderAddress(s.remoteAddress));
    let secure: tls.Server | undefined;
    if (o.tls) {
      secure = tls.createServer(
        { cert: o.tls.cert, key: o.tls.key, ca: o.tls.ca, requestCert: !!o.tls.ca, rejectUnauthorized: !!o.tls.ca, minVersion: 'TLSv1.2', allowHalfOpen: o.allowHalfOpen },
        (s) => onSocket(s, from(s)),
      );
      secure.on('tlsClientError', (err, socket) => {
        t.rejected('tls_handshake');
        t.log.warn('tls', { err, sender: from(socket) }, 'TLS handshake with a sender failed.');
      });
    }
    if (!proxy) {
      this.#server = secure ?? net.createServer({ allowHalfOpen: o.allowHalfOpen }, (s) => onSocket(s, from(s)));
    } else {
      // TLS starts on the connection handed on: the TLS server is given it, never listens itself.
      const handOn = secure
        ? (raw: net.Socket): void => void secure.emit('connection', raw)
        : (raw: net.Socket): void => {
            onSocket(raw, proxy.origin(raw));
            raw.resume();
          };
      this.#server = net.createServer({ allowHalfOpen: o.allowHalfOpen }, (raw) => proxy.accept(raw, handOn));
    }
    this.#server.maxConnections = o.maxConnections;
    this.#server.on('drop', (d) => {
      t.rejected('max_connections');
      t.log.warn('drop', { sender: senderAddress(d?.remoteAddress), max_connections: o.maxConnections }, 'Connection refused: max_connections reached.');
    });
  }

  get port(): number | undefined {
    const a = this.#server.address();
    return typeof a === 'object' && a ? a.port : undefined;
  }

  listen(address: string, port: number, what: string): Promise<void> {
    return listen(this.#server, address, port, what, true);
  }

  /** Stops accepting; resolves once every connection is closed (the input ends them). */
  close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#proxy?.close();
    return closed;
  }
}
