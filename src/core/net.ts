// Listening on a port with an error that says what to do about it.

import type net from 'node:net';
import { RelayError } from './errors.ts';

/** Resolves once `server` listens; rejects with ERELAY_LISTEN naming `what` and the likely cause. */
export function listen(server: net.Server, address: string, port: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      const hint =
        err.code === 'EADDRINUSE' ? 'another process already listens there' :
        err.code === 'EACCES' ? 'ports below 1024 need CAP_NET_BIND_SERVICE (see the systemd unit) or root' :
        err.code === 'EADDRNOTAVAIL' ? 'this machine has no such address' : err.message;
      reject(new RelayError('ERELAY_LISTEN', `${what}: cannot listen on ${address}:${port}: ${hint}.`, { cause: err }));
    };
    server.once('error', onError);
    server.listen({ host: address, port }, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
