// Listening on a port with an error that says what to do about it, and, with workers, sharing an
// input's port among the relay's threads (SO_REUSEPORT: the kernel spreads connections and
// datagrams over the sockets).

import dgram from 'node:dgram';
import net from 'node:net';
import { RelayError } from '../core/errors.ts';

/** ERELAY_LISTEN for `what` on `where` ("127.0.0.1:514", "udp 0.0.0.0:514"), with the likely cause of `code`. */
export function listenError(what: string, where: string, code: string | undefined, message: string, cause?: unknown): RelayError {
  const hint =
    code === 'EADDRINUSE' ? 'another process already listens there' :
    code === 'EACCES' ? 'ports below 1024 need CAP_NET_BIND_SERVICE (see the systemd unit) or root' :
    code === 'EADDRNOTAVAIL' ? 'this machine has no such address' : message;
  return new RelayError('ERELAY_LISTEN', `${what}: cannot listen on ${where}: ${hint}.`, cause === undefined ? undefined : { cause });
}

let sharing = false;
let worker = false;

/**
 * Whether this thread's inputs share their ports with the relay's other threads (workers > 1), and
 * whether this thread is one of the relay's worker threads (which join the ports its main thread
 * opened): set by the daemon before its inputs listen. (Node's isMainThread would not do: the
 * relay's own main thread may run in a worker thread of its host, as under a test runner.)
 */
export function sharePorts(on: boolean, asWorker = false): void {
  sharing = on;
  worker = asWorker;
}

export function portsShared(): boolean {
  return sharing;
}

/** This thread is one of the relay's worker threads (what is counted once per port, the main thread counts). */
export function inRelayWorker(): boolean {
  return worker;
}

/** "tcp 514": ports this process's worker threads listen on, on any address (a reload re-listens beside them). */
const heldByWorkers = new Set<string>();

/** The ports the workers listen on now (the main thread's probe skips them). */
export function workersHold(ports: Iterable<string>): void {
  heldByWorkers.clear();
  for (const p of ports) heldByWorkers.add(p);
}

export function portKey(proto: string, port: number): string {
  return `${proto} ${port}`;
}

/** Whether the main thread asks with a plain socket before listening with SO_REUSEPORT. */
function shouldProbe(proto: string, port: number): boolean {
  return port !== 0 && !worker && !heldByWorkers.has(portKey(proto, port));
}

/**
 * Resolves once `server` listens; rejects with ERELAY_LISTEN naming `what` and the likely cause.
 * `input`: an input's port, shared with the other workers when this thread shares ports.
 */
export async function listen(server: net.Server, address: string, port: number, what: string, input = false): Promise<void> {
  const reusePort = input && sharing;
  // With SO_REUSEPORT, a port another process's reusePort sockets hold (a second relay) would be
  // shared with it without an error: the main thread asks with a plain socket first. Workers join
  // the main thread's port; a reload re-listens on a port the workers still hold.
  if (reusePort && shouldProbe('tcp', port)) await probe(address, port, what);
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => reject(listenError(what, `${address}:${port}`, err.code, err.message, err));
    server.once('error', onError);
    server.listen({ host: address, port, reusePort }, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

/** Rejects with ERELAY_LISTEN when a socket without SO_REUSEPORT cannot listen on `port`. */
function probe(address: string, port: number, what: string): Promise<void> {
  const plain = net.createServer();
  return new Promise((resolve, reject) => {
    plain.once('error', (err: NodeJS.ErrnoException) => reject(listenError(what, `${address}:${port}`, err.code, err.message, err)));
    plain.listen({ host: address, port, exclusive: true }, () => plain.close(() => resolve()));
  });
}

/**
 * Rejects with ERELAY_LISTEN when a UDP socket without SO_REUSEPORT cannot bind `port` (another
 * process holds it): asked before sockets with SO_REUSEPORT bind it. Resolves at once for port 0,
 * in a worker (it joins the main thread's port) and for a port the workers hold.
 */
export function udpPortFree(type: 'udp4' | 'udp6', address: string, port: number, what: string): Promise<void> {
  if (!shouldProbe('udp', port)) return Promise.resolve();
  const plain = dgram.createSocket({ type });
  return new Promise<void>((resolve, reject) => {
    plain.once('error', (err: NodeJS.ErrnoException) => {
      plain.close();
      reject(listenError(what, `udp ${address}:${port}`, err.code, err.message, err));
    });
    plain.bind({ address, port, exclusive: true }, () => plain.close(() => resolve()));
  });
}
