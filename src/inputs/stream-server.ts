// The listening side of the stream inputs (syslog over TCP or TLS, RELP): a TCP or TLS server
// (mutual TLS when the files give a client CA), failed handshakes and connections over
// max_connections counted and logged. The input keeps the server (a stop may come while it
// starts to listen) and listens with core/net.ts's listen().

import net from 'node:net';
import tls from 'node:tls';
import type { TlsFiles } from '../core/component.ts';
import type { SyslogInputTelemetry } from '../core/telemetry.ts';
import { senderAddress } from './frame-builder.ts';

export interface StreamServerOptions {
  readonly maxConnections: number;
  readonly tls: TlsFiles | undefined;
  /** Keep our side open after the sender ends its own (RELP: its answers still go out). */
  readonly allowHalfOpen: boolean;
}

export function streamServer(o: StreamServerOptions, t: SyslogInputTelemetry, onSocket: (socket: net.Socket) => void): net.Server {
  let server: net.Server;
  if (o.tls) {
    server = tls.createServer(
      { cert: o.tls.cert, key: o.tls.key, ca: o.tls.ca, requestCert: !!o.tls.ca, rejectUnauthorized: !!o.tls.ca, minVersion: 'TLSv1.2', allowHalfOpen: o.allowHalfOpen },
      onSocket,
    );
    server.on('tlsClientError', (err, socket) => {
      t.rejected('tls_handshake');
      t.log.warn('tls', { err, sender: senderAddress(socket.remoteAddress) }, 'TLS handshake with a sender failed.');
    });
  } else {
    server = net.createServer({ allowHalfOpen: o.allowHalfOpen }, onSocket);
  }
  server.maxConnections = o.maxConnections;
  server.on('drop', (d) => {
    t.rejected('max_connections');
    t.log.warn('drop', { sender: senderAddress(d?.remoteAddress), max_connections: o.maxConnections }, 'Connection refused: max_connections reached.');
  });
  return server;
}
