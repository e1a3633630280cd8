// A syslog output connection and what it holds: the batches written on it and not yet proven
// read, oldest first, with what the kernel has taken of them (the sink's proof of delivery).

import type tls from 'node:tls';

export interface Written {
  readonly buf: Buffer;
  /** The batch's events: [seq, seq + events). */
  readonly seq: number;
  readonly events: number;
  /** When it was written on its connection. */
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
  progressAt = Date.now();
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
