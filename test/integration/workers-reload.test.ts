// Reloads with workers keep the connections they promise to keep. A shared TCP listener runs in
// every thread (workers: 2); blind senders (they write and never read, as logger, scripts and
// appliances do) write through every reload shape: a disk-queued intake added and routed to (its
// events, read by a worker, go to the main thread's disk queue), a route changed, a queue limit
// changed, the disk-queued intake removed. No connection is cut, every event arrives, the books
// balance for every intake.
import { describe, expect, it, vi } from 'vitest';
import { books, metricValue, startRelay, TLS } from '../helpers/relay.ts';
import net from 'node:net';
import { freePort, sendTcp, startRsyslog, startTestIntake, steadySender } from '../helpers/peers.ts';
import { tempDir, track } from '../helpers/cleanup.ts';
import { parseConfig } from '../../src/config/load.ts';

const KEYS = { mem: 'MemKey00000000000000000000000001', other: 'OtherKey000000000000000000000002', disk: 'DiskKey00000000000000000000000003' };

interface Shape {
  /** The disk-queued intake `disk` exists, and events of app names starting with d go to it. */
  readonly disk: boolean;
  /** Events of app names starting with o go to `other` (else to the default, `mem`). */
  readonly otherRoute: boolean;
  readonly memMaxEvents: number;
}

function yaml(intakePort: number, port: number, dir: string, s: Shape): string {
  const out = `{ type: syslog, host: 127.0.0.1, port: ${intakePort}, server_name: localhost, ca_file: ${TLS}ca.crt, resend_window_ms: 200 }`;
  return `log_level: info
metrics: { enabled: false }
workers: 2
data_dir: ${dir}
shutdown_timeout_ms: 5000
intakes:
  - name: mem
    intake_key: ${KEYS.mem}
    output: ${out}
    queue: { type: memory, max_events: ${s.memMaxEvents} }
  - name: other
    intake_key: ${KEYS.other}
    output: ${out}
${s.disk ? `  - name: disk
    intake_key: ${KEYS.disk}
    output: ${out}
    queue: { type: disk }
` : ''}listeners:
  - type: tcp
    name: shared
    address: 127.0.0.1
    port: ${port}
    routes:
${s.disk ? '      - { match: { app_name: "d*" }, intake: disk }\n' : ''}${s.otherRoute ? '      - { match: { app_name: "o*" }, intake: other }\n' : ''}      - { match: { app_name: "zzz" }, intake: other }
    default: mem
`;
}

describe('workers: reloads keep the shared listener\'s connections', () => {
  it('blind senders through every reload shape (add a disk intake, change a route, change a queue limit, remove the disk intake): none cut, nothing lost', async () => {
    const intake = track(await startTestIntake());
    const port = await freePort();
    const dir = tempDir('workers-reload-');
    let shape: Shape = { disk: false, otherRoute: false, memMaxEvents: 100_000 };
    const relay = track(await startRelay(yaml(intake.port, port, dir, shape)));
    const apps = ['app', 'dapp', 'oapp'];
    const senders = Array.from({ length: 16 }, (_, i) =>
      steadySender(port, (n) => `<14>Nov 26 10:00:00 host ${apps[n % 3]}: s${i}-${n}`, `127.0.0.${2 + (i % 8)}`));
    const progress = async (): Promise<void> => {
      const before = senders.map((s) => s.sent);
      await vi.waitFor(() => expect(senders.every((s, i) => s.sent > (before[i] as number) + 2_000)).toBe(true), { timeout: 20_000 });
    };
    await progress();
    const reload = async (next: Shape, what: string): Promise<void> => {
      shape = next;
      const report = await relay.daemon.reload(parseConfig(yaml(intake.port, port, dir, shape), `${what}.yaml`, {}));
      expect(report.failed, what).toEqual([]);
      expect(report.restarted, what).toEqual([]);
      await progress();
    };
    await reload({ ...shape, disk: true }, 'add-disk');
    // A worker's reads of "dapp" lines reach the main thread's disk queue, and are delivered from it.
    const inWorker = async (): Promise<number> => (await relay.metric('intake_relay_events_received_total', { intake: 'disk' })) - (await metricValue(relay.daemon.metrics, 'intake_relay_events_received_total', { intake: 'disk' }));
    await vi.waitFor(async () => expect(await inWorker()).toBeGreaterThan(0), { timeout: 10_000 });
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_events_sent_total', { intake: 'disk' })).toBeGreaterThan(await metricValue(relay.daemon.metrics, 'intake_relay_events_received_total', { intake: 'disk' })), { timeout: 10_000 });
    await reload({ ...shape, otherRoute: true }, 'route');
    await reload({ ...shape, memMaxEvents: 50_000 }, 'limit');
    await reload({ ...shape, disk: false }, 'remove-disk');
    await Promise.all(senders.map((s) => s.stop()));
    // Not one connection was cut by the relay.
    expect(senders.map((s) => s.closedByPeer)).toEqual(senders.map(() => false));
    const total = senders.reduce((n, s) => n + s.sent, 0);
    const seen = new Set(intake.received.map((m) => m.message));
    await vi.waitFor(() => {
      for (const m of intake.received) seen.add(m.message);
      expect(seen.size).toBe(total);
    }, { timeout: 30_000, interval: 200 });
    // Duplicates only where an output wrote again what a connection lost held (counted).
    const resent = await relay.metric('intake_relay_events_resent_total');
    expect(intake.received.length - total).toBeLessThanOrEqual(resent);
    // The books, every thread added up, for each intake (disk: while it existed).
    for (const name of ['mem', 'other']) {
      await vi.waitFor(async () => expect(await books(relay, name)).toMatchObject({ dropped: 0, queued: 0, unacked: 0, balanced: true }), { timeout: 15_000 });
    }
    const received = await relay.metric('intake_relay_events_received_total');
    expect(received).toBe(total);
    expect(await relay.metric('intake_relay_events_dropped_total')).toBe(0);
    expect(await relay.metric('intake_relay_route_dropped_total')).toBe(0);
    // The worker took its share of the connections (the main thread's own count is part of the total).
    expect(await metricValue(relay.daemon.metrics, 'intake_relay_events_received_total')).toBeLessThan(total);
    const stopped = await relay.stop();
    expect(stopped).toMatchObject({ lost: 0, kept: 0 });
  }, 120_000);
});

describe('workers: shared listeners that route to a disk-queued intake (the main thread\'s)', () => {
  it('RELP from rsyslog omrelp and HTTP requests, read by every thread: each answered once the main thread has them safe; all of it arrives; a stop under load keeps the rest on disk', async () => {
    const intake = track(await startTestIntake());
    const dir = tempDir('workers-forward-');
    const out = `{ type: syslog, host: 127.0.0.1, port: ${intake.port}, server_name: localhost, ca_file: ${TLS}ca.crt, resend_window_ms: 200 }`;
    const [relpPort, httpPort] = [await freePort(), await freePort()];
    const relay = track(await startRelay(`log_level: info
metrics: { enabled: false }
workers: 2
data_dir: ${dir}
shutdown_timeout_ms: 3000
intakes:
  - name: disk
    intake_key: ${KEYS.disk}
    output: ${out}
    queue: { type: disk }
listeners:
  - { type: relp, name: relp, address: 127.0.0.1, port: ${relpPort}, routes: [{ match: {}, intake: disk }] }
  - { type: http, name: api, address: 127.0.0.1, port: ${httpPort}, paths: [{ path: /ndjson, intake: disk, format: ndjson }] }
`));
    // Three omrelp sessions and 24 HTTP connections: the kernel spreads them over both threads.
    const senders = await Promise.all(['x', 'y', 'z'].map(async (tag) => {
      const inPort = await freePort();
      const peer = track(startRsyslog(() => `module(load="imtcp")
module(load="omrelp")
input(type="imtcp" address="127.0.0.1" port="${inPort}" ruleset="fwd")
ruleset(name="fwd") {
  action(type="omrelp" target="127.0.0.1" port="${relpPort}" queue.type="LinkedList" action.resumeRetryCount="-1" action.resumeInterval="1")
}`));
      await peer.listening(inPort);
      return { tag, inPort };
    }));
    await Promise.all(senders.map((s) => sendTcp(s.inPort, Array.from({ length: 1_000 }, (_, i) => `<14>Nov 26 10:00:00 feeder app: ${s.tag}-${i}\n`).join(''))));
    const statuses = await Promise.all(Array.from({ length: 24 }, (_, c) => new Promise<number>((resolve, reject) => {
      const body = Array.from({ length: 50 }, (_, i) => JSON.stringify({ message: `h${c}-${i}` })).join('\n');
      const sock = net.connect(httpPort, '127.0.0.1', () =>
        sock.write(`POST /ndjson HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/x-ndjson\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`));
      let text = '';
      sock.on('data', (d: Buffer) => (text += d.toString()));
      sock.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1])));
      sock.on('error', reject);
    })));
    expect(statuses).toEqual(statuses.map(() => 200));
    const expected = 3_000 + 24 * 50;
    await vi.waitFor(() => expect(new Set(intake.received.map((m) => m.message.trim())).size).toBe(expected), { timeout: 30_000 });
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_relp_answers_total', { code: '200' })).toBeGreaterThanOrEqual(3_000), { timeout: 10_000 });
    // The workers read some of it, and the main thread's disk queue took it all.
    expect(await metricValue(relay.daemon.metrics, 'intake_relay_events_received_total', { intake: 'disk' })).toBeLessThan(await relay.metric('intake_relay_events_received_total', { intake: 'disk' }));
    await vi.waitFor(async () => expect(await books(relay, 'disk')).toMatchObject({ dropped: 0, queued: 0, unacked: 0, balanced: true }), { timeout: 15_000 });

    // The intake goes away; the senders write on; the relay stops: what the workers read is in the
    // main thread's disk queue before it closes, and kept there.
    await intake.stop();
    const relpMore = senders.map((s) => sendTcp(s.inPort, Array.from({ length: 500 }, (_, i) => `<14>Nov 26 10:00:00 feeder app: ${s.tag}-late-${i}\n`).join('')));
    await Promise.all(relpMore);
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_events_received_total', { intake: 'disk' })).toBe(expected + 1_500), { timeout: 20_000 });
    // Counted before the stop: a worker's counters end with it.
    const received = await relay.metric('intake_relay_events_received_total', { intake: 'disk' });
    const sent = await relay.metric('intake_relay_events_sent_total', { intake: 'disk' });
    const stopped = await relay.stop();
    expect(stopped.lost).toBe(0);
    expect(await relay.metric('intake_relay_events_dropped_total', { intake: 'disk' })).toBe(0);
    // Whatever was not delivered is on disk for the next start.
    expect(stopped.kept).toBe(received - sent);
  }, 90_000);
});
