// pino logger: JSON on stdout, intake keys redacted by path as a second line of defence (the code
// never logs them), and every known secret masked in each line as written (secret-mask.ts), the
// workers' lines included.

import { pino, type Logger } from 'pino';
import { isoUtc } from '../core/iso-time.ts';
import { secretMask } from './secret-mask.ts';

export type { Logger };

export const REDACT_PATHS = [
  'intake_key',
  'intakeKey',
  '*.intake_key',
  '*.intakeKey',
  'api_key',
  '*.api_key',
  'authorization',
  '*.authorization',
  '*.headers.authorization',
  // Node's HTTP parse errors carry the request's bytes.
  'err.rawPacket',
  '*.err.rawPacket',
];

/**
 * Expected failures are a code and a sentence: a coded RelayError (what failed and what to check),
 * and the system's own routine errors (a reset, a refused or timed-out connection, a TLS alert, a
 * full disk: an errno code from a system call). A stack trace is for the unexpected only (from the
 * single executable it would name the build machine's paths, and it says nothing to an operator).
 */
const ROUTINE_CODE = /^(E[A-Z0-9]+|ERR_SSL_[A-Z0-9_]+|ERR_TLS_[A-Z0-9_]+|ERR_STREAM_PREMATURE_CLOSE|ERELAY_[A-Z_]+)$/;

function expected(e: Error & { code?: unknown; syscall?: unknown }): boolean {
  if (e.name === 'RelayError' || e.name === 'StateLockedError') return true;
  return typeof e.code === 'string' && ROUTINE_CODE.test(e.code) && (typeof e.syscall === 'string' || e.code.startsWith('ERR_'));
}

/** An error as a log field: code and message for the expected (with its cause's), the whole of it otherwise. */
export function errField(err: unknown): unknown {
  if (!(err instanceof Error) || !expected(err)) return pino.stdSerializers.err(err as Error);
  const e = err as Error & { code?: unknown; cause?: unknown };
  const cause = e.cause instanceof Error ? (e.cause as Error & { code?: unknown }) : undefined;
  return {
    type: e.name,
    ...(typeof e.code === 'string' ? { code: e.code } : {}),
    message: e.message,
    ...(cause ? { cause: typeof cause.code === 'string' ? `${cause.code}: ${cause.message}` : cause.message } : {}),
  };
}

/** Every logger made from a root (its component loggers), so that a reload's log_level reaches them all. */
const families = new WeakMap<Logger, Set<WeakRef<Logger>>>();

function prune(members: Set<WeakRef<Logger>>): void {
  for (const ref of members) if (ref.deref() === undefined) members.delete(ref);
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const members = new Set<WeakRef<Logger>>();
  const root = pino(
    {
      level,
      // Children of children come here too (pino passes the option down).
      onChild: (child) => {
        if (members.size >= 256) prune(members);
        members.add(new WeakRef(child));
      },
      base: { service: 'intake-relay' },
      // pino's isoTime calls toISOString (see core/iso-time.ts).
      timestamp: () => `,"time":"${isoUtc(Date.now())}"`,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: { err: errField },
      // A key quoted in an event or an error message, wherever it appears in the line.
      hooks: { streamWrite: (line) => secretMask.mask(line) },
    },
    // Synchronous: logs are lifecycle and rate-limited errors only, and none may be lost at exit.
    destination ?? pino.destination({ dest: 1, sync: true }),
  );
  families.set(root, members);
  return root;
}

/** A new log_level (a reload): the root logger and every logger made from it since. */
export function setLogLevel(root: Logger, level: string): void {
  root.level = level;
  const members = families.get(root);
  if (!members) return;
  prune(members);
  for (const ref of members) {
    const l = ref.deref();
    if (l) l.level = level;
  }
}
