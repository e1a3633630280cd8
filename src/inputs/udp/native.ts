// The native batched UDP receive (native/udp-recvmmsg.c: recvmmsg(2), one JavaScript call per batch
// of datagrams; read by a thread of the addon into a bounded backlog, or polled on the thread's own
// event loop), when the relay's native addon was built and
// loads (src/platform/native-addon.ts); otherwise the UDP input uses Node's dgram, one call per
// datagram. INTAKE_RELAY_UDP_RECVMMSG=0 turns it off (troubleshooting: the dgram path is always there).

import { nativeAddon, nativeAddonFile } from '../../platform/native-addon.ts';

/** A receiver's handle: only the functions below may use it, and none after close(). */
export type NativeHandle = { readonly __nativeUdpReceiver: unique symbol };

export interface NativeUdp {
  /** A bound, non-blocking socket; throws an Error with code (EADDRINUSE, ...) and syscall. */
  open(address: string, port: number, ipv6: boolean, reusePort: boolean, rcvbuf: number): NativeHandle;
  /** [bound port, receive buffer as the kernel reports it]. */
  info(h: NativeHandle): [number, number];
  /**
   * Receives: each batch is the datagrams back to back in buf, with those dropped since the last
   * batch. With `backlogBytes`, a reader thread keeps the socket drained into a backlog of at most
   * that many bytes (past it, datagrams are dropped and counted) and this thread's loop takes it;
   * without, the socket is polled on this thread's loop.
   */
  start(h: NativeHandle, onBatch: (buf: Buffer, ends: Uint32Array, from: Uint32Array, addrs: string[], dropped: number) => void, onError: (errno: number) => void, backlogBytes?: number): void;
  /** Stops the reader thread, and hands what it read and what the socket holds now to onBatch before returning (a stop). */
  drain(h: NativeHandle): void;
  close(h: NativeHandle): void;
}

/** The native receive, or undefined (and why) when it is off, not built, or does not load here. */
export function nativeUdp(): { readonly udp: NativeUdp | undefined; readonly reason: string } {
  if (process.env.INTAKE_RELAY_UDP_RECVMMSG === '0') return { udp: undefined, reason: 'turned off by INTAKE_RELAY_UDP_RECVMMSG=0' };
  const addon = nativeAddon();
  return addon.exports ? { udp: addon.exports as unknown as NativeUdp, reason: 'recvmmsg' } : { udp: undefined, reason: addon.reason };
}

/**
 * The addon as a file receive threads can load (receive-threads.ts), and `done` to call once they
 * have; or why not.
 */
export function nativeUdpForThreads(): { readonly file: string; done(): void } | { readonly reason: string } {
  const native = nativeUdp();
  if (!native.udp) return { reason: native.reason };
  return nativeAddonFile();
}
