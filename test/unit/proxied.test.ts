// The listener side of the PROXY protocol (ProxyAcceptor) on real loopback connections: a trusted
// proxy's header, split anyhow, gives the original sender and leaves the bytes after it in order;
// a header from anyone else, a malformed, truncated or late one is refused, counted, never handed on.
import net from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { ProxyAcceptor, type ProxyRefusal } from '../../src/inputs/proxied.ts';
import { track } from '../helpers/cleanup.ts';

interface Handed {
  readonly from: string;
  data: string;
  ended: boolean;
}

async function setup(timeoutMs = 5_000, versions: readonly ('v1' | 'v2')[] = ['v1', 'v2']) {
  const refused: ProxyRefusal[] = [];
  const log = { logger: undefined as never, info: () => {}, warn: () => {}, error: () => {} };
  const acceptor = new ProxyAcceptor({ versions, trusted: ['127.0.0.1/32'] }, { log, rejected: (r) => refused.push(r) }, 0, timeoutMs);
  const handed: Handed[] = [];
  let closedRaw = 0;
  const server = net.createServer((raw) => {
    raw.on('close', () => closedRaw++);
    acceptor.accept(raw, (s) => {
      const h: Handed = { from: acceptor.origin(s), data: '', ended: false };
      handed.push(h);
      s.on('data', (d: Buffer) => (h.data += d.toString('latin1')));
      s.on('end', () => {
        h.ended = true;
        s.end();
      });
      s.resume();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as net.AddressInfo).port;
  track({ stop: () => new Promise<void>((r) => { acceptor.close(); server.close(() => r()); }) });
  /** Connects from `from` and writes each part in its own write, a turn apart. */
  const send = async (from: string, parts: (string | Buffer)[], end = true): Promise<net.Socket> => {
    const c = net.connect({ host: '127.0.0.1', port, localAddress: from });
    c.on('error', () => {});
    await new Promise<void>((r) => c.once('connect', () => r()));
    for (const p of parts) {
      c.write(p);
      await new Promise((r) => setTimeout(r, 5));
    }
    if (end) c.end();
    return c;
  };
  return { acceptor, refused, handed, send, closed: () => closedRaw };
}

describe('ProxyAcceptor', () => {
  it('reads a trusted proxy\'s header given a byte at a time; the sender is the one it names, the rest follows in order', async () => {
    const { handed, send, refused } = await setup();
    const header = 'PROXY TCP4 192.0.2.7 10.0.0.1 51234 514\r\n';
    await send('127.0.0.1', [...header.split(''), '<13>one\n', '<13>two\n']);
    await vi.waitFor(() => expect(handed[0]?.ended).toBe(true));
    expect(handed).toEqual([{ from: '192.0.2.7', data: '<13>one\n<13>two\n', ended: true }]);
    expect(refused).toEqual([]);
  });

  it('takes a v2 header and the syslog after it in the same write', async () => {
    const { handed, send } = await setup();
    const h = Buffer.alloc(28);
    Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a, 0x21, 0x11, 0, 12, 203, 0, 113, 5, 127, 0, 0, 1, 0x9c, 0x40, 0x02, 0x02]).copy(h);
    await send('127.0.0.1', [Buffer.concat([h, Buffer.from('<13>x\n')])]);
    await vi.waitFor(() => expect(handed[0]?.ended).toBe(true));
    expect(handed[0]).toMatchObject({ from: '203.0.113.5', data: '<13>x\n' });
  });

  it('a LOCAL header (the balancer\'s own check) keeps the connection\'s address', async () => {
    const { handed, send } = await setup();
    const local = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a, 0x20, 0x00, 0, 0]);
    await send('127.0.0.1', [local, '<13>check\n']);
    await vi.waitFor(() => expect(handed[0]?.ended).toBe(true));
    expect(handed[0]).toMatchObject({ from: '127.0.0.1', data: '<13>check\n' });
  });

  it('refuses a trusted proxy\'s connection that starts with syslog, or a bad header: nothing handed on', async () => {
    const { handed, send, refused, closed } = await setup();
    await send('127.0.0.1', ['<13>no header\n']);
    await send('127.0.0.1', ['PROXY TCP4 999.0.2.7 10.0.0.1 1 2\r\n<13>x\n']);
    await vi.waitFor(() => expect(closed()).toBe(2));
    expect(refused).toEqual(['proxy_malformed', 'proxy_malformed']);
    expect(handed).toEqual([]);
  });

  it('refuses the version it was not told to read', async () => {
    const { handed, send, refused, closed } = await setup(5_000, ['v2']);
    await send('127.0.0.1', ['PROXY TCP4 192.0.2.7 10.0.0.1 1 2\r\n<13>x\n']);
    await vi.waitFor(() => expect(closed()).toBe(1));
    expect(refused).toEqual(['proxy_malformed']);
    expect(handed).toEqual([]);
  });

  it('counts a header cut short by the end as malformed; a connection that sends nothing is not counted', async () => {
    const { send, refused, closed, handed } = await setup();
    await send('127.0.0.1', ['PROXY TCP4 192.0']);
    await send('127.0.0.1', []);
    await vi.waitFor(() => expect(closed()).toBe(2));
    expect(refused).toEqual(['proxy_malformed']);
    expect(handed).toEqual([]);
  });

  it('cuts a trusted proxy that does not finish its header in time', async () => {
    const { send, refused, closed } = await setup(300);
    await send('127.0.0.1', ['PROXY TCP4 '], false);
    await vi.waitFor(() => expect(closed()).toBe(1), { timeout: 5_000 });
    expect(refused).toEqual(['proxy_timeout']);
  });

  it('refuses a header from an address not in trusted_proxies, and lets that address send syslog directly', async () => {
    const { send, refused, handed, closed } = await setup();
    await send('127.0.0.2', ['PROXY TCP4 10.9.9.9 10.0.0.1 1 2\r\n<13>forged\n']);
    await send('127.0.0.2', ['\r\n\r\n', '\x00\r\nQUIT\n']);
    await vi.waitFor(() => expect(closed()).toBe(2));
    expect(refused).toEqual(['proxy_untrusted', 'proxy_untrusted']);
    expect(handed).toEqual([]);
    // An empty line first: a prefix of the v2 signature, until the next bytes say otherwise.
    await send('127.0.0.3', ['\r\n', '<13>direct\n']);
    await vi.waitFor(() => expect(handed[0]?.ended).toBe(true));
    expect(handed[0]).toMatchObject({ from: '127.0.0.3', data: '\r\n<13>direct\n' });
    expect(refused).toHaveLength(2);
  });

  it('a direct sender that starts with an empty line and then waits is handed on; one that trickles a signature is refused', async () => {
    const { send, refused, handed, closed } = await setup(300);
    const quiet = await send('127.0.0.2', ['\r\n'], false);
    await vi.waitFor(() => expect(handed).toHaveLength(1), { timeout: 5_000 });
    quiet.end('<13>later\n');
    await vi.waitFor(() => expect(handed[0]?.ended).toBe(true));
    expect(handed[0]).toMatchObject({ from: '127.0.0.2', data: '\r\n<13>later\n' });
    await send('127.0.0.3', ['PROX'], false);
    await vi.waitFor(() => expect(closed()).toBe(2), { timeout: 5_000 });
    expect(refused).toEqual(['proxy_untrusted']);
  });

  it('a health check (a LOCAL or a v1 header, then the end) is never handed on nor counted; a header alone is handed on with the bytes after it', async () => {
    const { send, refused, handed, closed } = await setup();
    const local = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a, 0x20, 0x00, 0, 0]);
    await send('127.0.0.1', [local]);
    await send('127.0.0.1', ['PROXY TCP4 192.0.2.9 10.0.0.1 1 2\r\n']);
    await vi.waitFor(() => expect(closed()).toBe(2));
    expect(refused).toEqual([]);
    expect(handed).toEqual([]);
    await send('127.0.0.1', ['PROXY TCP4 192.0.2.9 10.0.0.1 1 2\r\n', '<13>after\n']);
    await vi.waitFor(() => expect(handed[0]?.ended).toBe(true));
    expect(handed[0]).toMatchObject({ from: '192.0.2.9', data: '<13>after\n' });
  });

  it('a direct sender that sends only empty lines and closes is not counted', async () => {
    const { send, refused, handed, closed } = await setup();
    await send('127.0.0.2', ['\r\n']);
    await vi.waitFor(() => expect(closed()).toBe(1));
    expect(refused).toEqual([]);
    expect(handed).toEqual([]);
  });

  it('close() cuts the connections still being read', async () => {
    const { acceptor, send, closed } = await setup();
    await send('127.0.0.1', ['PROX'], false);
    acceptor.close();
    await vi.waitFor(() => expect(closed()).toBe(1));
  });
});
