// IntakeTls (src/outputs/tls-options.ts) against loopback TLS servers: sessions resumed, for at
// most an hour after the last full handshake; a server that aborts resumed handshakes with an
// alert; failures that say nothing about resuming.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { IntakeTls } from '../../src/outputs/tls-options.ts';
import { TLS } from '../helpers/relay.ts';

const read = (f: string): Buffer => readFileSync(`${TLS}${f}`);
const closers: (() => void)[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const c of closers.splice(0)) c();
});

/**
 * A TLS server on loopback. `checkClients`: it requires a client certificate, over a bare secure
 * context with no session id context, as rsyslog's OpenSSL driver does: OpenSSL then aborts a
 * resumed handshake (internal_error) instead of falling back to a full one.
 */
async function server(checkClients: boolean | 'reset_next'): Promise<number> {
  const ctx = tls.createSecureContext({ cert: read('server.crt'), key: read('server.key'), ca: read('ca.crt') });
  let accepted = 0;
  const srv = checkClients === 'reset_next'
    // Resets the second connection once accepted, before any handshake (a restart, a balancer without a backend).
    ? net.createServer((raw) => {
      raw.on('error', () => {});
      if (++accepted === 2) return void setImmediate(() => raw.resetAndDestroy());
      const s = new tls.TLSSocket(raw, { isServer: true, secureContext: ctx });
      s.on('error', () => raw.destroy());
      s.on('data', () => {});
      s.on('end', () => s.end());
    })
    : checkClients
    ? net.createServer((raw) => {
      const s = new tls.TLSSocket(raw, { isServer: true, secureContext: ctx, requestCert: true, rejectUnauthorized: true });
      s.on('error', () => raw.destroy());
      s.on('data', () => {});
      s.on('end', () => s.end());
    })
    : tls.createServer({ cert: read('server.crt'), key: read('server.key') }, (s) => {
      s.on('error', () => {});
      s.on('data', () => {});
      s.on('end', () => s.end());
    });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  closers.push(() => srv.close());
  return (srv.address() as net.AddressInfo).port;
}

/** One connection: 'resumed' or 'full' once the handshake completed (and the server's tickets read), or the failure and what failed() said. */
function connect(t: IntakeTls, port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = t.connect('127.0.0.1', port);
    let result = '';
    s.once('secureConnect', () => {
      result = s.isSessionReused() ? 'resumed' : 'full';
      s.end();
    });
    s.on('data', () => {});
    s.on('error', (e: NodeJS.ErrnoException) => {
      result = `failed ${e.code}, again: ${t.failed(s, e)}`;
    });
    s.on('close', () => resolve(result));
  });
}

describe('IntakeTls', () => {
  it('resumes the last session offered, for at most an hour after the last full handshake', async () => {
    const port = await server(false);
    const t = new IntakeTls({ name: 'localhost', ca: read('ca.crt'), cert: undefined, key: undefined });
    vi.useFakeTimers({ toFake: ['performance'] });
    expect(await connect(t, port)).toBe('full');
    expect(await connect(t, port)).toBe('resumed');
    vi.advanceTimersByTime(59 * 60_000);
    expect(await connect(t, port)).toBe('resumed');
    vi.advanceTimersByTime(2 * 60_000);
    expect(await connect(t, port)).toBe('full');
    expect(await connect(t, port)).toBe('resumed');
  });

  it('a server that aborts a resumed handshake with an alert: failed() says connect again; once that full handshake succeeds, no session is offered any more', async () => {
    const port = await server(true);
    const t = new IntakeTls({ name: 'localhost', ca: read('ca.crt'), cert: read('client.crt'), key: read('client.key') });
    expect(await connect(t, port)).toBe('full');
    expect(await connect(t, port)).toBe('failed ERR_SSL_TLSV1_ALERT_INTERNAL_ERROR, again: true');
    for (let i = 0; i < 3; i++) expect(await connect(t, port)).toBe('full');
  });

  it('a connection reset in the handshake (no alert): the session is forgotten, no reason to connect again at once, and the next sessions are resumed', async () => {
    const port = await server('reset_next');
    const t = new IntakeTls({ name: 'localhost', ca: read('ca.crt'), cert: undefined, key: undefined });
    expect(await connect(t, port)).toBe('full');
    expect(await connect(t, port)).toBe('failed ECONNRESET, again: false');
    expect(await connect(t, port)).toBe('full');
    expect(await connect(t, port)).toBe('resumed');
  });

  it('a connect that fails before its TCP connection is made: the session is forgotten, and that is no reason to connect again at once', async () => {
    const port = await server(false);
    const t = new IntakeTls({ name: 'localhost', ca: read('ca.crt'), cert: undefined, key: undefined });
    expect(await connect(t, port)).toBe('full');
    for (const c of closers.splice(0)) c();
    const closed = await new Promise<number>((r) => {
      const s = net.createServer();
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => r(p));
      });
    });
    // A session is offered, but the TCP connection is never made.
    expect(await connect(t, closed)).toBe('failed ECONNREFUSED, again: false');
    // Forgotten: the next connection is a full one.
    const again = await server(false);
    expect(await connect(t, again)).toBe('full');
  });
});
