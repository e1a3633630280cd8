// The RELP listener (plain or TLS, mutual TLS optional): accepts sessions up to max_connections,
// runs one RelpServerSession per connection (session.ts), and stops in order: no new sessions,
// reading stops, the answers due are still written within the grace time (finish), then each
// session gets the "serverclose" hint and is closed.

import net from 'node:net';
import type { Inlet, TlsFiles } from '../../core/component.ts';
import type { ProxyProtocolSettings } from '../../core/config-values.ts';
import type { Source } from '../../core/contracts.ts';
import type { RelpInputTelemetry } from '../../core/telemetry.ts';
import type { HeaderDefaults } from '../../syslog/parse.ts';
import { FrameBuilder } from '../frame-builder.ts';
import { StreamServer } from '../stream-server.ts';
import { RelpServerSession, type RelpSessionOptions } from './session.ts';

export interface RelpInputOptions extends RelpSessionOptions {
  readonly label: string;
  readonly address: string;
  readonly port: number;
  readonly maxConnections: number;
  readonly idleTimeoutMs: number;
  readonly tls: TlsFiles | undefined;
  readonly defaults: HeaderDefaults;
  readonly proxy: ProxyProtocolSettings | undefined;
}

export class RelpInput implements Source {
  readonly #o: RelpInputOptions;
  readonly #inlet: Inlet;
  readonly #t: RelpInputTelemetry;
  readonly #sessions = new Map<net.Socket, RelpServerSession>();
  #server: StreamServer | undefined;
  #closed: Promise<void> | undefined;

  constructor(options: RelpInputOptions, inlet: Inlet, telemetry: RelpInputTelemetry) {
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
    const server = new StreamServer({ maxConnections: o.maxConnections, tls: o.tls, allowHalfOpen: true, proxy: o.proxy, idleTimeoutMs: o.idleTimeoutMs }, t, (socket, from) => this.#accept(socket, from));
    this.#server = server;
    t.listening();
    const owner = this.#inlet.owner;
    await server.listen(o.address, o.port, owner ? `${owner}/${o.label}` : `listener ${o.label}`);
  }

  #accept(socket: net.Socket, from: string): void {
    const t = this.#t;
    const builder = new FrameBuilder(this.#inlet, t, this.#o.defaults);
    const session = new RelpServerSession(socket, from, this.#o, this.#inlet, builder, t);
    this.#sessions.set(socket, session);
    t.connection(true);
    socket.setNoDelay(true);
    if (this.#o.idleTimeoutMs > 0) {
      // Not setTimeout's callback: that listener is called once, and this one must outlive a
      // session that waited for its answers at the first timeout.
      socket.setTimeout(this.#o.idleTimeoutMs);
      socket.on('timeout', () => {
        // Told to close a timeout ago (nothing more is written then) and still open: cut.
        if (session.ended) return void socket.destroy();
        // A session waiting for its answers is not idle.
        if (session.unanswered > 0) return;
        t.rejected('idle_timeout');
        session.close();
        // Armed again: a timer that fired waits for traffic, which a sender ignoring our end never makes.
        socket.setTimeout(this.#o.idleTimeoutMs);
      });
    }
    socket.on('data', (chunk: Buffer) => session.read(chunk));
    // The sender closed its side: what it sent is answered, then ours closes.
    // (Half-open allowed: Node would otherwise end our side at once, before those answers.)
    socket.on('end', () => void session.answered.then(() => socket.end()));
    socket.on('error', (err) => t.log.warn('socket', { err, sender: from }, 'RELP sender connection failed.'));
    socket.on('close', () => {
      session.gone();
      this.#sessions.delete(socket);
      t.connection(false);
    });
  }

  /** Stops accepting and reading; sessions stay open for their answers (finish). */
  async stop(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    this.#closed = server.close();
    for (const s of this.#sessions.values()) s.pause();
  }

  /**
   * Writes the answers due (their events must become safe meanwhile: the queues are still open),
   * for at most `graceMs`; then every session gets "serverclose" and is closed. What was not
   * answered is sent again by the senders to whoever listens next.
   */
  async finish(graceMs = 1000): Promise<void> {
    const sessions = [...this.#sessions.entries()];
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
    await Promise.race([Promise.all(sessions.map(([, s]) => s.answered)), grace]);
    clearTimeout(timer);
    for (const [socket, s] of sessions) {
      s.close();
      // A sender that does not close its side is cut shortly after.
      setTimeout(() => socket.destroy(), 1000).unref();
    }
    await this.#closed;
  }

  dispose(): void {
    this.#t.dispose();
  }
}
