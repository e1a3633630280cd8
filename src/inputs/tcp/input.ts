// Syslog over TCP, optionally TLS (RFC 6587 framing, RFC 5425 transport). Each read is deframed and
// offered to the queue in one call; when the queue says slow_down the socket stops reading until
// the queue has room (backpressure reaches the sender through TCP flow control).

import net from 'node:net';
import tls from 'node:tls';
import type { Logger } from 'pino';
import { listen } from '../../core/net.ts';
import { RateLimiter } from '../../core/rate-limiter.ts';
import { Deframer, type Oversize } from '../../syslog/framing.ts';
import { EventBuilder, inputCounters, ownerIntake, senderAddress, type InputContext } from '../event-builder.ts';

export interface TcpInputOptions {
  readonly address: string;
  readonly port: number;
  readonly maxConnections: number;
  readonly idleTimeoutMs: number;
  readonly maxMessageBytes: number;
  readonly oversize: Oversize;
  readonly tls: { cert: Buffer; key: Buffer; ca: Buffer | undefined } | undefined;
}

export class TcpSyslogInput {
  readonly #o: TcpInputOptions;
  readonly #ctx: InputContext;
  readonly #log: Logger;
  readonly #c;
  readonly #limiter = new RateLimiter();
  readonly #sockets = new Set<net.Socket>();
  #server: net.Server | undefined;

  /** The intake for labels; '' on a shared listener. */
  get #intake(): string {
    return ownerIntake(this.#ctx);
  }

  constructor(options: TcpInputOptions, ctx: InputContext, log: Logger) {
    this.#o = options;
    this.#ctx = ctx;
    this.#log = log;
    this.#c = inputCounters(ctx);
  }

  get port(): number {
    const a = this.#server?.address();
    return typeof a === 'object' && a ? a.port : this.#o.port;
  }

  async start(): Promise<void> {
    const o = this.#o;
    const { metrics: m, input } = this.#ctx;
    const intake = this.#intake;
    const connections = m.connections.labels({ intake, input });
    connections.set(0);
    const onSocket = (socket: net.Socket): void => this.#accept(socket, connections);
    let server: net.Server;
    if (o.tls) {
      server = tls.createServer(
        { cert: o.tls.cert, key: o.tls.key, ca: o.tls.ca, requestCert: !!o.tls.ca, rejectUnauthorized: !!o.tls.ca, minVersion: 'TLSv1.2' },
        onSocket,
      );
      server.on('tlsClientError', (err, socket) => {
        m.connectionsRejected.inc({ intake, input, reason: 'tls_handshake' });
        this.#warn('tls', { err: err.message, sender: senderAddress(socket.remoteAddress) }, 'TLS handshake with a sender failed.');
      });
    } else {
      server = net.createServer(onSocket);
    }
    server.maxConnections = o.maxConnections;
    server.on('drop', (d) => {
      m.connectionsRejected.inc({ intake, input, reason: 'max_connections' });
      this.#warn('drop', { sender: senderAddress(d?.remoteAddress), max_connections: o.maxConnections }, 'Connection refused: max_connections reached.');
    });
    this.#server = server;
    await listen(server, o.address, o.port, intake ? `${intake}/${input}` : `listener ${input}`);
  }

  #warn(key: string, fields: object, msg: string): void {
    const suppressed = this.#limiter.allow(key);
    if (suppressed !== undefined) this.#log.warn({ intake: this.#intake || undefined, input: this.#ctx.input, ...fields, suppressed }, msg);
  }

  #accept(socket: net.Socket, connections: { inc(): void; dec(): void }): void {
    const sender = senderAddress(socket.remoteAddress);
    const builder = new EventBuilder(this.#ctx, this.#c, true);
    const deframer = new Deframer(this.#o.maxMessageBytes, this.#o.oversize, builder);
    this.#sockets.add(socket);
    connections.inc();
    if (this.#o.idleTimeoutMs > 0) {
      socket.setTimeout(this.#o.idleTimeoutMs, () => {
        this.#ctx.metrics.connectionsRejected.inc({ intake: this.#intake, input: this.#ctx.input, reason: 'idle_timeout' });
        socket.end();
      });
    }
    socket.on('data', (chunk: Buffer) => {
      builder.begin(chunk, sender);
      deframer.push(chunk);
      if (builder.flush() === 'slow_down' && !socket.isPaused()) {
        socket.pause();
        this.#c.paused.inc();
        void builder.writable().then(() => socket.resume());
      }
    });
    socket.on('end', () => {
      builder.begin(Buffer.alloc(0), sender);
      deframer.end();
      builder.flush();
      socket.end();
    });
    socket.on('error', (err) => this.#warn('socket', { err: err.message, sender }, 'Sender connection failed.'));
    socket.on('close', () => {
      this.#sockets.delete(socket);
      connections.dec();
    });
  }

  /** Stop accepting, let open connections finish what they sent, then cut them. */
  async stop(graceMs = 1000): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of this.#sockets) s.end();
    const timer = setTimeout(() => {
      for (const s of this.#sockets) s.destroy();
    }, graceMs);
    await closed;
    clearTimeout(timer);
  }
}
