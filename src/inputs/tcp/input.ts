// Syslog over TCP, optionally TLS (RFC 6587 framing, RFC 5425 transport). Each read is deframed and
// handed to the sender in one call; when a queue says slow_down the socket stops reading until it
// has room (backpressure reaches the sender through TCP flow control). A connection silent for
// idle_timeout_ms is ended, and cut one timeout later if the sender does not close its side: an
// idle sender never keeps a connection slot.

import net from 'node:net';
import type { Inlet, TlsFiles } from '../../core/component.ts';
import type { ProxyProtocolSettings } from '../../core/config-values.ts';
import type { Source } from '../../core/contracts.ts';
import type { SyslogInputTelemetry } from '../../core/telemetry.ts';
import { Deframer, type Oversize } from '../../syslog/framing.ts';
import type { HeaderDefaults } from '../../syslog/parse.ts';
import { FrameBuilder } from '../frame-builder.ts';
import { StreamServer } from '../stream-server.ts';

export interface TcpInputOptions {
  readonly label: string;
  readonly address: string;
  readonly port: number;
  readonly maxConnections: number;
  readonly idleTimeoutMs: number;
  readonly maxMessageBytes: number;
  readonly oversize: Oversize;
  readonly tls: TlsFiles | undefined;
  readonly defaults: HeaderDefaults;
  readonly proxy: ProxyProtocolSettings | undefined;
}

export class TcpSyslogInput implements Source {
  readonly #o: TcpInputOptions;
  readonly #inlet: Inlet;
  readonly #t: SyslogInputTelemetry;
  readonly #sockets = new Set<net.Socket>();
  #server: StreamServer | undefined;

  constructor(options: TcpInputOptions, inlet: Inlet, telemetry: SyslogInputTelemetry) {
    this.#o = options;
    this.#inlet = inlet;
    this.#t = telemetry;
  }

  get label(): string {
    return this.#o.label;
  }

  get port(): number {
    return this.#server?.port ?? this.#o.port;
  }

  get where(): string {
    return `on port ${this.port}`;
  }

  async start(): Promise<void> {
    if (this.#server) return;
    const o = this.#o;
    const t = this.#t;
    const server = new StreamServer({ maxConnections: o.maxConnections, tls: o.tls, allowHalfOpen: false, proxy: o.proxy, idleTimeoutMs: o.idleTimeoutMs }, t, (socket, from) => this.#accept(socket, from));
    this.#server = server;
    t.listening();
    const owner = this.#inlet.owner;
    await server.listen(o.address, o.port, owner ? `${owner}/${o.label}` : `listener ${o.label}`);
  }

  #accept(socket: net.Socket, from: string): void {
    const t = this.#t;
    const builder = new FrameBuilder(this.#inlet, t, this.#o.defaults);
    const deframer = new Deframer(this.#o.maxMessageBytes, this.#o.oversize, builder);
    this.#sockets.add(socket);
    t.connection(true);
    if (this.#o.idleTimeoutMs > 0) {
      // Not setTimeout's callback: that listener is called once, and this one must also cut a
      // sender that never closes its side after ours (its socket would hold a connection slot).
      let ended = false;
      socket.setTimeout(this.#o.idleTimeoutMs);
      socket.on('timeout', () => {
        // Paused by backpressure (a full queue), it reads nothing: that is the relay waiting, not
        // the sender idle. Cutting it would lose what the kernel already acknowledged to the sender.
        if (socket.isPaused()) return void socket.setTimeout(this.#o.idleTimeoutMs);
        // Told to close a timeout ago and still open: cut (counted once, at the first timeout).
        if (ended) return void socket.destroy();
        ended = true;
        t.rejected('idle_timeout');
        socket.end();
        // Armed again: a timer that fired waits for traffic, which a sender ignoring our end never makes.
        socket.setTimeout(this.#o.idleTimeoutMs);
      });
    }
    socket.on('data', (chunk: Buffer) => {
      builder.begin(chunk, from);
      deframer.push(chunk);
      if (builder.flush() === 'slow_down' && !socket.isPaused()) {
        socket.pause();
        t.paused();
        void builder.writable().then(() => socket.resume());
      }
    });
    socket.on('end', () => {
      builder.begin(Buffer.alloc(0), from);
      deframer.end();
      builder.flush();
      socket.end();
    });
    socket.on('error', (err) => t.log.warn('socket', { err, sender: from }, 'Sender connection failed.'));
    socket.on('close', () => {
      this.#sockets.delete(socket);
      t.connection(false);
    });
  }

  /** Stop accepting, let open connections finish what they sent, then cut them. */
  async stop(graceMs = 1000): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    const closed = server.close();
    for (const s of this.#sockets) s.end();
    const timer = setTimeout(() => {
      for (const s of this.#sockets) s.destroy();
    }, graceMs);
    await closed;
    clearTimeout(timer);
  }

  dispose(): void {
    this.#t.dispose();
  }
}
