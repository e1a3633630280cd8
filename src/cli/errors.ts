// A command's failure as one line a person reads: what failed, on what, and what to check. The
// system's routine errors (a port in use, a file missing or unreadable, a refused connection) are
// expected; anything else is a bug, and keeps its stack.

interface SystemError extends Error {
  readonly code?: string;
  readonly syscall?: string;
  readonly path?: string;
  readonly address?: string;
  readonly port?: number;
}

/** The one line for an expected failure, or undefined for an unexpected one. */
export function describeFailure(err: unknown): string | undefined {
  if (!(err instanceof Error)) return undefined;
  const e = err as SystemError;
  const where = e.address !== undefined ? `${e.address}${e.port !== undefined ? `:${e.port}` : ''}` : '';
  switch (e.code) {
    case 'EADDRINUSE':
      return `cannot listen on ${where}: the address is in use (another process listens there: ss -ltnup 'sport = :${e.port ?? ''}'); choose another port or stop that process`;
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${where}: no interface of this host has that address`;
    case 'EACCES':
      if (e.syscall === 'listen' || e.syscall === 'bind') return `may not listen on ${where}: a port below 1024 needs root or CAP_NET_BIND_SERVICE`;
      return `permission denied${e.path ? `: ${e.path}` : ''} (check its owner and mode, and this user's)`;
    case 'ENOENT':
      return `no such file or directory${e.path ? `: ${e.path}` : ''}`;
    case 'EISDIR':
      return `${e.path ?? 'a path'} is a directory, not a file`;
    case 'ECONNREFUSED':
      return `connection refused by ${where}: nothing listens there (is the daemon running, with this configuration?)`;
    case 'ETIMEDOUT':
      return `no answer from ${where} in time`;
    case 'ECONNRESET':
      return `the connection to ${where || 'the peer'} was reset`;
    default:
      // TLS material OpenSSL cannot read, named by its own code.
      if (e.code?.startsWith('ERR_OSSL') || /PEM|certificate|private key/i.test(e.message)) return `the TLS certificate or key cannot be used: ${e.message.split('\n')[0]}`;
      return undefined;
  }
}
