// Syslog over TLS to the intake (RFC 5425): one connection, whole batches per write, socket
// backpressure honoured. The wire has no acknowledgement, so each batch's bytes stay in a resend
// window: a batch is acknowledged once it has been written for `resendWindowMs` on a connection
// that is still up. If the connection fails first, the window's bytes are written again, first
// thing, on the next connection (at-least-once; duplicates bounded by the window and counted).
// The window holds Buffers and counts, never event objects, so it costs the GC nothing.

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

const MAX_BUFFERED_BYTES = 2 * 1024 * 1024;

interface Written {
  readonly buf: Buffer;
  /** The batch's events: [seq, seq + events). */
  readonly seq: number;
  readonly events: number;
  at: number;
  /** The socket has handed these bytes to the kernel: the buffer may be reused once retired. */
  flushed: boolean;
}

/**
 * Batch buffers for reuse, by power-of-two size. A batch buffer lives until the resend window
 * lets it go; allocating a fresh one per batch made V8 hold tens of MB of dead off-heap memory
 * between major collections.
 */
class BufferPool {
  readonly #free = new Map<number, Buffer[]>();
  #bytes = 0;
  readonly #maxBytes: number;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  take(size: number): Buffer {
    const cls = sizeClass(size);
    const b = this.#free.get(cls)?.pop();
    if (b) this.#bytes -= b.length;
    return (b ?? Buffer.allocUnsafeSlow(cls)).subarray(0, size);
  }

  give(buf: Buffer): void {
    const whole = Buffer.from(buf.buffer, buf.byteOffset, buf.buffer.byteLength - buf.byteOffset);
    if (whole.length !== sizeClass(whole.length) || this.#bytes + whole.length > this.#maxBytes) return;
    let list = this.#free.get(whole.length);
    if (!list) this.#free.set(whole.length, (list = []));
    list.push(whole);
    this.#bytes += whole.length;
  }
}

function sizeClass(n: number): number {
  return Math.max(64 * 1024, 2 ** Math.ceil(Math.log2(n)));
}

export class SyslogTlsSink implements Sink {
  readonly type = 'syslog';
  /** One connection, written in order. */
  readonly concurrency = { fixed: 1 } as const;
  readonly #o: SyslogTlsOptions;
  #events: SinkEvents | undefined;
  #socket: tls.TLSSocket | undefined;
  /** Written on the current connection, not yet acknowledged; oldest first. */
  #window: Written[] = [];
  #windowBytes = 0;
  /** Written on a connection that failed: to be written again first on the next one. */
  #resend: Written[] = [];
  #unacked = 0;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  readonly #pool = new BufferPool(16 * 1024 * 1024);
  readonly #alloc = (n: number): Buffer => this.#pool.take(n);

  constructor(options: SyslogTlsOptions) {
    this.#o = options;
  }

  get unacknowledged(): number {
    return this.#unacked;
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
      // What the last connection left unacknowledged goes first, in its order.
      const resend = this.#resend;
      this.#resend = [];
      for (const w of resend) this.#write(socket, w.buf, w.seq, w.events);
    }
    if (batch.events.length > 0) {
      this.#unacked += batch.events.length;
      this.#write(socket, this.#o.formatter.frames(batch.events, this.#alloc), batch.seq, batch.events.length);
    }
    this.#retire(Date.now());
    // Keep a few batches in flight, so the next one is formatted while this one is encrypted and
    // sent: wait only when the socket holds more than that (Node's own mark is 16 KiB).
    if (socket.writableLength > MAX_BUFFERED_BYTES) await waitDrain(socket, signal);
    // Written: from here the window owns the bytes. If this connection fails before they are
    // acknowledged, they are written again on the next one.
    return { status: 'sent' };
  }

  #write(socket: tls.TLSSocket, buf: Buffer, seq: number, events: number): void {
    const w: Written = { buf, seq, events, at: Date.now(), flushed: false };
    socket.write(buf, () => {
      w.flushed = true;
    });
    this.#window.push(w);
    this.#windowBytes += buf.length;
    this.#events?.wrote(buf.length);
  }

  #retire(now: number): void {
    while (this.#window.length > 0) {
      const w = this.#window[0] as Written;
      if (now - w.at < this.#o.resendWindowMs && this.#windowBytes <= this.#o.resendWindowBytes) break;
      this.#window.shift();
      this.#windowBytes -= w.buf.length;
      if (w.flushed) this.#pool.give(w.buf);
      this.#ack(w);
    }
  }

  #ack(w: Written): void {
    this.#unacked -= w.events;
    this.#events?.acknowledged(w.seq, w.events);
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
    let events = 0;
    for (const w of this.#window) events += w.events;
    this.#resend.push(...this.#window);
    this.#window = [];
    this.#windowBytes = 0;
    this.#events?.connectionLost(error, events);
  }

  async handOver(deadline: AbortSignal): Promise<{ state: Written[]; events: number }> {
    const events = await this.stop(deadline);
    const pending = [...this.#resend, ...this.#window];
    this.#resend = [];
    this.#window = [];
    this.#windowBytes = 0;
    this.#unacked = 0;
    return { state: pending, events };
  }

  adopt(state: unknown): void {
    const written = state as Written[];
    for (const w of written) this.#unacked += w.events;
    this.#resend.push(...written);
  }

  async stop(deadline: AbortSignal): Promise<number> {
    if (!this.#stopped) {
      this.#stopped = true;
      if (this.#timer) clearInterval(this.#timer);
      const socket = this.#socket;
      this.#socket = undefined;
      if (socket) {
        // Close our side and wait for the intake to close its own: it has then read everything
        // we wrote, and the whole window counts as delivered.
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
        socket.destroy();
        if (closedByPeer) {
          for (const w of this.#window) this.#ack(w);
          this.#window = [];
        }
      }
    }
    return this.#unacked;
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
