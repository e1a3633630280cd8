// The listener side of the PROXY protocol (ProxyAcceptor) on real loopback connections: a trusted
// proxy's header, split anyhow, gives the original sender and leaves the bytes after it in order;
// a header from anyone else, a malformed, truncated or late one is refused, counted, never handed on;
// a balancer's health check (a header and then the end or a reset, or LOCAL) is counted as one.
import net from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { ProxyAcceptor, type ProxyRefusal } from '../../src/inputs/proxied.ts';
import { componentLog } from '../../src/telemetry/component-log.ts';
import { track } from '../helpers/cleanup.ts';

interface Handed {
  readonly from: string;
  data: string;
  ended: boolean;
}

/** haproxy's health checks: with send-proxy a v1 header naming its own addresses, with send-proxy-v2 LOCAL. */
const V1 = 'PROXY TCP4 127.0.0.1 127.0.0.1 45160 514\r\n';
const LOCAL = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a, 0x20, 0x00, 0, 0]);
const V2 = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a, 0x21, 0x11, 0, 12, 203, 0, 113, 5, 127, 0, 0, 1, 0x9c, 0x40, 0x02, 0x02]);

/**
 * `late`: the server takes each connection up only when release() is called (as a relay busy
 * elsewhere does), so that one the client has reset by then has no peer address left to read.
 */
async function setup(timeoutMs = 5_000, versions: readonly ('v1' | 'v2')[] = ['v1', 'v2'], late = false) {
  const refused: ProxyRefusal[] = [];
  const logs: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logs.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
      cb();
    },
  });
  const log = componentLog(pino({ level: 'debug' }, sink), {});
  let checks = 0;
  const acceptor = new ProxyAcceptor({ versions, trusted: ['127.0.0.1/32'] }, { log, rejected: (r) => refused.push(r), healthCheck: () => checks++ }, 0, timeoutMs);
  const handed: Handed[] = [];
  let closedRaw = 0;
  const take = (raw: net.Socket): void => {
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
  };
  const held: net.Socket[] = [];
  const server = net.createServer({ pauseOnConnect: late }, (raw) => (late ? held.push(raw) : take(raw)));
  /** Takes up the held connections; the peer address each had when taken up. */
  const release = (): (string | undefined)[] =>
    held.splice(0).map((raw) => {
      const peer = raw.remoteAddress;
      raw.resume();
      take(raw);
      return peer;
    });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as net.AddressInfo).port;
  track({ stop: () => new Promise<void>((r) => { acceptor.close(); for (const s of held) s.destroy(); server.close(() => r()); }) });
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
  /** Lines at warn or above. */
  const warnings = () => logs.filter((l) => l.level >= 40);
  return { acceptor, refused, handed, send, closed: () => closedRaw, checks: () => checks, logs, warnings, held: () => held.length, release };
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
    const { handed, send, checks } = await setup();
    await send('127.0.0.1', [Buffer.concat([V2, Buffer.from('<13>x\n')])]);
    await vi.waitFor(() => expect(handed[0]?.ended).toBe(true));
    expect(handed[0]).toMatchObject({ from: '203.0.113.5', data: '<13>x\n' });
    expect(checks()).toBe(0);
  });

  it('a LOCAL header (the balancer\'s own check) keeps the connection\'s address, and counts as a health check', async () => {
    const { handed, send, checks } = await setup();
    await send('127.0.0.1', [LOCAL, '<13>check\n']);
    await vi.waitFor(() => expect(handed[0]?.ended).toBe(true));
    expect(handed[0]).toMatchObject({ from: '127.0.0.1', data: '<13>check\n' });
    expect(checks()).toBe(1);
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

  it('a health check (a LOCAL or a v1 header, then the end) is never handed on, and counted as a health check only; a header alone is handed on with the bytes after it', async () => {
    const { send, refused, handed, closed, checks } = await setup();
    await send('127.0.0.1', [LOCAL]);
    await send('127.0.0.1', ['PROXY TCP4 192.0.2.9 10.0.0.1 1 2\r\n']);
    await vi.waitFor(() => expect(closed()).toBe(2));
    expect(refused).toEqual([]);
    expect(handed).toEqual([]);
    expect(checks()).toBe(2);
    await send('127.0.0.1', ['PROXY TCP4 192.0.2.9 10.0.0.1 1 2\r\n', '<13>after\n']);
    await vi.waitFor(() => expect(handed[0]?.ended).toBe(true));
    expect(handed[0]).toMatchObject({ from: '192.0.2.9', data: '<13>after\n' });
    expect(checks()).toBe(2);
  });

  // haproxy's check-send-proxy: the header, then a reset (SO_LINGER 0) as soon as it is connected.
  it.each(['reset', 'end'] as const)('a header and then a %s is a health check from the trusted proxy or any other address: not refused, not handed on, logged at debug only', async (close) => {
    const { send, refused, handed, closed, checks, logs, warnings } = await setup();
    let n = 0;
    for (const from of ['127.0.0.1', '127.0.0.2']) {
      for (const header of [V1, V2, LOCAL]) {
        const c = await send(from, [header], false);
        if (close === 'reset') c.resetAndDestroy();
        else c.end();
        n++;
        await vi.waitFor(() => expect(closed()).toBe(n), { timeout: 5_000 });
      }
    }
    expect(refused).toEqual([]);
    expect(handed).toEqual([]);
    expect(checks()).toBe(6);
    expect(warnings()).toEqual([]);
    expect(logs.filter((l) => l.level === 20)).toHaveLength(6);
  });

  it('a health check reset before its peer address could be read (the relay busy meanwhile) is a health check, never a forged header from ""', async () => {
    const { send, refused, handed, closed, checks, warnings, held, release } = await setup(5_000, ['v1', 'v2'], true);
    for (const from of ['127.0.0.1', '127.0.0.2']) {
      for (const header of [V1, V2, LOCAL]) {
        const c = await send(from, [header], false);
        c.resetAndDestroy();
        await new Promise((r) => c.once('close', r));
      }
    }
    await vi.waitFor(() => expect(held()).toBe(6), { timeout: 5_000 });
    // What the relay saw from haproxy: no address at all.
    expect(release()).toEqual(Array(6).fill(undefined));
    await vi.waitFor(() => expect(closed()).toBe(6), { timeout: 5_000 });
    expect(refused).toEqual([]);
    expect(handed).toEqual([]);
    expect(checks()).toBe(6);
    expect(warnings()).toEqual([]);
  });

  it('a header from an address not in trusted_proxies followed by data (even a write later) or left open is refused as before, never a health check', async () => {
    const { send, refused, handed, closed, checks, warnings } = await setup(300);
    await send('127.0.0.2', [V1, '<13>forged\n'], false);
    await send('127.0.0.2', [LOCAL, '<13>forged\n'], false);
    await vi.waitFor(() => expect(closed()).toBe(2));
    expect(refused).toEqual(['proxy_untrusted', 'proxy_untrusted']);
    await send('127.0.0.2', [V2], false);
    await vi.waitFor(() => expect(closed()).toBe(3), { timeout: 5_000 });
    expect(refused).toEqual(['proxy_untrusted', 'proxy_untrusted', 'proxy_untrusted']);
    expect(handed).toEqual([]);
    expect(checks()).toBe(0);
    // One line per 10 s (rate-limited), the rest counted in it.
    expect(new Set(warnings().map((l) => l.msg))).toEqual(new Set(['Connection refused: it starts with a PROXY protocol header but its address is not in trusted_proxies.']));
  });

  it('from an address not in trusted_proxies, a header longer than any health check\'s is refused once 536 bytes are in, not held for the header timeout', async () => {
    const { send, refused, closed } = await setup(60_000);
    const long = Buffer.from(V2);
    long.writeUInt16BE(1000, 14);
    await send('127.0.0.2', [Buffer.concat([long, Buffer.alloc(600)])], false);
    await vi.waitFor(() => expect(closed()).toBe(1), { timeout: 5_000 });
    expect(refused).toEqual(['proxy_untrusted']);
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
