// "Which firewall stopped sending?": several senders on distinct loopback addresses send to a UDP
// input and a shared TCP listener; /senders and /status list them with their counts, the one that
// stops is reported silent (a warning naming it, the gauge) and back when it sends again; the
// per-sender series stop at their cap; an HTTP client is tracked by hostname. The books balance.
import dgram from 'node:dgram';
import net from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { track } from '../helpers/cleanup.ts';
import { startTestIntake } from '../helpers/peers.ts';
import { books, startRelay, TEST_KEY, TLS } from '../helpers/relay.ts';

async function udpFrom(source: string, port: number, lines: string[]): Promise<void> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, source, () => r()));
  for (const l of lines) await new Promise<void>((r) => s.send(l, port, '127.0.0.1', () => r()));
  s.close();
}

async function tcpFrom(source: string, port: number, lines: string[]): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port, localAddress: source }, () => s.end(lines.map((l) => `${l}\n`).join('')));
    s.on('error', reject);
    s.on('close', () => resolve());
  });
}

interface Row { sender: string; events: number; bytes: number; silent: boolean }
interface Table { intake?: string; input: string; tracked: number; silent: number; senders: Row[] }

async function get<T>(port: number, path: string): Promise<T> {
  const r = await fetch(`http://127.0.0.1:${port}${path}`);
  expect(r.status).toBe(200);
  return (await r.json()) as T;
}

const line = (i: number) => `<134>1 2026-11-23T10:00:00Z fw1 app - - - event ${i}`;

describe('senders', () => {
  it('tables per input, a silent sender reported once and its return, capped series', async () => {
    const intake = track(await startTestIntake());
    const yaml = (listenerSenders: string) => `log_level: info
metrics: { address: 127.0.0.1, port: 0 }
intakes:
  - name: fw
    intake_key: ${TEST_KEY}
    output: { type: syslog, host: 127.0.0.1, port: ${intake.port}, server_name: localhost, ca_file: ${TLS}ca.crt, resend_window_ms: 100 }
    senders: { silent_after_ms: 1500, metrics: true, max_series: 2 }
    inputs:
      - { type: udp, name: fw-udp, address: 127.0.0.1, port: 0 }
listeners:
  - type: tcp
    name: shared-tcp
    address: 127.0.0.1
    port: 0
    routes: [{ match: { sender: 127.0.0.0/8 }, intake: fw }]
    senders: ${listenerSenders}
  - type: http
    name: api
    address: 127.0.0.1
    port: 0
`;
    const relay = track(await startRelay(yaml('{ silent_after_ms: 0, max_tracked: 2 }')));
    const ops = relay.daemon.opsPort!;
    const udp = relay.port('fw', 'fw-udp');
    const tcp = relay.daemon.topology.listenerPort('shared-tcp')!;
    let sent = 0;
    const burst = async (from: string, n: number) => {
      await udpFrom(from, udp, Array.from({ length: n }, (_, i) => line(sent + i)));
      sent += n;
    };
    await burst('127.0.0.2', 4);
    await burst('127.0.0.3', 3);
    await burst('127.0.0.4', 2);
    for (const from of ['127.0.0.5', '127.0.0.6', '127.0.0.7']) {
      await tcpFrom(from, tcp, [line(sent)]);
      sent++;
    }
    await vi.waitFor(() => expect(intake.received.length).toBe(sent), { timeout: 10_000 });

    const udpTable = async () => (await get<{ inputs: Table[] }>(ops, '/senders?input=fw-udp')).inputs;
    const [fw] = await udpTable();
    // (Whether one is already silent depends on how fast this machine got here: not asserted.)
    expect(fw).toMatchObject({ intake: 'fw', input: 'fw-udp', tracked: 3 });
    expect(Object.fromEntries(fw!.senders.map((r) => [r.sender, r.events]))).toEqual({ '127.0.0.2': 4, '127.0.0.3': 3, '127.0.0.4': 2 });
    expect(fw!.senders.find((r) => r.sender === '127.0.0.4')!.bytes).toBe(Buffer.byteLength(line(7)) + Buffer.byteLength(line(8)));
    // max_tracked: 2 on the shared listener: the first TCP sender made room for the last.
    const [shared] = (await get<{ inputs: Table[] }>(ops, '/senders?input=shared-tcp')).inputs;
    expect(shared!.intake).toBeUndefined();
    expect(shared!.senders.map((r) => r.sender).sort()).toEqual(['127.0.0.6', '127.0.0.7']);
    // Two series (max_series: 2); the third sender's events counted as overflow.
    const perSender = (await relay.daemon.metrics.senderEvents.get()).values.filter((v) => v.labels.input === 'fw-udp');
    expect(perSender).toHaveLength(2);
    expect(perSender.reduce((a, v) => a + v.value, 0) + (await relay.metric('intake_relay_sender_series_overflow_total', { input: 'fw-udp' }))).toBe(9);

    // 127.0.0.2 and .3 keep sending (every 200 ms, well within silent_after_ms on a quiet
    // machine; a stalled one may make them silent for a while too, so assertions name .4); .4 stops.
    const silentLines = (sender: string) => relay.logs.filter((l) => l.msg === 'A sender went silent.' && l.sender === sender);
    const silentNow = async () => (await get<{ inputs: Table[] }>(ops, '/senders?input=fw-udp&silent=1')).inputs[0]!.senders.map((r) => r.sender);
    let i = 0;
    await vi.waitFor(async () => {
      await burst(i++ % 2 ? '127.0.0.2' : '127.0.0.3', 1);
      expect(await silentNow()).toContain('127.0.0.4');
    }, { timeout: 15_000, interval: 200 });
    expect(silentLines('127.0.0.4')).toMatchObject([{ level: 'warn', intake: 'fw', input: 'fw-udp', events: 2 }]);
    expect(await relay.metric('intake_relay_senders_silent', { input: 'fw-udp' })).toBeGreaterThanOrEqual(1);
    const status = await get<{ inputs: { input: string; senders: number; silent: number; silent_senders?: Row[] }[] }>(ops, '/status');
    expect(status.inputs.find((x) => x.input === 'fw-udp')).toMatchObject({ senders: 3, silent_senders: expect.arrayContaining([{ sender: '127.0.0.4', events: 2, bytes: expect.any(Number), first_seen: expect.any(String), last_seen: expect.any(String), silent: true }]) });
    expect(status.inputs.find((x) => x.input === 'shared-tcp')).toMatchObject({ senders: 2, silent: 0 });

    await burst('127.0.0.4', 1);
    await vi.waitFor(() => expect(relay.logs.filter((l) => l.msg === 'A silent sender is sending again.' && l.sender === '127.0.0.4')).toHaveLength(1));
    expect(await silentNow()).not.toContain('127.0.0.4');
    // Logged once, not at every check.
    expect(silentLines('127.0.0.4')).toHaveLength(1);

    // A query it cannot answer is a 400 that says why.
    for (const [q, why] of [['limit=abc', 'limit must be'], ['silent=maybe', 'silent must be'], ['input=nope', 'No input or listener named "nope"']]) {
      const bad = await fetch(`http://127.0.0.1:${ops}/senders?${q}`);
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: string }).error).toContain(why);
    }

    // An HTTP client, by the events' HOSTNAME (its address when the events carry none).
    const api = relay.daemon.topology.listenerPort('api')!;
    const r = await fetch(`http://127.0.0.1:${api}/plain/batch?status_code=200`, { method: 'POST', headers: { 'x-sekoiaio-intake-key': TEST_KEY }, body: 'one\ntwo\n' });
    expect(r.status).toBe(200);
    sent += 2;
    const [http] = (await get<{ inputs: Table[] }>(ops, '/senders?input=api')).inputs;
    expect(http!.senders).toMatchObject([{ sender: '127.0.0.1', events: 2, bytes: 6 }]);

    // A reload that changes a listener's senders settings applies them without reopening it.
    const report = await relay.daemon.reload(parseConfig(yaml('{ silent_after_ms: 0, max_tracked: 2, metrics: true }'), 'relay.yaml', {}));
    expect(report).toMatchObject({ restarted: [], failed: [] });
    expect(relay.daemon.topology.listenerPort('shared-tcp')).toBe(tcp);
    await tcpFrom('127.0.0.8', tcp, [line(sent++)]);
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_sender_events_total', { input: 'shared-tcp', sender: '127.0.0.8' })).toBe(1));

    await vi.waitFor(() => expect(intake.received.length).toBe(sent), { timeout: 10_000 });
    await vi.waitFor(async () => expect(await books(relay, 'fw')).toMatchObject({ received: sent, sent, dropped: 0, balanced: true }));
  }, 40_000);
});
