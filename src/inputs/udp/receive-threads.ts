// UDP receive threads: N worker threads, each with its own socket on the input's port (SO_REUSEPORT:
// the kernel spreads senders over them by address and port), copy the datagrams they receive into
// one buffer per turn and hand it to the main thread, which parses, routes and queues them as
// before. They keep the sockets drained while the main thread is busy formatting and writing: the
// kernel no longer drops datagrams because one event loop did everything. What the main thread has
// not taken yet is bounded (maxBacklogBytes per thread); past it a thread drops datagrams and
// counts them. The thread's code (receive-thread.ts) uses Node's built-in modules only, so that a
// thread stays small; it is a module of its own, started as the workers are (platform/threads.ts),
// and in the single executable a small bundle of its own. Where
// the native receive is built (native.ts), a thread loads it and hands over each recvmmsg batch as
// it comes (one JavaScript call per batch); otherwise it uses dgram, one call per datagram.

import type { Worker } from 'node:worker_threads';
import { RelayError } from '../../core/errors.ts';
import { listenError, udpPortFree } from '../../platform/net.ts';
import { startThread } from '../../platform/threads.ts';
import type { FromThread, ThreadData } from './receive-thread.ts';

/** One turn's datagrams of one thread: their bytes back to back, where each ends, who sent it. */
export interface ReceivedBatch {
  readonly buf: Buffer;
  /** Datagram i is buf[ends[i - 1] ?? 0, ends[i]). */
  readonly ends: Uint32Array;
  /** Datagram i came from addrs[from[i]]. */
  readonly from: Uint32Array;
  readonly addrs: readonly string[];
  /** Datagrams the thread dropped since its last batch: the main thread had not taken maxBacklogBytes yet. */
  readonly dropped: number;
}

export interface ReceiveThreadsOptions {
  readonly threads: number;
  readonly address: string;
  readonly port: number;
  readonly type: 'udp4' | 'udp6';
  readonly receiveBufferBytes: number | undefined;
  /** Bytes handed over and not taken by the main thread yet, per thread, before it drops. */
  readonly maxBacklogBytes: number;
  /** Where the batches go (the main thread's parse and queue); called in the order each thread received. */
  readonly onBatch: (batch: ReceivedBatch) => void;
  /** A thread that failed after it started (its senders go to the other sockets). */
  readonly onFailure: (err: Error) => void;
  /** A native read failed (the first of every 1,000 a thread sees; it retries after 100 ms). */
  readonly onReadError: (errno: number, count: number) => void;
  /** For errors: "<intake>/<input>" or "listener <name>". */
  readonly what: string;
  /** The native receive's shared object for the threads to load (nativeUdpForThreads()), or undefined for dgram. */
  readonly native: string | undefined;
}




/** Batch buffers start at this size (a turn's datagrams; a larger datagram gets one of its own). */
const BATCH_BYTES = 256 * 1024;

export class UdpReceiveThreads {
  readonly #o: ReceiveThreadsOptions;
  readonly #workers: Worker[] = [];
  readonly #exited = new WeakSet<Worker>();
  #port = 0;
  /** The kernel's receive buffer per socket, as it reports it (twice what it grants). */
  rcvbuf = 0;
  #stopping = false;

  constructor(options: ReceiveThreadsOptions) {
    this.#o = options;
  }

  get port(): number {
    return this.#port;
  }

  /** Binds every thread's socket (the first on the configured port, the others on the port it got). */
  async start(): Promise<void> {
    const o = this.#o;
    try {
      // With SO_REUSEPORT, a port another process's reusePort sockets hold (a second relay) would
      // be shared with it without an error: a plain socket's bind tells first.
      await udpPortFree(o.type, o.address, o.port, o.what);
      this.#port = await this.#spawn(o.port);
      for (let i = 1; i < o.threads && !this.#stopping; i++) await this.#spawn(this.#port);
    } catch (err) {
      await this.stop();
      throw err;
    }
  }

  #spawn(port: number): Promise<number> {
    const o = this.#o;
    const data: ThreadData = { address: o.address, port, type: o.type, receiveBufferBytes: o.receiveBufferBytes, batchBytes: BATCH_BYTES, maxBacklogBytes: o.maxBacklogBytes, native: o.native };
    const w = startThread(import.meta.url, './receive-thread-entry', { workerData: data, name: 'udp-receive', resourceLimits: { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 32 } }, 'udp-receive-thread.cjs');
    this.#workers.push(w);
    return new Promise<number>((resolve, reject) => {
      let bound = false;
      w.on('message', (m: FromThread) => {
        switch (m.kind) {
          case 'bound':
            bound = true;
            this.rcvbuf = m.rcvbuf;
            resolve(m.port);
            return;
          case 'batch':
            o.onBatch({ buf: Buffer.from(m.buf), ends: m.ends, from: m.from, addrs: m.addrs, dropped: m.dropped });
            w.postMessage({ kind: 'ack', bytes: m.buf.byteLength });
            return;
          case 'error': {
            const err = listenError(o.what, `udp ${o.address}:${port}`, m.code, m.message);
            if (!bound) reject(err);
            else o.onFailure(err);
            return;
          }
          case 'readError':
            o.onReadError(m.errno, m.count);
            return;
          case 'stopped':
            return;
        }
      });
      w.on('error', (err) => {
        if (!bound) reject(err);
        else o.onFailure(err);
      });
      w.on('exit', (code) => {
        this.#exited.add(w);
        if (!bound) reject(new RelayError('ERELAY_LISTEN', `${o.what}: a UDP receive thread ended (${code}) before it listened.`));
        else if (!this.#stopping && code !== 0) o.onFailure(new Error(`a UDP receive thread ended with code ${code}`));
      });
    });
  }

  /** Closes every socket; resolves once each thread has handed over what it had received. */
  async stop(): Promise<void> {
    this.#stopping = true;
    const workers = this.#workers.splice(0);
    await Promise.all(
      workers.map(
        (w) =>
          new Promise<void>((resolve) => {
            if (this.#exited.has(w)) return resolve();
            w.once('exit', () => resolve());
            w.postMessage({ kind: 'stop' });
            // A thread that cannot close in time is ended: what it held is lost, like a socket's buffer at a close.
            setTimeout(() => void w.terminate(), 2_000).unref();
          }),
      ),
    );
  }
}
