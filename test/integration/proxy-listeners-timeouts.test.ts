// The PROXY protocol listeners keep their timeouts, on loopback: the HTTP server, handed its
// connections by the listening socket, still enforces headers_timeout_ms and closes what is left
// at a stop; a connection still to send its first bytes is cut by the input's idle_timeout_ms.
import net from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { startRelay, TEST_KEY, TLS } from '../helpers/relay.ts';
import { relayYaml } from '../helpers/config.ts';
import { startTestIntake } from '../helpers/peers.ts';
import { track } from '../helpers/cleanup.ts';

function httpYaml(intakePort: number): string {
  return `log_level: debug
metrics: { enabled: false }
shutdown_timeout_ms: 1000
intakes:
  - name: a
    intake_key: ${TEST_KEY}
    output: { type: syslog, host: 127.0.0.1, port: ${intakePort}, server_name: localhost, ca_file: ${TLS}ca.crt, resend_window_ms: 100, backoff: { initial_ms: 50, max_ms: 100 } }
listeners:
  - type: http
    name: api
    address: 127.0.0.1
    port: 0
    headers_timeout_ms: 400
    request_timeout_ms: 1000
    proxy_protocol: v1
    trusted_proxies: [127.0.0.1/32]
`;
}

/** A client connection, destroyed when the test ends (before the relay stops: tracked later). */
async function connect(port: number, localAddress = '127.0.0.1'): Promise<{ s: net.Socket; answer: () => string; closed: () => boolean }> {
  const s = net.connect({ host: '127.0.0.1', port, localAddress });
  s.on('error', () => {});
  let answer = '';
  let closed = false;
  s.on('data', (d: Buffer) => (answer += d.toString('latin1')));
  s.on('close', () => (closed = true));
  await new Promise<void>((r) => s.once('connect', () => r()));
  track({ stop: () => void s.destroy() });
  return { s, answer: () => answer, closed: () => closed };
}

describe('HTTP listener with proxy_protocol', () => {
  it('a slow client behind the trusted proxy is cut off after headers_timeout_ms, as without the PROXY protocol', async () => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(httpYaml(intake.port)));
    const c = await connect(relay.daemon.topology.listenerPort('api')!);
    c.s.write('PROXY TCP4 192.0.2.7 127.0.0.1 40000 80\r\nPOST /plain HTTP/1.1\r\nHost: x\r\n'); // headers never finished
    await vi.waitFor(() => expect(c.closed()).toBe(true), { timeout: 10_000 });
    expect(c.answer()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('a stop finishes while a connection from the trusted proxy has sent its header and nothing more', async () => {
    const intake = track(await startTestIntake());
    const relay = await startRelay(httpYaml(intake.port));
    const c = await connect(relay.daemon.topology.listenerPort('api')!);
    c.s.write('PROXY TCP4 192.0.2.7 127.0.0.1 40000 80\r\n');
    await new Promise((r) => setTimeout(r, 200)); // the header is read and the connection handed to the HTTP server
    const stopping = relay.stop().then(() => 'stopped' as const);
    const outcome = await Promise.race([stopping, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 15_000))]);
    c.s.destroy(); // lets a hung stop end
    await stopping;
    expect(outcome).toBe('stopped');
  });
});

describe('TCP listener with proxy_protocol', () => {
  it('idle_timeout_ms still cuts a direct (untrusted) sender that connects and sends nothing', async () => {
    const intake = track(await startTestIntake());
    const inputs = `      - { type: tcp, address: 127.0.0.1, port: 0, idle_timeout_ms: 300, proxy_protocol: v1, trusted_proxies: 127.0.0.9/32 }`;
    const relay = track(await startRelay(relayYaml({ intakePort: intake.port, inputs })));
    const c = await connect(relay.port('t', 'tcp/0'));
    // Without proxy_protocol this connection is closed 300 ms after it opened (idle_timeout).
    await vi.waitFor(() => expect(c.closed()).toBe(true), { timeout: 10_000 });
  });
});
