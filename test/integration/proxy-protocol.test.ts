// The PROXY protocol behind a real load balancer: Debian's haproxy (send-proxy, send-proxy-v2) in
// front of the TCP, TLS (passed through), RELP (rsyslog's omrelp) and HTTP listeners. The original
// sender's address, never the balancer's (127.0.0.1), picks the route, is the HOSTNAME of a line
// without a header and is what the sender table lists. A header from an untrusted address, a
// malformed one, or none from the balancer is refused and counted; a sender that connects directly
// without a header still gets in, as itself. haproxy's health checks (check-send-proxy: a header,
// then a reset) are counted as health checks, never as refusals. Each test checks what the intake
// received.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { Agent, request } from 'undici';
import { describe, expect, it, vi } from 'vitest';
import { tempDir, track } from '../helpers/cleanup.ts';
import { syslogLines } from '../helpers/lines.ts';
import { freePort, sendTcp, startHaproxy, startRsyslog, startTestIntake, type TestIntake } from '../helpers/peers.ts';
import { books, startRelay, TLS, type RunningRelay } from '../helpers/relay.ts';

// a: 127.0.0.2's events, b: 127.0.0.3's, lb: what a route would give the balancer (must stay empty).
const KEYS = { a: 'ProxyA00000000000000000000000001', b: 'ProxyB00000000000000000000000001', lb: 'ProxyLb0000000000000000000000001' } as const;
type Name = keyof typeof KEYS;
const NAMES = Object.keys(KEYS) as Name[];
const PROXY_REASONS = ['proxy_untrusted', 'proxy_malformed', 'proxy_timeout'] as const;

/** A relay with one listener (`listener`: its YAML list item) and the three intakes, metrics and /senders on an ops port. */
function relayYaml(intakePort: number, listener: string, logLevel = 'warn'): string {
  const intakes = NAMES.map((n) => `  - name: ${n}
    intake_key: ${KEYS[n]}
    output: { type: syslog, host: 127.0.0.1, port: ${intakePort}, server_name: localhost, ca_file: ${TLS}ca.crt, resend_window_ms: 100, backoff: { initial_ms: 50, max_ms: 200 } }`);
  return `log_level: ${logLevel}
metrics: { address: 127.0.0.1, port: 0 }
shutdown_timeout_ms: 2000
intakes:
${intakes.join('\n')}
listeners:
${listener}`;
}

/** A syslog listener (tcp or relp) behind the balancer, routing by sender. */
function syslogListener(type: 'tcp' | 'relp', proxy: string, extra = ''): string {
  return `  - type: ${type}
    name: lb-in
    address: 127.0.0.1
    port: 0
    proxy_protocol: ${proxy}
    trusted_proxies: 127.0.0.1/32
${extra}    routes:
      - { match: { sender: 127.0.0.2/32 }, intake: a }
      - { match: { sender: 127.0.0.3/32 }, intake: b }
    default: lb
`;
}

/**
 * haproxy in TCP mode forwarding its frontend (on 127.0.0.1) to the relay's `relayPort`, from
 * 127.0.0.1, with `sendProxy` (send-proxy: v1, send-proxy-v2) and `server` (more of the server's
 * options). Resolves with the frontend's port once haproxy answers on its monitor URI (it serves
 * nothing before every frontend is bound).
 */
async function startBalancer(relayPort: number, sendProxy: 'send-proxy' | 'send-proxy-v2', server = ''): Promise<number> {
  const front = await freePort();
  let ready = await freePort();
  while (ready === front) ready = await freePort();
  const peer = track(startHaproxy(`global
  maxconn 200
defaults
  mode tcp
  timeout connect 5s
  timeout client 60s
  timeout server 60s
frontend fwd
  bind 127.0.0.1:${front}
  default_backend relay
backend relay
  server relay 127.0.0.1:${relayPort} ${sendProxy} source 127.0.0.1 ${server}
frontend ready
  mode http
  bind 127.0.0.1:${ready}
  monitor-uri /ready
`, tempDir('haproxy-')));
  await vi.waitFor(async () => {
    if (peer.proc.exitCode !== null) throw new Error(`haproxy exited ${peer.proc.exitCode}:\n${peer.output()}`);
    const r = await request(`http://127.0.0.1:${ready}/ready`, { headers: { connection: 'close' } });
    await r.body.dump();
    expect(r.statusCode).toBe(200);
  }, { timeout: 15_000, interval: 100 });
  return front;
}

/** Writes `data` from `source` to 127.0.0.1:port (TLS when `secure`), ends, and waits for the close. */
function sendFrom(source: string, port: number, data: string | Buffer, secure = false): Promise<void> {
  return new Promise((resolve, reject) => {
    const tcp = net.connect({ host: '127.0.0.1', port, localAddress: source });
    const s = secure ? tls.connect({ socket: tcp, ca: readFileSync(`${TLS}ca.crt`), servername: 'localhost' }, () => s.end(data)) : tcp.once('connect', () => tcp.end(data));
    s.on('error', reject);
    s.on('close', () => resolve());
  });
}

/** Writes `data` from `source` (and ends, with `end`), and resolves once the other side closed the connection. */
function refusedFrom(source: string, port: number, data: string | Buffer, end = false): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port, localAddress: source }, () => (end ? s.end(data) : s.write(data)));
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`the connection from ${source} was not closed`));
    }, 15_000);
    // Closed by the relay: a FIN or, with our bytes unread, a reset.
    s.on('error', () => {});
    s.on('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

const rfc5424 = (tag: string, i: number): string => `<134>1 2026-11-23T10:00:00Z host-${tag} app - - - ${tag} ${i}`;

/** What a sender sends: `n` lines with a header, then one without (its HOSTNAME is the sender's). */
function lines(tag: string, n: number): string[] {
  return [...Array.from({ length: n }, (_, i) => rfc5424(tag, i)), `plain ${tag}`];
}

function received(intake: TestIntake, name: Name) {
  return intake.received.filter((m) => m.intakeKey === KEYS[name]);
}

/** Every line of `tag` once at intake `name`, the plain one with the original sender as HOSTNAME. */
function expectDelivered(intake: TestIntake, name: Name, tag: string, n: number, sender: string): void {
  const got = received(intake, name);
  expect(got.map((m) => m.message).sort(), name).toEqual([...Array.from({ length: n }, (_, i) => `${tag} ${i}`), `plain ${tag}`].sort());
  expect(got.find((m) => m.message === `plain ${tag}`)).toMatchObject({ hostname: sender, problems: [] });
  expect(got.find((m) => m.message === `${tag} 0`)).toMatchObject({ hostname: `host-${tag}` });
}

interface Row { sender: string; events: number }

async function senderTable(relay: RunningRelay, input: string): Promise<Record<string, number>> {
  const r = await fetch(`http://127.0.0.1:${relay.daemon.opsPort!}/senders?input=${input}`);
  expect(r.status).toBe(200);
  const { inputs } = (await r.json()) as { inputs: { senders: Row[] }[] };
  return Object.fromEntries(inputs[0]!.senders.map((row) => [row.sender, row.events]));
}

/** Each intake's books balance with nothing left over; `want` are the events each received. */
async function expectBooks(relay: RunningRelay, want: Record<Name, number>): Promise<void> {
  await vi.waitFor(async () => {
    for (const n of NAMES) expect(await books(relay, n), n).toMatchObject({ received: want[n], sent: want[n], dropped: 0, queued: 0, unacked: 0, balanced: true });
  }, { timeout: 15_000 });
}

async function rejected(relay: RunningRelay, reason: string): Promise<number> {
  return relay.metric('intake_relay_input_connections_rejected_total', { reason });
}

describe('PROXY protocol behind haproxy', () => {
  it.each([
    ['v1', 'send-proxy'],
    ['v2', 'send-proxy-v2'],
    ['auto', 'send-proxy'],
    ['auto', 'send-proxy-v2'],
  ] as const)('TCP, proxy_protocol: %s, haproxy %s: routes and HOSTNAME by the original sender', async (mode, sendProxy) => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(relayYaml(intake.port, syslogListener('tcp', mode))));
    const front = await startBalancer(relay.daemon.topology.listenerPort('lb-in')!, sendProxy);
    const n = 20;
    await Promise.all([
      sendFrom('127.0.0.2', front, lines('two', n).map((l) => `${l}\n`).join('')),
      sendFrom('127.0.0.3', front, lines('three', n).map((l) => `${l}\n`).join('')),
    ]);
    await vi.waitFor(() => expect(intake.received).toHaveLength(2 * (n + 1)), { timeout: 15_000 });
    expectDelivered(intake, 'a', 'two', n, '127.0.0.2');
    expectDelivered(intake, 'b', 'three', n, '127.0.0.3');
    expect(received(intake, 'lb')).toEqual([]);
    await expectBooks(relay, { a: n + 1, b: n + 1, lb: 0 });
    expect(await senderTable(relay, 'lb-in')).toEqual({ '127.0.0.2': n + 1, '127.0.0.3': n + 1 });
    for (const reason of PROXY_REASONS) expect(await rejected(relay, reason), reason).toBe(0);
  }, 60_000);

  it('TLS passed through haproxy (send-proxy-v2): the handshake after the header, the original senders', async () => {
    const intake = track(await startTestIntake());
    const tlsFiles = `    tls: { cert_file: ${TLS}server.crt, key_file: ${TLS}server.key }\n`;
    const relay = track(await startRelay(relayYaml(intake.port, syslogListener('tcp', 'v2', tlsFiles))));
    const front = await startBalancer(relay.daemon.topology.listenerPort('lb-in')!, 'send-proxy-v2');
    const n = 20;
    await Promise.all([
      sendFrom('127.0.0.2', front, lines('two', n).map((l) => `${l}\n`).join(''), true),
      sendFrom('127.0.0.3', front, lines('three', n).map((l) => `${l}\n`).join(''), true),
    ]);
    await vi.waitFor(() => expect(intake.received).toHaveLength(2 * (n + 1)), { timeout: 15_000 });
    expectDelivered(intake, 'a', 'two', n, '127.0.0.2');
    expectDelivered(intake, 'b', 'three', n, '127.0.0.3');
    await expectBooks(relay, { a: n + 1, b: n + 1, lb: 0 });
    expect(await senderTable(relay, 'lb-in')).toEqual({ '127.0.0.2': n + 1, '127.0.0.3': n + 1 });
    for (const reason of [...PROXY_REASONS, 'tls_handshake']) expect(await rejected(relay, reason), reason).toBe(0);
  }, 60_000);

  it('RELP: rsyslog omrelp from 127.0.0.2 through haproxy (send-proxy-v2): every message once, routed by its original address', async () => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(relayYaml(intake.port, syslogListener('relp', 'v2'))));
    const front = await startBalancer(relay.daemon.topology.listenerPort('lb-in')!, 'send-proxy-v2');
    const inPort = await freePort();
    // imtcp in, omrelp out from 127.0.0.2 (localClientIp) to the balancer.
    const rsyslog = track(startRsyslog(() => `module(load="imtcp")
module(load="omrelp")
input(type="imtcp" address="127.0.0.1" port="${inPort}" ruleset="fwd")
ruleset(name="fwd") {
  action(type="omrelp" target="127.0.0.1" port="${front}" localClientIp="127.0.0.2"
    queue.type="LinkedList" action.resumeRetryCount="-1" action.resumeInterval="1")
}`));
    await rsyslog.listening(inPort);
    const n = 500;
    const body = (i: number): string => `relp ${String(i).padStart(4, '0')}`;
    await sendTcp(inPort, syslogLines(0, n, body, '<14>Nov 22 10:00:00 feeder relp[42]: '));
    await vi.waitFor(() => expect(intake.received).toHaveLength(n), { timeout: 30_000, interval: 200 });
    expect(received(intake, 'a').map((m) => m.message.trim()).sort()).toEqual(Array.from({ length: n }, (_, i) => body(i)));
    expect(received(intake, 'a')[0]).toMatchObject({ hostname: 'feeder', appName: 'relp', problems: [] });
    await expectBooks(relay, { a: n, b: 0, lb: 0 });
    expect(await senderTable(relay, 'lb-in')).toEqual({ '127.0.0.2': n });
    for (const reason of PROXY_REASONS) expect(await rejected(relay, reason), reason).toBe(0);
  }, 60_000);

  it.each([
    ['http', 'v1', 'send-proxy'],
    ['https', 'v2', 'send-proxy-v2'],
  ] as const)('%s through haproxy (proxy_protocol: %s, %s): each request\'s HOSTNAME and sender are its client\'s address', async (scheme, mode, sendProxy) => {
    const intake = track(await startTestIntake());
    const tlsFiles = scheme === 'https' ? `    tls: { cert_file: ${TLS}server.crt, key_file: ${TLS}server.key }\n` : '';
    const relay = track(await startRelay(relayYaml(intake.port, `  - type: http
    name: api
    address: 127.0.0.1
    port: 0
    proxy_protocol: ${mode}
    trusted_proxies: [127.0.0.1/32]
${tlsFiles}`)));
    const front = await startBalancer(relay.daemon.topology.listenerPort('api')!, sendProxy);
    const clients = [['127.0.0.2', 'a'], ['127.0.0.3', 'b']] as const;
    // One kept-alive connection per client, both open at once (the second request normally reuses it).
    const agents = clients.map(([source]) => {
      const agent = new Agent({ localAddress: source, connect: { ca: readFileSync(`${TLS}ca.crt`) } });
      return track({ agent, stop: () => agent.close() }).agent;
    });
    for (const words of [['one', 'two'], ['three']]) {
      for (const [i, [source, name]] of clients.entries()) {
        const res = await request(`${scheme}://127.0.0.1:${front}/plain/batch`, {
          method: 'POST', dispatcher: agents[i], body: words.map((w) => `${source} ${w}\n`).join(''), headers: { 'content-type': 'text/plain', 'x-sekoiaio-intake-key': KEYS[name] },
        });
        expect(res.statusCode).toBe(200);
        await res.body.dump();
      }
    }
    await vi.waitFor(() => expect(intake.received).toHaveLength(6), { timeout: 15_000 });
    for (const [source, name] of clients) {
      const got = received(intake, name);
      expect(got.map((m) => m.message).sort()).toEqual([`${source} one`, `${source} three`, `${source} two`]);
      for (const m of got) expect(m).toMatchObject({ hostname: source, problems: [] });
    }
    await expectBooks(relay, { a: 3, b: 3, lb: 0 });
    expect(await senderTable(relay, 'api')).toEqual({ '127.0.0.2': 3, '127.0.0.3': 3 });
    for (const reason of PROXY_REASONS) expect(await rejected(relay, reason), reason).toBe(0);
  }, 60_000);
});

/** A PROXY v2 header (PROXY command, TCP over IPv4) naming `src` as the sender. */
function v2Header(src: string): Buffer {
  const h = Buffer.alloc(28);
  Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]).copy(h);
  h[12] = 0x21;
  h[13] = 0x11;
  h.writeUInt16BE(12, 14);
  Buffer.from(src.split('.').map(Number)).copy(h, 16);
  Buffer.from([127, 0, 0, 1]).copy(h, 20);
  h.writeUInt16BE(5555, 24);
  h.writeUInt16BE(514, 26);
  return h;
}

describe('PROXY protocol: refused headers', () => {
  it('a forged header from an untrusted sender, a malformed one or none from the trusted proxy: refused and counted; a direct sender gets in as itself', async () => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(relayYaml(intake.port, syslogListener('tcp', 'auto'))));
    const port = relay.daemon.topology.listenerPort('lb-in')!;
    const forged = rfc5424('forged', 0);
    // 127.0.0.2 is no proxy: it may not claim to be 10.9.9.9 (whose events would go to the default).
    await refusedFrom('127.0.0.2', port, `PROXY TCP4 10.9.9.9 127.0.0.1 5555 514\r\n${forged}\n`);
    await refusedFrom('127.0.0.2', port, Buffer.concat([v2Header('10.9.9.9'), Buffer.from(`${forged}\n`)]));
    await vi.waitFor(async () => expect(await rejected(relay, 'proxy_untrusted')).toBe(2));
    // The trusted proxy must send a valid header: a bad address, a header cut short, none at all.
    await refusedFrom('127.0.0.1', port, `PROXY TCP4 999.1.1.1 127.0.0.1 5555 514\r\n${forged}\n`);
    await refusedFrom('127.0.0.1', port, 'PROXY TCP4 10.9.9.9 127.0', true);
    await refusedFrom('127.0.0.1', port, `${forged}\n`);
    await vi.waitFor(async () => expect(await rejected(relay, 'proxy_malformed')).toBe(3));
    // The same sender, directly and without a header: accepted, as 127.0.0.2.
    await sendFrom('127.0.0.2', port, lines('direct', 2).map((l) => `${l}\n`).join(''));
    await vi.waitFor(() => expect(intake.received).toHaveLength(3), { timeout: 15_000 });
    expectDelivered(intake, 'a', 'direct', 2, '127.0.0.2');
    expect(intake.received.filter((m) => m.message.includes('forged'))).toEqual([]);
    await expectBooks(relay, { a: 3, b: 0, lb: 0 });
    expect(await senderTable(relay, 'lb-in')).toEqual({ '127.0.0.2': 3 });
    expect(await rejected(relay, 'proxy_untrusted')).toBe(2);
    expect(await rejected(relay, 'proxy_timeout')).toBe(0);
  }, 60_000);

  it('haproxy sending v2 to a listener that expects v1: refused as malformed, nothing delivered', async () => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(relayYaml(intake.port, syslogListener('tcp', 'v1'))));
    const front = await startBalancer(relay.daemon.topology.listenerPort('lb-in')!, 'send-proxy-v2');
    await refusedFrom('127.0.0.2', front, lines('mismatch', 3).map((l) => `${l}\n`).join(''));
    await vi.waitFor(async () => expect(await rejected(relay, 'proxy_malformed')).toBe(1), { timeout: 15_000 });
    expect(await relay.metric('intake_relay_events_received_total')).toBe(0);
    expect(intake.received).toEqual([]);
    expect(await senderTable(relay, 'lb-in')).toEqual({});
  }, 60_000);
});

describe('PROXY protocol: haproxy\'s health checks', () => {
  it.each([
    ['tcp', 'v1', 'send-proxy'],
    ['tcp', 'v2', 'send-proxy-v2'],
    ['http', 'auto', 'send-proxy'],
  ] as const)('%s listener, proxy_protocol: %s, haproxy %s with check-send-proxy: counted as health checks, logged at debug, never refused', async (type, mode, sendProxy) => {
    const intake = track(await startTestIntake());
    const listener = type === 'tcp' ? syslogListener('tcp', mode) : `  - type: http
    name: lb-in
    address: 127.0.0.1
    port: 0
    proxy_protocol: ${mode}
    trusted_proxies: [127.0.0.1/32]
`;
    const relay = track(await startRelay(relayYaml(intake.port, listener, 'debug')));
    // A check every 200 ms: the header (v1, or LOCAL for v2), then a reset as soon as it is sent.
    await startBalancer(relay.daemon.topology.listenerPort('lb-in')!, sendProxy, 'check check-send-proxy inter 200');
    const checks = 10;
    await vi.waitFor(async () => {
      // Counters only grow: a check refused once fails here until the timeout, with its reason.
      for (const reason of PROXY_REASONS) expect(await rejected(relay, reason), reason).toBe(0);
      expect(await relay.metric('intake_relay_input_proxy_health_checks_total', { input: 'lb-in' })).toBeGreaterThanOrEqual(checks);
    }, { timeout: 30_000, interval: 100 });
    expect(await rejected(relay, 'idle_timeout')).toBe(0);
    expect(relay.logs.filter((l) => l.level === 'warn' || l.level === 'error')).toEqual([]);
    expect(relay.logs.filter((l) => l.level === 'debug' && String(l.msg).includes('health check')).length).toBeGreaterThanOrEqual(checks);
    expect(await relay.metric('intake_relay_events_received_total')).toBe(0);
    expect(intake.received).toEqual([]);
  }, 60_000);
});
