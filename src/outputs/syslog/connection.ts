// A syslog output connection and what it holds: the batches written on it and not yet proven
// read, oldest first, with what the kernel has taken of them (the sink's proof of delivery); and
// how one is opened, with what its socket's events mean to the sink.

import type tls from 'node:tls';
import { RelayError } from '../../core/errors.ts';
import { ResumedHandshakeFailed, type IntakeTls } from '../tls-options.ts';

export interface Written {
  readonly buf: Buffer;
  /** The batch's events: [seq, seq + events). */
  readonly seq: number;
  readonly events: number;
  /** When it was written on its connection (performance.now(): a step of the wall clock is no timeout). */
  readonly at: number;
  /** Bytes the kernel had taken on this connection once this batch was in; -1 until then. */
  end: number;
}

/** A FIFO with O(1) shift (a low-rate stream keeps many one-event batches waiting). */
class Fifo<T> {
  #items: T[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }
  peek(): T | undefined {
    return this.#items[this.#head];
  }
  push(item: T): void {
    this.#items.push(item);
  }
  shift(): T | undefined {
    const item = this.#items[this.#head];
    if (item === undefined) return undefined;
    this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }
  /** Empties the FIFO; returns what it held, oldest first. */
  drain(): T[] {
    const rest = this.#items.slice(this.#head);
    this.#items = [];
    this.#head = 0;
    return rest;
  }
}

export class Connection {
  readonly socket: tls.TLSSocket;
  /** Written on this connection and not yet proven, oldest first. */
  readonly window = new Fifo<Written>();
  written = 0;
  /** Bytes of the batches in `window` (written, not yet proven). */
  held = 0;
  lastWriteAt = 0;
  /** Bytes the kernel has taken on this connection. */
  taken = 0;
  /** Last time the kernel took bytes (or the connection opened, or its close began). */
  progressAt = performance.now();
  closing = false;
  /** Everything we wrote, and our close, went out. */
  finished = false;
  peerClosed = false;
  done = false;
  /** It carries what a failed connection held: close it for confirmation once that is written. */
  confirmSoon = false;

  readonly #waiters = new Set<() => void>();

  constructor(socket: tls.TLSSocket) {
    this.socket = socket;
  }

  /** Resolves once the socket drains, or once this connection is closed or fails (end() never emits 'drain'). */
  drained(signal: AbortSignal): Promise<void> {
    if (this.closing || this.done) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        this.socket.off('drain', done);
        signal.removeEventListener('abort', done);
        this.#waiters.delete(done);
        resolve();
      };
      this.socket.on('drain', done);
      signal.addEventListener('abort', done, { once: true });
      this.#waiters.add(done);
    });
  }

  /** Lets every send() waiting on this connection go on (it is closed or failed). */
  release(): void {
    for (const w of [...this.#waiters]) w();
  }
}

/** What a connection's socket tells its sink once open: it failed (and why), or our close was answered. */
export interface ConnectionEvents {
  failed(conn: Connection, error: RelayError): void;
  confirmed(conn: Connection): void;
}

/** Opens a TLS connection to the intake within `connectTimeoutMs`; rejects with why it could not. */
export function openConnection(
  tls: IntakeTls,
  o: { readonly host: string; readonly port: number; readonly connectTimeoutMs: number },
  signal: AbortSignal,
  on: ConnectionEvents,
): Promise<Connection> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect(o.host, o.port);
    const timer = setTimeout(() => fail(new RelayError('ERELAY_CONNECT_TIMEOUT', `Connection to ${o.host}:${o.port} timed out after ${o.connectTimeoutMs} ms.`)), o.connectTimeoutMs);
    const onAbort = (): void => fail(new RelayError('ERELAY_SHUTDOWN', 'Connect aborted by shutdown.'));
    signal.addEventListener('abort', onAbort, { once: true });
    const cleanup = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      socket.off('error', fail);
    };
    const fail = (err: unknown): void => {
      cleanup();
      socket.destroy();
      reject(tls.failed(socket, err) ? new ResumedHandshakeFailed(err) : err);
    };
    socket.once('error', fail);
    socket.once('secureConnect', () => {
      cleanup();
      const conn = new Connection(socket);
      const where = `${o.host}:${o.port}`;
      socket.setNoDelay(true);
      socket.setKeepAlive(true, 30_000);
      socket.on('data', () => {}); // the intake sends nothing; keep the read side drained
      socket.on('error', (err: NodeJS.ErrnoException) => {
        on.failed(conn, new RelayError('ERELAY_CONNECTION_LOST', `Connection to ${where} failed (${err.code ?? 'error'}).`, { cause: err }));
      });
      socket.on('finish', () => {
        conn.finished = true;
      });
      socket.on('end', () => {
        // Only a close that follows ours, all written, answers it; one the intake made first (an
        // idle timeout, a restart) says nothing about what it had not read yet.
        if (conn.closing && conn.finished) conn.peerClosed = true;
        else on.failed(conn, new RelayError('ERELAY_CONNECTION_LOST', `Intake ${where} closed the connection.`));
      });
      socket.on('close', () => {
        if (conn.closing && conn.peerClosed) on.confirmed(conn);
        else on.failed(conn, new RelayError('ERELAY_CONNECTION_LOST', `Connection to ${where} closed.`));
      });
      resolve(conn);
    });
  });
}
