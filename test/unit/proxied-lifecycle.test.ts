// ProxyAcceptor's edges, on loopback: close() lets go of the connections it destroys (no refusal
// counted after the stop, no destroyed socket handed on), and origin() tells apart two live
// connections from the same balancer address and port (to two of our addresses).
import net from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { ProxyAcceptor, type ProxyRefusal } from '../../src/inputs/proxied.ts';
import { track } from '../helpers/cleanup.ts';

async function setup(address: string, timeoutMs: number) {
  const refused: ProxyRefusal[] = [];
  const log = { logger: undefined as never, info: () => {}, warn: () => {}, error: () => {} };
  const acceptor = new ProxyAcceptor({ versions: ['v1'], trusted: ['127.0.0.1/32'] }, { log, rejected: (r) => refused.push(r), healthCheck: () => {} }, 0, timeoutMs);
  const handed: { socket: net.Socket; destroyed: boolean }[] = [];
  const server = net.createServer((raw) => acceptor.accept(raw, (s) => handed.push({ socket: s, destroyed: s.destroyed })));
  await new Promise<void>((r) => server.listen(0, address, () => r()));
  const port = (server.address() as net.AddressInfo).port;
  track({ stop: () => new Promise<void>((r) => { acceptor.close(); for (const h of handed) h.socket.destroy(); server.close(() => r()); }) });
  const connect = async (o: { host: string; localAddress: string; localPort?: number }): Promise<net.Socket> => {
    const c = net.connect({ ...o, port });
    c.on('error', () => {});
    await new Promise<void>((r) => c.once('connect', () => r()));
    track({ stop: () => void c.destroy() });
    return c;
  };
  return { acceptor, refused, handed, connect };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('ProxyAcceptor.close()', () => {
  it('a trusted connection in its header phase when the listener stops is not counted as proxy_timeout later', async () => {
    const { acceptor, refused, connect } = await setup('127.0.0.1', 200);
    const c = await connect({ host: '127.0.0.1', localAddress: '127.0.0.1' });
    c.write('PROXY TCP4 ');
    await sleep(50);
    acceptor.close();
    await vi.waitFor(() => expect(c.destroyed || c.readableEnded).toBe(true));
    await sleep(600); // three header timeouts
    expect(refused).toEqual([]);
  });

  it('a direct sender that sent only an empty line when the listener stops is not handed on after the stop', async () => {
    const { acceptor, handed, connect } = await setup('127.0.0.1', 200);
    const c = await connect({ host: '127.0.0.1', localAddress: '127.0.0.2' });
    c.write('\r\n'); // a prefix of the v2 signature: the acceptor waits for more
    await sleep(50);
    acceptor.close();
    await sleep(600);
    expect(handed.map((h) => h.destroyed)).toEqual([]);
  });
});

describe('ProxyAcceptor.origin()', () => {
  it('two live connections from the same balancer address and port (to two of our addresses) each keep their own sender', async () => {
    const { acceptor, handed, connect } = await setup('0.0.0.0', 5_000);
    // The kernel may give a balancer one source port for connections to different destinations;
    // here it is chosen explicitly (SO_REUSEADDR, which libuv sets, allows it for non-listening sockets).
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
    const localPort = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const a = await connect({ host: '127.0.0.1', localAddress: '127.0.0.1', localPort });
    a.write('PROXY TCP4 192.0.2.1 10.0.0.1 1111 514\r\n<13>a\n');
    await vi.waitFor(() => expect(handed).toHaveLength(1));
    const b = await connect({ host: '127.0.0.2', localAddress: '127.0.0.1', localPort });
    b.write('PROXY TCP4 192.0.2.2 10.0.0.1 2222 514\r\n<13>b\n');
    await vi.waitFor(() => expect(handed).toHaveLength(2));
    // What a TLS socket (after its handshake) or an HTTP request (on each request) asks later:
    expect(acceptor.origin(handed[0]!.socket)).toBe('192.0.2.1');
    expect(acceptor.origin(handed[1]!.socket)).toBe('192.0.2.2');
  });
});
