// A TLS intake stand-in that misbehaves on purpose, connection by connection: it reads nothing and
// then resets (an intake that stops reading), or reads some bytes and then resets (over and over),
// or reads normally. It parses what it reads as the intake does (octet-counted RFC 5424) and keeps
// every message, so tests can count what was really read, not what the relay thinks it wrote.

import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { checkMessage, type ReceivedMessage } from '../../src/emulator/intake-emulator.ts';
import { TLS } from './relay.ts';

export type Behaviour =
  /** Read and parse everything; answer a close with a close. */
  | { readonly kind: 'read' }
  /** Complete the handshake, read nothing, reset the connection after `resetAfterMs`. */
  | { readonly kind: 'blackhole'; readonly resetAfterMs: number }
  /** Read (and keep) about `bytes` bytes, then reset the connection. */
  | { readonly kind: 'reset_after'; readonly bytes: number };

export interface FaultyIntake {
  readonly port: number;
  /** Every message read, in order, over all connections. */
  readonly received: ReceivedMessage[];
  /** Connections accepted so far. */
  readonly connections: number;
  /** Time each connection was accepted (ms since the epoch). */
  readonly acceptedAt: readonly number[];
  stop(): Promise<void>;
}

/** `behave(i, sinceStartMs)` picks what connection number i (from 0) does. */
export async function startFaultyIntake(behave: (i: number, sinceStartMs: number) => Behaviour, port = 0): Promise<FaultyIntake> {
  const ctx = tls.createSecureContext({ cert: readFileSync(`${TLS}server.crt`), key: readFileSync(`${TLS}server.key`) });
  const received: ReceivedMessage[] = [];
  const acceptedAt: number[] = [];
  const raws = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const started = Date.now();
  const server = net.createServer((raw) => {
    const i = acceptedAt.length;
    acceptedAt.push(Date.now());
    raws.add(raw);
    raw.on('close', () => raws.delete(raw));
    raw.on('error', () => {});
    const b = behave(i, Date.now() - started);
    // The TLS layer over a raw socket we keep: only a plain TCP socket can be reset.
    const s = new tls.TLSSocket(raw, { isServer: true, secureContext: ctx });
    s.on('error', () => {});
    const reset = (): void => {
      if (!raw.destroyed) raw.resetAndDestroy();
    };
    s.once('secure', () => {
      if (b.kind === 'blackhole') {
        s.pause();
        const t = setTimeout(() => {
          timers.delete(t);
          reset();
        }, b.resetAfterMs);
        timers.add(t);
        return;
      }
      let pending: Buffer | undefined;
      let read = 0;
      s.on('data', (chunk: Buffer) => {
        if (b.kind === 'reset_after' && read >= b.bytes) return;
        read += chunk.length;
        const buf = pending ? Buffer.concat([pending, chunk]) : chunk;
        let pos = 0;
        for (;;) {
          const sp = buf.indexOf(0x20, pos);
          if (sp < 0 || sp - pos > 10) break;
          const n = Number(buf.toString('latin1', pos, sp));
          if (sp + 1 + n > buf.length) break;
          received.push(checkMessage(buf.toString('utf8', sp + 1, sp + 1 + n)));
          pos = sp + 1 + n;
        }
        pending = pos < buf.length ? Buffer.from(buf.subarray(pos)) : undefined;
        if (b.kind === 'reset_after' && read >= b.bytes) reset();
      });
      s.on('end', () => s.end());
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as net.AddressInfo).port,
    received,
    get connections() {
      return acceptedAt.length;
    },
    acceptedAt,
    async stop() {
      for (const t of timers) clearTimeout(t);
      for (const r of raws) r.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
