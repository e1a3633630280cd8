// Syslog over UDP (RFC 5426): one datagram, one event. UDP cannot be paused, so when a queue is
// full the datagram is dropped and counted (reason queue_full), whatever when_full says.

import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import { isIP, isIPv6 } from 'node:net';
import type { Inlet } from '../../core/component.ts';
import type { Source } from '../../core/contracts.ts';
import { inRelayWorker, listenError, portsShared, udpPortFree } from '../../platform/net.ts';
import type { SyslogInputTelemetry } from '../../core/telemetry.ts';
import type { Oversize } from '../../syslog/framing.ts';
import type { HeaderDefaults } from '../../syslog/parse.ts';
import { FrameBuilder, senderAddress } from '../frame-builder.ts';
import { nativeUdp, nativeUdpForThreads, type NativeHandle, type NativeUdp } from './native.ts';
import { UdpReceiveThreads, type ReceivedBatch } from './receive-threads.ts';

export interface UdpInputOptions {
  readonly label: string;
  readonly address: string;
  readonly port: number;
  readonly receiveBufferBytes: number | undefined;
  readonly maxMessageBytes: number;
  readonly oversize: Oversize;
  readonly defaults: HeaderDefaults;
  /** Threads receiving datagrams (their own sockets on the port); 0: the main thread's socket. */
  readonly receiveThreads: number;
  /**
   * What the native reader thread, or the receive threads together, may have read and the main
   * thread not taken yet, before they drop (udpBacklogOf: 16 MiB at the default memory_bytes).
   */
  readonly backlogBytes: number;
}

/** The least backlog a receive thread gets: a few batches (the native reader's chunks are 256 KiB). */
const MIN_THREAD_BACKLOG_BYTES = 256 * 1024;

/**
 * Why the native receive cannot bind `address`, or undefined: it takes a numeric address without a
 * zone (a host name goes through dgram's lookup, fe80::1%eth0 through its scope).
 */
function notPlainIp(address: string): string | undefined {
  return isIP(address) !== 0 && !address.includes('%') ? undefined : `the address "${address}" is not a plain IP address`;
}

export class UdpSyslogInput implements Source {
  readonly #o: UdpInputOptions;
  readonly #inlet: Inlet;
  readonly #t: SyslogInputTelemetry;
  #socket: dgram.Socket | undefined;
  #native: { readonly udp: NativeUdp; readonly h: NativeHandle; readonly port: number } | undefined;
  #threads: UdpReceiveThreads | undefined;
  #flush: (() => void) | undefined;

  constructor(options: UdpInputOptions, inlet: Inlet, telemetry: SyslogInputTelemetry) {
    this.#o = options;
    this.#inlet = inlet;
    this.#t = telemetry;
  }

  get label(): string {
    return this.#o.label;
  }

  get port(): number {
    return this.#boundPort() ?? this.#o.port;
  }

  get where(): string {
    return `on port ${this.port}`;
  }

  async start(): Promise<void> {
    if (this.#socket || this.#threads || this.#native) return;
    const o = this.#o;
    const builder = new FrameBuilder(this.#inlet, this.#t, o.defaults);
    const owner = this.#inlet.owner;
    const what = owner ? `${owner}/${o.label}` : `listener ${o.label}`;
    if (o.receiveThreads > 0) return this.#startThreads(builder, what);
    // With workers, each thread has a socket on the port (SO_REUSEPORT) and the kernel spreads senders over them.
    const reusePort = portsShared();
    if (reusePort) await udpPortFree(isIPv6(o.address) ? 'udp6' : 'udp4', o.address, o.port, what);
    const native = nativeUdp();
    const unbindable = notPlainIp(o.address);
    if (native.udp && !unbindable) return this.#startNative(native.udp, builder, what, reusePort);
    this.#t.log.logger.info({ reason: unbindable ?? native.reason }, 'UDP input receives with Node\'s dgram, one call per datagram (slower than recvmmsg).');
    return this.#startDgram(builder, what, reusePort);
  }

  /** Node's dgram: one callback per datagram, offered to the queue once per turn of the event loop. */
  async #startDgram(builder: FrameBuilder, what: string, reusePort: boolean): Promise<void> {
    const o = this.#o;
    const socket = dgram.createSocket({ type: isIPv6(o.address) ? 'udp6' : 'udp4', reuseAddr: false, reusePort });
    // Datagrams arrive back to back within one turn of the event loop: offer them to the queue,
    // and count them, once per turn (or per 512), not once per datagram.
    let scheduled = false;
    const flush = (): void => {
      scheduled = false;
      builder.flush();
    };
    this.#flush = flush;
    socket.on('message', (msg, rinfo) => {
      builder.begin(msg, senderAddress(rinfo.address));
      datagram(builder, msg, 0, msg.length, o);
      if (builder.pending >= 512) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('error', (err: NodeJS.ErrnoException) => reject(listenError(what, `udp ${o.address}:${o.port}`, err.code, err.message, err)));
      socket.bind({ address: o.address, port: o.port }, () => resolve());
    });
    socket.on('error', (err) => this.#t.log.error('socket', err, {}, 'UDP socket error.'));
    if (o.receiveBufferBytes) socket.setRecvBufferSize(o.receiveBufferBytes);
    this.#socket = socket;
    this.#listening(socket.getRecvBufferSize());
  }

  /**
   * The native receive: the addon's reader thread keeps the socket drained with recvmmsg(2) while
   * this thread's loop is busy (a collection, a burst of output, a TLS handshake) and wakes it; each
   * batch of datagrams is handed over in one call, parsed and offered at once (as a receive
   * thread's batch).
   */
  #startNative(udp: NativeUdp, builder: FrameBuilder, what: string, reusePort: boolean): void {
    const o = this.#o;
    let h: NativeHandle;
    try {
      h = udp.open(o.address, o.port, isIPv6(o.address), reusePort, o.receiveBufferBytes ?? 0);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      throw listenError(what, `udp ${o.address}:${o.port}`, e.code, e.message, e);
    }
    let failures = 0;
    let port: number;
    let rcvbuf: number;
    try {
      udp.start(
        h,
        (buf, ends, from, addrs, dropped) => this.#batch(builder, { buf, ends, from, addrs, dropped }),
        // A read failed (not "nothing to read"): logged once per 1,000; the socket is read again after a pause.
        (errno) => {
          if (failures++ % 1000 === 0) this.#readFailed(errno, failures);
        },
        o.backlogBytes,
      );
      [port, rcvbuf] = udp.info(h);
    } catch (err) {
      udp.close(h);
      throw err;
    }
    this.#native = { udp, h, port };
    this.#flush = () => builder.flush();
    // At 0 from the start, so that increase() sees the first drops.
    this.#t.receiveDropped(0);
    this.#listening(rcvbuf);
  }

  /** Receive threads read the sockets; each batch they hand over is parsed and offered here, at once. */
  async #startThreads(builder: FrameBuilder, what: string): Promise<void> {
    const o = this.#o;
    const t = this.#t;
    // The threads receive natively where the main thread would; otherwise with dgram, said once.
    const unbindable = notPlainIp(o.address);
    const native = unbindable ? { reason: unbindable } : nativeUdpForThreads();
    if ('reason' in native) t.log.logger.info({ reason: native.reason }, 'UDP receive threads receive with Node\'s dgram, one call per datagram (slower than recvmmsg).');
    const threads = new UdpReceiveThreads({
      native: 'file' in native ? native.file : undefined,
      threads: o.receiveThreads,
      address: o.address,
      port: o.port,
      type: isIPv6(o.address) ? 'udp6' : 'udp4',
      receiveBufferBytes: o.receiveBufferBytes,
      maxBacklogBytes: Math.max(MIN_THREAD_BACKLOG_BYTES, Math.floor(o.backlogBytes / o.receiveThreads)),
      what,
      onBatch: (b) => this.#batch(builder, b),
      onFailure: (err) => t.log.error('receive_thread', err, {}, 'A UDP receive thread failed: its senders now go to the other threads\' sockets.'),
      onReadError: (errno, failures) => this.#readFailed(errno, failures),
    });
    this.#threads = threads;
    this.#flush = () => builder.flush();
    // At 0 from the start, so that increase() sees the first drops.
    t.receiveDropped(0);
    try {
      await threads.start();
    } catch (err) {
      this.#threads = undefined;
      throw err;
    } finally {
      // Every thread has loaded the addon (or failed): the executable's copy can go.
      if ('done' in native) native.done();
    }
    this.#listening(threads.rcvbuf);
  }

  #batch(builder: FrameBuilder, b: ReceivedBatch): void {
    if (b.dropped > 0) this.#t.receiveDropped(b.dropped);
    const n = b.ends.length;
    if (n === 0) return;
    // Each distinct sender of the batch once, not once per datagram.
    const addrs = b.addrs.map(senderAddress);
    builder.begin(b.buf, addrs[b.from[0] as number] as string);
    let start = 0;
    for (let i = 0; i < n; i++) {
      const end = b.ends[i] as number;
      builder.sender(addrs[b.from[i] as number] as string);
      datagram(builder, b.buf, start, end, this.#o);
      start = end;
    }
    builder.flush();
  }

  #readFailed(errno: number, failures: number): void {
    this.#t.log.error('socket', new Error(`recvmmsg failed: errno ${errno}`), { failures }, 'UDP socket error.');
  }

  /** Bound, whichever way it receives: `rcvbuf` is the receive buffer the kernel granted. */
  #listening(rcvbuf: number): void {
    const asked = this.#o.receiveBufferBytes;
    // Linux reports twice what it grants; less than asked means net.core.rmem_max capped it.
    if (asked && rcvbuf < asked) {
      this.#t.log.logger.warn({ asked, granted: rcvbuf }, 'UDP receive buffer capped by the kernel (raise net.core.rmem_max).');
    }
    // The kernel's count covers every socket on the port: with workers, the main thread reports it.
    if (!inRelayWorker()) this.#t.watchKernelDrops(() => this.#kernelDrops());
  }

  /** The port it is bound to, undefined before it is. */
  #boundPort(): number | undefined {
    return this.#threads?.port ?? this.#native?.port ?? this.#socket?.address().port;
  }

  /**
   * Datagrams the kernel dropped for this socket because its receive buffer was full (Linux
   * /proc/net/udp "drops" column); undefined where the kernel does not tell.
   */
  #kernelDrops(): number | undefined {
    // With receive threads, every socket of the port is theirs: their drops are summed.
    const port = this.#boundPort();
    if (port === undefined) return undefined;
    return udpSocketDrops(isIPv6(this.#o.address) ? '/proc/net/udp6' : '/proc/net/udp', port);
  }

  async stop(): Promise<void> {
    const s = this.#socket;
    this.#socket = undefined;
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
    const native = this.#native;
    this.#native = undefined;
    if (native) {
      // What the kernel already holds for this socket is read and queued, not dropped at close.
      try {
        native.udp.drain(native.h);
      } finally {
        native.udp.close(native.h);
      }
    }
    const threads = this.#threads;
    this.#threads = undefined;
    await threads?.stop();
    // Datagrams read but still waiting for their turn's flush go to the queue before it closes.
    this.#flush?.();
  }

  dispose(): void {
    this.#t.dispose();
  }
}

/** The drops column of the /proc/net/udp line bound to `port`, summed over matching sockets. */
export function udpSocketDrops(file: string, port: number): number | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'latin1');
  } catch {
    return undefined;
  }
  const hexPort = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let drops: number | undefined;
  for (const line of text.split('\n').slice(1)) {
    const cols = line.trim().split(/\s+/);
    if (cols.length < 13 || !(cols[1] as string).endsWith(hexPort)) continue;
    drops = (drops ?? 0) + Number(cols[cols.length - 1]);
  }
  return drops;
}

/** One datagram, buf[start, end): trailing LF, CR and NUL removed; an empty one is nothing, an oversized one dropped or cut. */
function datagram(builder: FrameBuilder, buf: Buffer, start: number, end: number, o: UdpInputOptions): void {
  while (end > start && (buf[end - 1] === 0x0a || buf[end - 1] === 0x0d || buf[end - 1] === 0)) end--;
  if (end === start) return;
  if (end - start > o.maxMessageBytes) {
    if (o.oversize === 'truncate') builder.frame(buf, start, start + o.maxMessageBytes, true);
    else builder.oversized();
  } else {
    builder.frame(buf, start, end, false);
  }
}
