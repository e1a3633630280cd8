// The native batched UDP receive (native/udp-recvmmsg.c, recvmmsg(2) on the thread's own event
// loop, one JavaScript call per batch of datagrams), when it was built and loads; otherwise the
// UDP input uses Node's dgram, one call per datagram. Built by native/compile.mjs at `npm ci`
// and `npm run build` (needs a C compiler), and carried inside the single executable as an asset.
// INTAKE_RELAY_UDP_RECVMMSG=0 turns it off (troubleshooting: the dgram path is always there).

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

declare const INTAKE_RELAY_BUILD: unknown;

/** A receiver's handle: only the functions below may use it, and none after close(). */
export type NativeHandle = { readonly __nativeUdpReceiver: unique symbol };

export interface NativeUdp {
  /** A bound, non-blocking socket; throws an Error with code (EADDRINUSE, ...) and syscall. */
  open(address: string, port: number, ipv6: boolean, reusePort: boolean, rcvbuf: number): NativeHandle;
  /** [bound port, receive buffer as the kernel reports it]. */
  info(h: NativeHandle): [number, number];
  /** Polls the socket on this thread's loop: each batch is the datagrams back to back in buf. */
  start(h: NativeHandle, onBatch: (buf: Buffer, ends: Uint32Array, from: Uint32Array, addrs: string[]) => void, onError: (errno: number) => void): void;
  /** Reads what the socket holds now and hands it to onBatch before returning (a stop). */
  drain(h: NativeHandle): void;
  close(h: NativeHandle): void;
}

/** The file name, in native/build/ of a checkout or package, and as the single executable's asset. */
export const NATIVE_UDP_FILE = 'udp-recvmmsg.node';

let loaded: { readonly udp: NativeUdp | undefined; readonly reason: string } | undefined;

/** The native receive, or undefined (and why) when it is off, not built, or does not load here. */
export function nativeUdp(): { readonly udp: NativeUdp | undefined; readonly reason: string } {
  if (process.env.INTAKE_RELAY_UDP_RECVMMSG === '0') return { udp: undefined, reason: 'turned off by INTAKE_RELAY_UDP_RECVMMSG=0' };
  loaded ??= load();
  return loaded;
}

/**
 * The addon as a file receive threads can load (receive-threads.ts), and `done` to call once they
 * have: in a checkout or package the built file; in the single executable its asset written to a
 * private temporary directory, removed by `done`. Or why not.
 */
export function nativeUdpForThreads(): { readonly file: string; done(): void } | { readonly reason: string } {
  const native = nativeUdp();
  if (!native.udp) return { reason: native.reason };
  if (typeof INTAKE_RELAY_BUILD === 'undefined') return { file: builtFile(), done: () => {} };
  try {
    const copy = assetCopy();
    return { file: copy.file, done: copy.remove };
  } catch (err) {
    return { reason: (err as Error).message };
  }
}

/** Where `npm ci` / `npm run build` put the addon (native/compile.mjs). */
function builtFile(): string {
  return fileURLToPath(new URL(`../../../native/build/${NATIVE_UDP_FILE}`, import.meta.url));
}

function load(): { readonly udp: NativeUdp | undefined; readonly reason: string } {
  if (process.platform !== 'linux') return { udp: undefined, reason: `recvmmsg is Linux only (this is ${process.platform})` };
  try {
    const module = { exports: {} as NativeUdp };
    if (typeof INTAKE_RELAY_BUILD !== 'undefined') {
      loadFromExecutable(module);
    } else {
      process.dlopen(module, builtFile());
    }
    return { udp: { ...module.exports }, reason: 'recvmmsg' };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return { udp: undefined, reason: e.code === 'ERR_DLOPEN_FAILED' && /No such file/.test(e.message) ? 'not built (no C compiler at install: see native/compile.mjs)' : e.message };
  }
}

/**
 * The single executable carries the addon as an asset: a shared object loads from a file only, so
 * it is written to a private temporary directory, loaded, and removed (the mapping stays).
 */
function loadFromExecutable(module: { exports: NativeUdp }): void {
  const copy = assetCopy();
  try {
    process.dlopen(module, copy.file);
  } catch (err) {
    if (/failed to map segment|operation not permitted/i.test((err as Error).message)) {
      throw new Error(`${tmpdir()} does not let it be loaded (mounted noexec?): give the executable a temporary directory that allows it (TMPDIR, or a tmpfs on /tmp with exec)`, { cause: err });
    }
    throw err;
  } finally {
    copy.remove();
  }
}

/** The executable's asset written to a private temporary directory, and how to remove it. */
function assetCopy(): { readonly file: string; remove(): void } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const sea = require('node:sea') as typeof import('node:sea');
  let bytes: ArrayBuffer;
  try {
    bytes = sea.getRawAsset(NATIVE_UDP_FILE);
  } catch {
    throw new Error('not built into this executable (no C compiler when it was packaged)');
  }
  let dir: string;
  try {
    dir = mkdtempSync(join(tmpdir(), 'intake-relay-'));
  } catch (err) {
    throw new Error(`cannot write it to ${tmpdir()} to load it (${(err as NodeJS.ErrnoException).code}): give the executable a writable temporary directory (TMPDIR, or a tmpfs or emptyDir on /tmp)`, { cause: err });
  }
  const remove = (): void => rmSync(dir, { recursive: true, force: true });
  const file = join(dir, NATIVE_UDP_FILE);
  try {
    writeFileSync(file, new Uint8Array(bytes), { mode: 0o500 });
  } catch (err) {
    remove();
    throw err;
  }
  return { file, remove };
}
