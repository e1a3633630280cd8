// Listening on a port with an error that says what to do about it.

import type net from 'node:net';
import { RelayError } from './errors.ts';

/** ERELAY_LISTEN for `what` on `where` ("127.0.0.1:514", "udp 0.0.0.0:514"), with the likely cause of `code`. */
export function listenError(what: string, where: string, code: string | undefined, message: string, cause?: unknown): RelayError {
  const hint =
    code === 'EADDRINUSE' ? 'another process already listens there' :
    code === 'EACCES' ? 'ports below 1024 need CAP_NET_BIND_SERVICE (see the systemd unit) or root' :
    code === 'EADDRNOTAVAIL' ? 'this machine has no such address' : message;
  return new RelayError('ERELAY_LISTEN', `${what}: cannot listen on ${where}: ${hint}.`, cause === undefined ? undefined : { cause });
}

/** Resolves once `server` listens; rejects with ERELAY_LISTEN naming `what` and the likely cause. */
export function listen(server: net.Server, address: string, port: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => reject(listenError(what, `${address}:${port}`, err.code, err.message, err));
    server.once('error', onError);
    server.listen({ host: address, port }, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
