// A UDP receive thread (receive-threads.ts starts them): its own socket on the input's port, the
// datagrams it receives handed to the main thread a turn at a time, in one buffer, through the
// native batched receive where it is built (one JavaScript call per recvmmsg batch) or dgram. It
// imports Node's built-in modules only (and types), so that the thread stays small.

import type dgramModule from 'node:dgram';
import type { MessagePort } from 'node:worker_threads';
import type { NativeHandle, NativeUdp } from './native.ts';

export interface ThreadData {
  readonly address: string;
  readonly port: number;
  readonly type: 'udp4' | 'udp6';
  readonly receiveBufferBytes: number | undefined;
  readonly batchBytes: number;
  readonly maxBacklogBytes: number;
  /** The native receive's shared object to load (native.ts), or undefined for dgram. */
  readonly native: string | undefined;
}

export type FromThread =
  | { readonly kind: 'bound'; readonly port: number; readonly rcvbuf: number }
  | { readonly kind: 'error'; readonly code: string | undefined; readonly message: string }
  | { readonly kind: 'batch'; readonly buf: ArrayBuffer; readonly ends: Uint32Array; readonly from: Uint32Array; readonly addrs: string[]; readonly dropped: number }
  | { readonly kind: 'readError'; readonly errno: number; readonly count: number }
  | { readonly kind: 'stopped' };

/** The body of a receive thread (receive-thread-entry.ts runs it with the thread's data and port). */
export function receiveThread(d: ThreadData, parent: MessagePort, dgram: typeof dgramModule): void {
  if (d.native) nativeReceive(d, d.native, parent);
  else dgramReceive(d, parent, dgram);
}

/** Receives through the native batched receive (native.ts; its types only, which leave nothing in the thread's source). */
function nativeReceive(d: ThreadData, native: string, parent: MessagePort): void {
  const addon = { exports: {} as NativeUdp };
  let h: NativeHandle;
  try {
    process.dlopen(addon, native);
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
}

/**
 * Receives through dgram, one call per datagram, copying each into a batch handed over a turn at a
 * time. A little over 80 lines: the batch being built is shared by the socket's handlers below.
 */
function dgramReceive(d: ThreadData, parent: MessagePort, dgram: typeof dgramModule): void {
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

