// Syslog over TLS to the intake (RFC 5425): one connection, whole batches per write, socket
// backpressure honoured. The wire has no acknowledgement, so written batches stay in a resend
// window: a batch is acknowledged once it has been written for `resendWindowMs` on a connection
// that is still up; if the connection fails first, the runner reclaims it and writes it again on
// the next connection (at-least-once, duplicates bounded by the window and counted).

import { isIP } from 'node:net';
import tls from 'node:tls';
import type { Batch } from '../core/event.ts';
import { RelayError, classifyConnectError } from '../core/errors.ts';
import type { Rfc5424Formatter } from './rfc5424.ts';
import type { SendResult, Sink, SinkEvents } from './sink.ts';

export interface SyslogTlsOptions {
  readonly host: string;
  readonly port: number;
  /** Name checked against the certificate; defaults to `host`. */
  readonly serverName: string | undefined;
  readonly ca: Buffer | undefined;
  readonly cert: Buffer | undefined;
  readonly key: Buffer | undefined;
  readonly connectTimeoutMs: number;
  readonly resendWindowMs: number;
  readonly resendWindowBytes: number;
  readonly formatter: Rfc5424Formatter;
}

interface Written {
  readonly batch: Batch;
  readonly bytes: number;
  readonly at: number;
}

export class SyslogTlsSink implements Sink {
  readonly type = 'syslog';
  readonly #o: SyslogTlsOptions;
  #events: SinkEvents | undefined;
  #socket: tls.TLSSocket | undefined;
  #window: Written[] = [];
  #windowBytes = 0;
  #windowEvents = 0;
  #orphans: Batch[] = [];
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: SyslogTlsOptions) {
    this.#o = options;
  }

  get unacknowledged(): number {
    let n = this.#windowEvents;
    for (const b of this.#orphans) n += b.events.length;
    return n;
  }

  async start(events: SinkEvents): Promise<void> {
    this.#events = events;
    // Acknowledge aged writes even when no new batch comes to trigger it.
    this.#timer = setInterval(() => this.#retire(Date.now()), Math.max(50, Math.min(1000, this.#o.resendWindowMs / 4)));
    this.#timer.unref();
  }

  async send(batch: Batch, signal: AbortSignal): Promise<SendResult> {
    if (this.#stopped) return { status: 'retryable', error: new RelayError('ERELAY_SHUTDOWN', 'Output is stopping.') };
    let socket = this.#socket;
    if (!socket) {
      try {
        socket = await this.#connect(signal);
      } catch (err) {
        return { status: 'retryable', error: classifyConnectError(err, this.#o.host, this.#o.port) };
      }
    }
    const { text, bytes } = this.#o.formatter.frames(batch.events);
    const flushed = socket.write(text);
    const now = Date.now();
    this.#window.push({ batch, bytes, at: now });
    this.#windowBytes += bytes;
    this.#windowEvents += batch.events.length;
    this.#events?.wrote(bytes);
    this.#retire(now);
    if (!flushed) await waitDrain(socket, signal);
    // Written: from here the window owns the batch. If this connection fails before the batch
    // is acknowledged, connectionLost() hands it back through reclaim().
    return { status: 'sent' };
  }

  #retire(now: number): void {
    const limit = this.#o.resendWindowBytes;
    while (this.#window.length > 0) {
      const w = this.#window[0] as Written;
      if (now - w.at < this.#o.resendWindowMs && this.#windowBytes <= limit) break;
      this.#window.shift();
      this.#windowBytes -= w.bytes;
      this.#windowEvents -= w.batch.events.length;
      this.#events?.acknowledged(w.batch);
    }
  }

  #ackAll(): void {
    const w = this.#window;
    this.#window = [];
    this.#windowBytes = 0;
    this.#windowEvents = 0;
    for (const x of w) this.#events?.acknowledged(x.batch);
  }

  reclaim(): Batch[] {
    const o = this.#orphans;
    this.#orphans = [];
    return o;
  }

  #connect(signal: AbortSignal): Promise<tls.TLSSocket> {
    const o = this.#o;
    return new Promise((resolve, reject) => {
      const name = o.serverName ?? o.host;
      const socket = tls.connect({
        host: o.host,
        port: o.port,
        // SNI takes names only; the certificate check still uses `name` (an IP is matched against IP SANs).
        servername: isIP(name) ? undefined : name,
        checkServerIdentity: (_host, cert) => tls.checkServerIdentity(name, cert),
        ca: o.ca,
        cert: o.cert,
        key: o.key,
        minVersion: 'TLSv1.2',
        rejectUnauthorized: true,
      });
      const timer = setTimeout(() => fail(Object.assign(new Error('connect timeout'), { code: 'ERELAY_CONNECT_TIMEOUT' })), o.connectTimeoutMs);
      const onAbort = (): void => fail(new RelayError('ERELAY_SHUTDOWN', 'Connect aborted by shutdown.'));
      signal.addEventListener('abort', onAbort, { once: true });
      const cleanup = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        socket.off('error', fail);
      };
      function fail(err: unknown): void {
        cleanup();
        socket.destroy();
        reject(err);
      }
      socket.once('error', fail);
      socket.once('secureConnect', () => {
        cleanup();
        socket.setNoDelay(true);
        socket.setKeepAlive(true, 30_000);
        socket.on('data', () => {}); // the intake sends nothing; keep the read side drained
        socket.on('error', (err) => this.#lost(socket, classifyConnectError(err, o.host, o.port)));
        socket.on('end', () => this.#lost(socket, new RelayError('ERELAY_CONNECTION_LOST', `Intake ${o.host}:${o.port} closed the connection.`)));
        socket.on('close', () => this.#lost(socket, new RelayError('ERELAY_CONNECTION_LOST', `Connection to ${o.host}:${o.port} closed.`)));
        this.#socket = socket;
        this.#events?.connected();
        resolve(socket);
      });
    });
  }

  #lost(socket: tls.TLSSocket, error: RelayError): void {
    // While stopping, stop() decides what the end of the connection means.
    if (this.#socket !== socket || this.#stopped) return;
    this.#socket = undefined;
    socket.destroy();
    for (const w of this.#window) this.#orphans.push(w.batch);
    this.#window = [];
    this.#windowBytes = 0;
    this.#windowEvents = 0;
    this.#events?.connectionLost(error);
  }

  async stop(deadline: AbortSignal): Promise<Batch[]> {
    if (this.#stopped) return this.reclaim();
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    const socket = this.#socket;
    if (socket) {
      // Close our side and wait for the intake to close its own: it has then read everything we
      // wrote, and the whole window counts as delivered.
      const closedByPeer = await new Promise<boolean>((resolve) => {
        const done = (ok: boolean): void => {
          deadline.removeEventListener('abort', onAbort);
          resolve(ok);
        };
        const onAbort = (): void => done(false);
        deadline.addEventListener('abort', onAbort, { once: true });
        socket.once('end', () => done(true));
        socket.once('close', () => done(false));
        socket.end();
      });
      if (closedByPeer && this.#socket === socket) this.#ackAll();
      this.#socket = undefined;
      socket.destroy();
      for (const w of this.#window) this.#orphans.push(w.batch);
      this.#window = [];
      this.#windowBytes = 0;
      this.#windowEvents = 0;
    }
    return this.reclaim();
  }
}

function waitDrain(socket: tls.TLSSocket, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      socket.off('drain', done);
      socket.off('close', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    socket.on('drain', done);
    socket.on('close', done);
    signal.addEventListener('abort', done, { once: true });
  });
}
