// UDP receive threads: N worker threads, each with its own socket on the input's port (SO_REUSEPORT:
// the kernel spreads senders over them by address and port), copy the datagrams they receive into
// one buffer per turn and hand it to the main thread, which parses, routes and queues them as
// before. They keep the sockets drained while the main thread is busy formatting and writing: the
// kernel no longer drops datagrams because one event loop did everything. What the main thread has
// not taken yet is bounded (maxBacklogBytes per thread); past it a thread drops datagrams and
// counts them. The thread's code is self-contained (Node's built-in modules only) and runs from
// its source text, so it works the same from dist/, from src/ and in the single executable. Where
// the native receive is built (native.ts), a thread loads it and hands over each recvmmsg batch as
// it comes (one JavaScript call per batch); otherwise it uses dgram, one call per datagram.

import type dgramModule from 'node:dgram';
import { Worker, type MessagePort } from 'node:worker_threads';
import { RelayError } from '../../core/errors.ts';
import type { NativeHandle, NativeUdp } from './native.ts';
import { listenError, udpPortFree } from '../../platform/net.ts';

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

interface ThreadData {
  readonly address: string;
  readonly port: number;
  readonly type: 'udp4' | 'udp6';
  readonly receiveBufferBytes: number | undefined;
  readonly batchBytes: number;
  readonly maxBacklogBytes: number;
  /** The native receive's shared object to load (native.ts), or undefined for dgram. */
  readonly native: string | undefined;
}

type FromThread =
  | { readonly kind: 'bound'; readonly port: number; readonly rcvbuf: number }
  | { readonly kind: 'error'; readonly code: string | undefined; readonly message: string }
  | { readonly kind: 'batch'; readonly buf: ArrayBuffer; readonly ends: Uint32Array; readonly from: Uint32Array; readonly addrs: string[]; readonly dropped: number }
  | { readonly kind: 'readError'; readonly errno: number; readonly count: number }
  | { readonly kind: 'stopped' };

/**
 * The body of a receive thread. It runs from its source text in the worker (see spawn()), so it
 * uses nothing but its arguments: no imports, no names from this module.
 */
function receiveThread(d: ThreadData, parent: MessagePort, dgram: typeof dgramModule): void {
  if (d.native) {
    // The native receive (native.ts; its types only, which leave nothing in the thread's source).
    const addon = { exports: {} as NativeUdp };
    let h: NativeHandle;
    try {
      process.dlopen(addon, d.native);
      h = addon.exports.open(d.address, d.port, d.type === 'udp6', true, d.receiveBufferBytes ?? 0);
    } catch (err) {
      parent.postMessage({ kind: 'error', code: (err as NodeJS.ErrnoException).code, message: (err as Error).message });
      parent.close();
      return;
    }
    const udp = addon.exports;
    let backlog = 0;
    let dropped = 0;
    let readErrors = 0;
    let reportDrops = false;
    // Drops are reported with the next batch, or on their own at the end of this turn.
    const report = (): void => {
      reportDrops = false;
      if (dropped === 0) return;
      parent.postMessage({ kind: 'batch', buf: new ArrayBuffer(0), ends: new Uint32Array(0), from: new Uint32Array(0), addrs: [], dropped });
      dropped = 0;
    };
    udp.start(
      h,
      (buf, ends, from, addrs) => {
        if (backlog + buf.length > d.maxBacklogBytes) {
          dropped += ends.length;
          if (!reportDrops) {
            reportDrops = true;
            setImmediate(report);
          }
          return;
        }
        // The addon's Buffer owns its memory exactly; copy only if it is a view into more.
        const whole = buf.byteOffset === 0 && buf.byteLength === buf.buffer.byteLength;
        const ab = whole ? (buf.buffer as ArrayBuffer) : new Uint8Array(buf).buffer;
        // Counted before the transfer, which leaves ab empty.
        backlog += ab.byteLength;
        parent.postMessage({ kind: 'batch', buf: ab, ends, from, addrs, dropped }, [ab, ends.buffer as ArrayBuffer, from.buffer as ArrayBuffer]);
        dropped = 0;
      },
      // A read that failed (not "nothing to read"): the addon polls again after 100 ms; the main
      // thread logs the first of every 1,000.
      (errno) => {
        if (readErrors++ % 1000 === 0) parent.postMessage({ kind: 'readError', errno, count: readErrors });
      },
    );
    parent.on('message', (m: { kind: 'ack'; bytes: number } | { kind: 'stop' }) => {
      if (m.kind === 'ack') {
        backlog -= m.bytes;
        return;
      }
      // What the kernel holds is read and handed over before the socket closes.
      udp.drain(h);
      udp.close(h);
      report();
      parent.postMessage({ kind: 'stopped' });
      parent.close();
    });
    const [port, rcvbuf] = udp.info(h);
    parent.postMessage({ kind: 'bound', port, rcvbuf });
    return;
  }
  const socket = dgram.createSocket({ type: d.type, reusePort: true });
  let scratch = Buffer.allocUnsafe(d.batchBytes);
  let used = 0;
  let ends: number[] = [];
  let from: number[] = [];
  let addrs: string[] = [];
  const index = new Map<string, number>();
  let backlog = 0;
  let dropped = 0;
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    if (ends.length === 0 && dropped === 0) return;
    const buf = new ArrayBuffer(used);
    new Uint8Array(buf).set(scratch.subarray(0, used));
    const e = Uint32Array.from(ends);
    const f = Uint32Array.from(from);
    parent.postMessage({ kind: 'batch', buf, ends: e, from: f, addrs, dropped }, [buf, e.buffer, f.buffer]);
    backlog += used;
    used = 0;
    ends = [];
    from = [];
    addrs = [];
    index.clear();
    dropped = 0;
  };
  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  };
  socket.on('message', (msg, rinfo) => {
    if (backlog + used + msg.length > d.maxBacklogBytes) {
      dropped++;
      schedule();
      return;
    }
    if (msg.length > scratch.length - used) {
      flush();
      if (msg.length > scratch.length) scratch = Buffer.allocUnsafe(msg.length);
    }
    msg.copy(scratch, used);
    used += msg.length;
    ends.push(used);
    let k = index.get(rinfo.address);
    if (k === undefined) {
      k = addrs.length;
      addrs.push(rinfo.address);
      index.set(rinfo.address, k);
    }
    from.push(k);
    schedule();
  });
  parent.on('message', (m: { kind: 'ack'; bytes: number } | { kind: 'stop' }) => {
    if (m.kind === 'ack') {
      backlog -= m.bytes;
      return;
    }
    socket.close(() => {
      flush();
      parent.postMessage({ kind: 'stopped' });
      parent.close();
    });
  });
  // A socket that fails is closed, so that the kernel gives its senders to the port's other sockets.
  let failed = false;
  socket.on('error', (err: NodeJS.ErrnoException) => {
    if (failed) return;
    failed = true;
    parent.postMessage({ kind: 'error', code: err.code, message: err.message });
    try {
      socket.close(() => parent.close());
    } catch {
      parent.close(); // never bound: nothing to close
    }
  });
  socket.bind({ address: d.address, port: d.port }, () => {
    if (d.receiveBufferBytes) socket.setRecvBufferSize(d.receiveBufferBytes);
    parent.postMessage({ kind: 'bound', port: socket.address().port, rcvbuf: socket.getRecvBufferSize() });
  });
}

const SOURCE = `const { workerData, parentPort } = require('node:worker_threads');\n(${receiveThread.toString()})(workerData, parentPort, require('node:dgram'));`;

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
    const w = new Worker(SOURCE, { eval: true, workerData: data, name: 'udp-receive', resourceLimits: { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 32 } });
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
