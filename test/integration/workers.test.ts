// workers: N. The main thread and N - 1 worker threads listen on the same ports (SO_REUSEPORT);
// each parses, queues and delivers what its sockets received over its own connection to the intake.
// Every event arrives once, from its own sender, whichever thread read it; the books, added up
// over the threads, balance; a reload and a stop under load lose nothing; a file input and a disk
// queue stay with the main thread.
import net from 'node:net';
import { Writable } from 'node:stream';
import dgram from 'node:dgram';
import { describe, expect, it, vi } from 'vitest';
import { books, metricValue, startRelay, TEST_KEY, TLS } from '../helpers/relay.ts';
import { freePort, sendTcp, startRsyslog, startTestIntake, steadySender } from '../helpers/peers.ts';
import { relayYaml } from '../helpers/config.ts';
import { tempDir, track } from '../helpers/cleanup.ts';
import { parseConfig } from '../../src/config/load.ts';

const inputs = `      - { type: tcp, address: 127.0.0.1, port: 0 }
      - { type: udp, address: 127.0.0.1, port: 0, receive_buffer_bytes: 4194304 }`;

/** `n` lines over each of `connections` TCP connections from `source`, tagged `tag-c-i`. */
async function sendTcpFrom(port: number, source: string, tag: string, connections: number, n: number): Promise<void> {
  await Promise.all(
    Array.from({ length: connections }, (_, c) => {
      const lines = Array.from({ length: n }, (_, i) => `<14>Nov 26 10:00:00 host ${tag}: ${tag}-${c}-${i}\n`).join('');
      return new Promise<void>((resolve, reject) => {
        const s = net.connect({ port, host: '127.0.0.1', localAddress: source }, () => s.end(lines));
        s.on('error', reject);
        s.on('close', () => resolve());
      });
    }),
  );
}

/** `n` datagrams from each of `sockets` source ports on `source`, paced. */
async function sendUdp(port: number, source: string, tag: string, sockets: number, n: number): Promise<void> {
  const socks = await Promise.all(
    Array.from({ length: sockets }, async () => {
      const s = dgram.createSocket('udp4');
      await new Promise<void>((r) => s.bind(0, source, () => r()));
      return s;
    }),
  );
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < sockets; k++) await new Promise<void>((r) => (socks[k] as dgram.Socket).send(`<14>Nov 26 10:00:00 ${tag}: ${tag}-${k}-${i}`, port, '127.0.0.1', () => r()));
    if (i % 5 === 4) await new Promise((r) => setTimeout(r, 2));
  }
  for (const s of socks) s.close();
}

describe('workers', () => {
  for (const workers of [1, 2, 4]) {
    it(`workers: ${workers}: every event once, from its own sender, books balanced`, async () => {
      const intake = track(await startTestIntake());
      const relay = track(await startRelay(relayYaml({ intakePort: intake.port, inputs, extra: `shutdown_timeout_ms: 5000\nworkers: ${workers}` })));
      const tcp = relay.port('t', 'tcp/0');
      const udp = relay.port('t', 'udp/0');
      await Promise.all([sendTcpFrom(tcp, '127.0.0.2', 'a', 16, 500), sendTcpFrom(tcp, '127.0.0.3', 'b', 16, 500), sendUdp(udp, '127.0.0.4', 'u', 8, 100)]);
      const total = 2 * 16 * 500 + 8 * 100;
      // On a busy machine the kernel may drop a datagram before any thread reads it: counted, and
      // the only loss allowed.
      const kernelDrops = (): Promise<number> => relay.metric('intake_relay_udp_kernel_drops_total');
      await vi.waitFor(async () => expect(intake.received.length + (await kernelDrops())).toBeGreaterThanOrEqual(total), { timeout: 30_000 });
      const lost = await kernelDrops();
      const messages = intake.received.map((m) => m.message);
      expect(new Set(messages).size).toBe(total - lost);
      expect(messages).toHaveLength(total - lost);
      // The sender's address is each event's own (plain lines would take it as HOSTNAME; here the tag tells).
      for (const [tag, n] of [['a', 8_000], ['b', 8_000], ['u', 800 - lost]] as const) expect(messages.filter((m) => m.startsWith(`${tag}-`))).toHaveLength(n);
      // Each connection's events in the order sent, whichever thread read it.
      const order = new Map<string, number>();
      for (const m of messages) {
        const [tag, c, i] = m.split('-');
        if (tag === 'u') continue;
        const key = `${tag}-${c}`;
        expect(Number(i)).toBe((order.get(key) ?? -1) + 1);
        order.set(key, Number(i));
      }
      await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: total - lost, sent: total - lost, dropped: 0, balanced: true }));
      // Each thread delivers over its own connection, and the kernel spread the 32 connections
      // over the threads: the main thread's own count is part of the total (all of them to one of
      // 2 threads: a chance of 2^-31).
      const connected = relay.logs.filter((l) => l.msg === 'Output connected.').map((l) => l.worker ?? 0);
      expect(new Set(connected).size).toBe(workers);
      const own = await metricValue(relay.daemon.metrics, 'intake_relay_events_received_total', { intake: 't' });
      if (workers > 1) expect(own).toBeLessThan(total);
      else expect(own).toBe(total - lost);
      if (workers > 1) expect(relay.logs.find((l) => l.msg === 'intake-relay started.')).toMatchObject({ workers });
      const stopped = await relay.stop();
      expect(stopped.lost).toBe(0);
    }, 60_000);
  }

  it('the memory queue bounds are the intake\'s, shared among the threads', async () => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(relayYaml({ intakePort: intake.port, inputs, extra: 'shutdown_timeout_ms: 1000\nworkers: 4', queue: '    queue: { type: memory, max_events: 1000, max_bytes: 1000000 }' })));
    expect(await relay.metric('intake_relay_queue_max_events', { intake: 't' })).toBe(1000);
    expect(await relay.metric('intake_relay_queue_max_bytes', { intake: 't' })).toBe(1000000);
  });

  it('a file input and a disk-queued intake stay in the main thread; the other intake runs in every thread', async () => {
    const intake = track(await startTestIntake());
    const dir = tempDir('workers-');
    const yaml = `log_level: info
metrics: { enabled: false }
data_dir: ${dir}
workers: 3
intakes:
  - name: net
    intake_key: ${TEST_KEY}
    inputs: [{ type: tcp, address: 127.0.0.1, port: 0 }]
    output: { type: syslog, host: 127.0.0.1, port: ${intake.port}, server_name: localhost, ca_file: ${TLS}ca.crt }
  - name: disk
    intake_key: ${TEST_KEY}
    inputs: [{ type: tcp, address: 127.0.0.1, port: 0 }, { type: file, paths: ['${dir}/*.log'] }]
    queue: { type: disk }
    output: { type: syslog, host: 127.0.0.1, port: ${intake.port}, server_name: localhost, ca_file: ${TLS}ca.crt }
`;
    const relay = track(await startRelay(yaml));
    await Promise.all([sendTcpFrom(relay.port('net', 'tcp/0'), '127.0.0.2', 'n', 64, 25), sendTcpFrom(relay.port('disk', 'tcp/0'), '127.0.0.2', 'd', 16, 100)]);
    await vi.waitFor(() => expect(intake.received.length).toBe(3_200), { timeout: 30_000 });
    // net: every thread received some of its 64 connections (the kernel hashes each to a thread: with
    // 16, one of three threads got none in about one run in 200); disk: the main thread all of its own.
    const own = (name: string): Promise<number> => metricValue(relay.daemon.metrics, 'intake_relay_events_received_total', { intake: name });
    expect(await own('net')).toBeLessThan(1_600);
    expect(await own('disk')).toBe(1_600);
    const connected = relay.logs.filter((l) => l.msg === 'Output connected.').map((l) => `${String(l.intake)}/${String(l.worker ?? 0)}`);
    expect(new Set(connected)).toEqual(new Set(['net/0', 'net/1', 'net/2', 'disk/0']));
    for (const name of ['net', 'disk']) await vi.waitFor(async () => expect(await books(relay, name)).toMatchObject({ received: 1_600, sent: 1_600, balanced: true }), { timeout: 10_000 });
  }, 60_000);
});

describe('workers: reload and stop under load', () => {
  it('a reload that changes the output under load from 12 connections and restarts another input on its port: nothing lost, connections kept', async () => {
    const intake = track(await startTestIntake());
    const [port, other] = [await freePort(), await freePort()];
    const yaml = (maxConnections: number, batch: number): string =>
      relayYaml({
        intakePort: intake.port,
        inputs: `      - { type: tcp, name: in, address: 127.0.0.1, port: ${port} }
      - { type: tcp, name: other, address: 127.0.0.1, port: ${other}, max_connections: ${maxConnections} }`,
        extra: 'shutdown_timeout_ms: 5000\nworkers: 3',
        queue: `    batch: { max_events: ${batch} }`,
      });
    const relay = track(await startRelay(yaml(100, 1000)));
    const senders = Array.from({ length: 12 }, (_, i) => steadySender(port, (n) => `<14>Nov 26 10:00:00 host app: s${i}-${n}`, `127.0.0.${2 + (i % 3)}`));
    await vi.waitFor(() => expect(senders.every((s) => s.sent > 500)).toBe(true), { timeout: 10_000 });
    // Every thread takes a new output over its queue, and closes the input "other" and listens
    // again on its port (the other threads' sockets hold it meanwhile: the main thread's probe
    // must not take them for another process).
    const report = await relay.daemon.reload(parseConfig(yaml(200, 500), 'v2.yaml', {}));
    expect(report.failed).toEqual([]);
    expect(report.changed).toEqual(['t']);
    expect(report.restarted).toEqual(['t/other']);
    expect(relay.daemon.topology.inputPort('t', 'other')).toBe(other);
    // Each worker reloaded too (the same changes), and none failed.
    const reloaded = relay.logs.filter((l) => l.msg === 'Configuration reloaded.');
    expect(reloaded.map((l) => l.worker ?? 0).sort()).toEqual([0, 1, 2]);
    for (const l of reloaded) expect(l).toMatchObject({ restarted: ['t/other'], failed: [] });
    const late = steadySender(other, (n) => `<14>Nov 26 10:00:00 host app: late-${n}`, '127.0.0.5');
    await vi.waitFor(() => expect(late.sent).toBeGreaterThan(100));
    senders.push(late);
    const after = senders.map((s) => s.sent);
    await vi.waitFor(() => expect(senders.every((s, i) => s.sent > (after[i] as number) + 500)).toBe(true), { timeout: 10_000 });
    await Promise.all(senders.map((s) => s.stop()));
    // Connections to the unchanged input stay open through the reload.
    for (const s of senders) expect(s.closedByPeer).toBe(false);
    const total = senders.reduce((n, s) => n + s.sent, 0);
    await vi.waitFor(() => expect(new Set(intake.received.map((m) => m.message)).size).toBe(total), { timeout: 20_000 });
    const resent = await relay.metric('intake_relay_events_resent_total', { intake: 't' });
    expect(intake.received.length - total).toBeLessThanOrEqual(resent);
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: total, dropped: 0, queued: 0, unacked: 0, balanced: true }), { timeout: 10_000 });
  }, 60_000);

  it('a reload that adds an intake without a key starts the emulator, and every thread\'s copy of that intake sends to it', async () => {
    const intake = track(await startTestIntake());
    const port = await freePort();
    const base = relayYaml({ intakePort: intake.port, extra: 'shutdown_timeout_ms: 2000\nworkers: 3\nemulator: { when: no_intake_key }' });
    const relay = track(await startRelay(base));
    const keyless = `${base}  - name: k\n    intake_key: ""\n    inputs: [{ type: tcp, name: kin, address: 127.0.0.1, port: ${port} }]\n`;
    const report = await relay.daemon.reload(parseConfig(keyless, 'v2.yaml', {}));
    expect(report.failed).toEqual([]);
    expect(report.added).toEqual(['k']);
    // Enough connections that every thread takes some (SO_REUSEPORT spreads them).
    await sendTcpFrom(port, '127.0.0.2', 'k', 24, 5);
    const seen = (): string[] => relay.logs.filter((l) => l.msg === 'Emulator received a valid message.').map((l) => String(l.message));
    await vi.waitFor(() => expect(seen()).toHaveLength(120), { timeout: 15_000 });
    expect(new Set(seen().map((m) => /k-\d+-\d+/.exec(m)?.[0])).size).toBe(120);
    expect(intake.received).toEqual([]);
    await vi.waitFor(async () => expect(await books(relay, 'k')).toMatchObject({ received: 120, dropped: 0, balanced: true }), { timeout: 10_000 });
  }, 60_000);

  it('a stop under load: every thread stops its inputs, drains its queue and closes its output; what was taken in is delivered', async () => {
    const intake = track(await startTestIntake());
    const relay = await startRelay(relayYaml({ intakePort: intake.port, inputs: `      - { type: tcp, address: 127.0.0.1, port: 0 }`, extra: 'shutdown_timeout_ms: 10000\nworkers: 4' }));
    const port = relay.port('t', 'tcp/0');
    const senders = Array.from({ length: 16 }, (_, i) => steadySender(port, (n) => `<14>Nov 26 10:00:00 host app: s${i}-${n}`, '127.0.0.2'));
    await vi.waitFor(() => expect(senders.every((s) => s.sent > 300)).toBe(true), { timeout: 10_000 });
    const stopped = await relay.stop();
    await Promise.all(senders.map((s) => s.stop()));
    expect(stopped.lost).toBe(0);
    // The main thread took its part (the workers' counters end with them).
    const received = await metricValue(relay.daemon.metrics, 'intake_relay_events_received_total', { intake: 't' });
    expect(received).toBeGreaterThan(0);
    const messages = intake.received.map((m) => m.message);
    // At least once: a connection that fails (a reset, a write or a close not answered in time) has
    // what it held written again on the next, counted as resent and logged by its thread (once per
    // 10 s). No duplicate comes without such a line. (Seen once in a full run on the 2-core VM: 500
    // of 9,850 twice; not reproduced in 15 runs of this test beside three busy loops.)
    const duplicates = messages.length - new Set(messages).size;
    const lost = relay.logs.filter((l) => l.msg === 'Output connection lost; unconfirmed events will be written again.');
    if (duplicates > 0) expect(lost.length, `${duplicates} duplicates, no connection lost; warnings: ${JSON.stringify(relay.logs.filter((l) => ['warn', 'error', 'fatal'].includes(String(l.level))))}`).toBeGreaterThan(0);
    // Each sender's events arrived as a prefix of what it sent, in order: nothing in the middle lost.
    for (const [i] of senders.entries()) {
      const mine = [...new Set(messages.filter((m) => m.startsWith(`s${i}-`)))].map((m) => Number(m.split('-')[1]));
      expect(mine).toEqual(mine.map((_, k) => k));
    }
    // Nothing listens any more, in any thread.
    await expect(new Promise((resolve, reject) => net.connect(port, '127.0.0.1', () => resolve(1)).on('error', reject))).rejects.toThrow(/ECONNREFUSED/);
  }, 60_000);

  it('a port another process holds is an error at start, with workers too (the kernel would otherwise share it)', async () => {
    const intake = track(await startTestIntake());
    const other = net.createServer();
    await new Promise<void>((r) => other.listen({ port: 0, host: '127.0.0.1', reusePort: true }, () => r()));
    const taken = (other.address() as net.AddressInfo).port;
    try {
      await expect(startRelay(relayYaml({ intakePort: intake.port, inputs: `      - { type: tcp, address: 127.0.0.1, port: ${taken} }`, extra: 'shutdown_timeout_ms: 1000\nworkers: 2' }))).rejects.toThrow(/cannot listen on 127\.0\.0\.1:\d+: another process already listens there/);
    } finally {
      other.close();
    }
  });
});

describe('workers: what the operator sees', () => {
  const twelve = `      - { type: tcp, address: 127.0.0.1, port: 0 }`;

  it('the tap shows every thread\'s events, its limit holds across them, and the tables of senders see every sender once', async () => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(relayYaml({ intakePort: intake.port, inputs: twelve, extra: 'shutdown_timeout_ms: 1000\nworkers: 3' })));
    const port = relay.port('t', 'tcp/0');
    const lines: string[] = [];
    const out = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        cb();
      },
    });
    expect(relay.daemon.view.tap({ limit: 0, rate: 100_000 }, out)).toBeUndefined();
    await Promise.all([sendTcpFrom(port, '127.0.0.2', 'a', 8, 100), sendTcpFrom(port, '127.0.0.3', 'b', 8, 100), sendTcpFrom(port, '127.0.0.4', 'c', 8, 100)]);
    await vi.waitFor(() => expect(intake.received).toHaveLength(2_400), { timeout: 20_000 });
    // The main thread read only some of the 24 connections; the tap shows all 2,400 events.
    expect(await metricValue(relay.daemon.metrics, 'intake_relay_events_received_total', { intake: 't' })).toBeLessThan(2_400);
    await vi.waitFor(() => expect(lines.filter((l) => l.includes('"message"'))).toHaveLength(2_400));
    out.destroy();
    // A limit of 50 across 3 threads: 50 lines, then the view ends.
    const limited: string[] = [];
    const ended = new Promise<void>((resolve) => {
      const o = new Writable({
        write(chunk: Buffer, _enc, cb) {
          limited.push(...chunk.toString().split('\n').filter(Boolean));
          cb();
        },
      });
      o.once('finish', () => resolve());
      expect(relay.daemon.view.tap({ limit: 50, rate: 100_000 }, o)).toBeUndefined();
    });
    await Promise.all([sendTcpFrom(port, '127.0.0.2', 'd', 8, 100), ended]);
    expect(limited.filter((l) => l.includes('"message"'))).toHaveLength(50);
    // Every sender once, in the main thread's table, with all its events (the workers' sightings
    // reach it within a second).
    await vi.waitFor(() => {
      const table = relay.daemon.view.senders().find((t) => t.input === 'tcp/0');
      const rows = table?.rows(10) as { sender: string; events: number }[];
      expect(Object.fromEntries(rows.map((r) => [r.sender, r.events]))).toEqual({ '127.0.0.2': 1_600, '127.0.0.3': 800, '127.0.0.4': 800 });
    }, { timeout: 5_000 });
    expect(relay.logs.filter((l) => l.msg === 'A sender went silent.')).toEqual([]);
    // A view open at the stop ends (the client sees the end of the stream, not a cut connection).
    const last = new Writable({ write: (_c, _e, cb) => cb() });
    const finished = new Promise<void>((resolve) => last.once('finish', () => resolve()));
    expect(relay.daemon.view.tap({ limit: 0, rate: 100 }, last)).toBeUndefined();
    await relay.stop();
    await finished;
    expect(last.destroyed && !last.writableFinished).toBe(false);
  }, 60_000);

  it('each thread\'s utilization is a series of its own (main, then each worker by number)', async () => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(relayYaml({ intakePort: intake.port, inputs: twelve, extra: 'shutdown_timeout_ms: 1000\nworkers: 3' })));
    await sendTcpFrom(relay.port('t', 'tcp/0'), '127.0.0.2', 'u', 12, 200);
    await vi.waitFor(async () => {
      const registry = await relay.daemon.view.gather();
      const values = (await registry.getSingleMetric('intake_relay_thread_utilization')!.get()).values;
      expect(values.map((v) => v.labels.thread).sort()).toEqual(['1', '2', 'main']);
      for (const v of values) expect(v.value >= 0 && v.value <= 1).toBe(true);
    }, { timeout: 5_000 });
  });

  it('/readyz and /status add up the threads: queued events of every thread, an intake stalled in any', async () => {
    // No intake listens: every thread's queue holds what it received.
    const down = await freePort();
    const relay = track(await startRelay(relayYaml({ intakePort: down, inputs: twelve, extra: 'shutdown_timeout_ms: 1000\nworkers: 3', queue: '    queue: { type: memory, max_events: 30, when_full: block }' })));
    const port = relay.port('t', 'tcp/0');
    await Promise.all(Array.from({ length: 24 }, (_, c) => new Promise<void>((resolve) => {
      const s = net.connect({ port, host: '127.0.0.1' }, () => s.write(`<14>Nov 26 10:00:00 host app: q${c}\n`, () => resolve()));
      track({ stop: () => s.destroy() });
    })));
    // 24 events over 3 threads with a queue of 10 each (max_events 30 shared).
    const own = await metricValue(relay.daemon.metrics, 'intake_relay_events_received_total', { intake: 't' });
    expect(own).toBeLessThan(24);
    await vi.waitFor(() => expect(relay.daemon.view.health()[0]).toMatchObject({ queuedEvents: 24 }), { timeout: 5_000 });
    // Fill every thread's queue: a thread whose queue is full under when_full: block is not
    // accepting, whichever it is.
    await Promise.all(Array.from({ length: 24 }, (_, c) => new Promise<void>((resolve) => {
      const s = net.connect({ port, host: '127.0.0.1' }, () => s.write(Array.from({ length: 20 }, (_, i) => `<14>Nov 26 10:00:00 host app: f${c}-${i}\n`).join(''), () => resolve()));
      track({ stop: () => s.destroy() });
    })));
    await vi.waitFor(() => expect(relay.daemon.view.ready()).toBe(false), { timeout: 5_000 });
    // Every thread's queue over its share (10; a read that finds room is taken whole, then the
    // sender pauses), as of the workers' next report: all 504 events queued, in every thread.
    await vi.waitFor(() => expect(relay.daemon.view.health()[0]).toMatchObject({ accepting: false, queuedEvents: 504, state: 'retrying' }), { timeout: 5_000 });
    expect(await metricValue(relay.daemon.metrics, 'intake_relay_queue_events', { intake: 't' })).toBeLessThan(504);
  }, 30_000);

  it('a worker that fails while running ends the process (the service manager restarts it), as an unexpected error does', async () => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(relayYaml({ intakePort: intake.port, inputs: twelve, extra: 'shutdown_timeout_ms: 1000\nworkers: 2' })));
    const fatal = new Promise<Error>((resolve) => (relay.daemon.onFatal = resolve));
    const [worker] = relay.daemon.workerThreads();
    expect(worker).toBeDefined();
    await worker!.terminate();
    expect((await fatal).message).toMatch(/^worker 1 failed: worker 1 ended with code 1/);
  });
});

describe('workers: RELP and HTTP in every thread', () => {
  it('RELP from three rsyslog omrelp senders (a session each), answered by whichever thread took it: every message once', async () => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(relayYaml({ intakePort: intake.port, inputs: '      - { type: relp, address: 127.0.0.1, port: 0, name: relp }', extra: 'shutdown_timeout_ms: 2000\nworkers: 3' })));
    const relpPort = relay.port('t', 'relp');
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
    await vi.waitFor(() => expect(new Set(intake.received.map((m) => m.message.trim())).size).toBe(3_000), { timeout: 30_000 });
    // Each message answered 200 once delivered (the answers go out just after).
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_relp_answers_total', { code: '200' })).toBeGreaterThanOrEqual(3_000), { timeout: 10_000 });
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ queued: 0, unacked: 0, balanced: true }));
  }, 60_000);

  it('the HTTP receiver in every thread: requests over 24 connections, each accepted once, its memory budget shared', async () => {
    const intake = track(await startTestIntake());
    const yaml = `log_level: info
metrics: { enabled: false }
shutdown_timeout_ms: 2000
workers: 3
intakes:
  - name: a
    intake_key: ${TEST_KEY}
    output: { type: syslog, host: 127.0.0.1, port: ${intake.port}, server_name: localhost, ca_file: ${TLS}ca.crt }
listeners:
  - { type: http, name: api, address: 127.0.0.1, port: 0, max_inflight_bytes: 3000000, paths: [{ path: /ndjson, intake: a, format: ndjson }] }
`;
    const relay = track(await startRelay(yaml));
    const port = relay.daemon.topology.listenerPort('api') as number;
    const statuses = await Promise.all(Array.from({ length: 24 }, (_, c) => new Promise<number>((resolve, reject) => {
      const body = Array.from({ length: 50 }, (_, i) => JSON.stringify({ message: `h${c}-${i}` })).join('\n');
      const s = net.connect(port, '127.0.0.1', () =>
        s.write(`POST /ndjson HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/x-ndjson\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`));
      let text = '';
      s.on('data', (d: Buffer) => (text += d.toString()));
      s.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1])));
      s.on('error', reject);
    })));
    expect(new Set(statuses)).toEqual(new Set([200]));
    await vi.waitFor(() => expect(intake.received).toHaveLength(1_200), { timeout: 20_000 });
    expect(new Set(intake.received.map((m) => m.message)).size).toBe(1_200);
    // Each thread's listener holds its share of max_inflight_bytes; /status shows the sum.
    expect(relay.daemon.topology.listener('api')?.health?.()).toMatchObject({ budgetBytes: 1_000_000 });
    await vi.waitFor(() => expect(relay.daemon.view.listenerHealth()[0]).toMatchObject({ name: 'api', budgetBytes: 3_000_000 }), { timeout: 5_000 });
    await vi.waitFor(async () => expect(await books(relay, 'a')).toMatchObject({ received: 1_200, sent: 1_200, balanced: true }));
  }, 60_000);
});
