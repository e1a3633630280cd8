// The disk queue against a TLS intake on loopback: long outages, restarts, kill -9 (the relay as
// its own process), damaged segments, a full queue, an unwritable disk. Every test checks that
// each event arrived (at least once; exactly once where nothing was cut) and the books.
import { chmodSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { books, startRelay } from '../helpers/relay.ts';
import { freePort, sendTcp, startTestIntake, type TestIntake } from '../helpers/peers.ts';
import { relayYaml } from '../helpers/config.ts';
import { counts, exited, startRelayProcess } from '../helpers/process.ts';
import { tempDir, track } from '../helpers/cleanup.ts';
import { syslogLines, syslogMessages } from '../helpers/lines.ts';

const tmp = (): string => tempDir('disk-queue-');
const body = (tag: string) => (i: number): string => `${tag} ${String(i).padStart(7, '0')} ${'d'.repeat(80)}`;
const frames = (tag: string, from: number, to: number): string => syslogLines(from, to, body(tag));
const messages = (tag: string, from: number, to: number): string[] => syslogMessages(from, to, body(tag));

function diskYaml(port: number, dir: string, queue = '', extra = ''): string {
  return relayYaml({
    intakePort: port,
    inputs: '      - { type: tcp, address: 127.0.0.1, port: 0, name: in }',
    extra: `data_dir: ${dir}\nshutdown_timeout_ms: 2000\n${extra}`,
    queue: `    queue: { type: disk, memory_events: 500, segment_bytes: 65536${queue} }`,
  });
}

/** A relay from `yaml`, its intake down, fed events 0 … n-1 tagged `tag`, then stopped: they wait on disk. */
async function queuedAndStopped(yaml: string, tag: string, n: number): Promise<{ lost: number; kept: number }> {
  const relay = track(await startRelay(yaml));
  await sendTcp(relay.port('t', 'in'), frames(tag, 0, n));
  await vi.waitFor(async () => expect(await relay.metric('intake_relay_events_received_total')).toBe(n));
  const report = await relay.stop();
  // The last line tells the truth: kept on disk, not "every queued event was delivered".
  expect(relay.logs.at(-1)).toMatchObject({ level: 'warn', delivered: 0, kept: n, lost: 0 });
  expect(relay.logs.at(-1)?.msg).toBe(`Stopped: ${n} events kept in disk queues for the next start (not delivered before the shutdown timeout); 0 delivered while stopping; none lost.`);
  expect(relay.logs.some((l) => String(l.msg).startsWith('Stopped: every'))).toBe(false);
  return report;
}

describe('disk queue', () => {
  it('an intake down for a long stretch while events keep coming: all delivered after it returns, in order', async () => {
    const dir = tmp();
    const port = await freePort();
    const relay = track(await startRelay(diskYaml(port, dir)));
    for (let i = 0; i < 20; i++) await sendTcp(relay.port('t', 'in'), frames('o', i * 1_000, (i + 1) * 1_000));
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_events_received_total')).toBe(20_000));
    // On disk, not in memory: the memory stage holds 500.
    expect(await relay.metric('intake_relay_disk_queue_events')).toBe(20_000);
    expect(await relay.metric('intake_relay_disk_queue_bytes')).toBeGreaterThan(20_000 * 100);
    expect(readdirSync(join(dir, 'queues', 't')).filter((f) => f.endsWith('.seg')).length).toBeGreaterThan(10);
    const intake = track(await startTestIntake(port));
    await vi.waitFor(() => expect(intake.received.length).toBeGreaterThanOrEqual(20_000), { timeout: 20_000 });
    expect(intake.received.map((r) => r.message)).toEqual(messages('o', 0, 20_000));
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: 20_000, queued: 0, dropped: 0, balanced: true }));
    // Delivered segments are deleted.
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_disk_queue_events')).toBe(0), { timeout: 5_000 });
    expect(readdirSync(join(dir, 'queues', 't')).filter((f) => f.endsWith('.seg')).length).toBe(1);
  });

  it('a restart with the intake down keeps every event; they are delivered after the restart, once', async () => {
    const dir = tmp();
    const port = await freePort();
    const yaml = diskYaml(port, dir);
    const report = await queuedAndStopped(yaml, 'r', 3_000);
    expect(report).toMatchObject({ lost: 0, kept: 3_000, delivered: 0 });
    const intake = track(await startTestIntake(port));
    const relay = track(await startRelay(yaml));
    expect(await relay.metric('intake_relay_disk_queue_recovered_events_total')).toBe(3_000);
    await sendTcp(relay.port('t', 'in'), frames('r', 3_000, 4_000));
    await vi.waitFor(() => expect(intake.received.length).toBeGreaterThanOrEqual(4_000), { timeout: 20_000 });
    expect(intake.received.map((r) => r.message)).toEqual(messages('r', 0, 4_000));
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: 4_000, queued: 0, balanced: true }));
  });

  it('damaged and truncated segments: the damage is set aside and counted, the rest delivered, the relay starts', async () => {
    const dir = tmp();
    const port = await freePort();
    const yaml = diskYaml(port, dir);
    await queuedAndStopped(yaml, 'c', 5_000);
    const qdir = join(dir, 'queues', 't');
    const segs = readdirSync(qdir).filter((f) => f.endsWith('.seg')).sort();
    // A bit flip in the middle of the second segment; the last one cut mid-record.
    const second = join(qdir, segs[1]!);
    const b = readFileSync(second);
    b[Math.floor(b.length / 2)] = (b[Math.floor(b.length / 2)] as number) ^ 0x40;
    writeFileSync(second, b);
    const last = join(qdir, segs[segs.length - 1]!);
    const l = readFileSync(last);
    writeFileSync(last, l.subarray(0, l.length - 50));
    const intake = track(await startTestIntake(port));
    const relay = track(await startRelay(yaml));
    expect(relay.logs.find((x) => String(x.msg).startsWith('Disk queue: damaged parts were set aside'))).toMatchObject({ level: 'error' });
    expect(relay.logs.find((x) => String(x.msg).startsWith('Disk queue: an incomplete last write'))).toBeDefined();
    expect(readdirSync(join(qdir, 'damaged')).length).toBe(1);
    // One event lost to the flip, one to the cut: everything else arrives, once, in order.
    await vi.waitFor(() => expect(intake.received.length).toBe(4_998), { timeout: 20_000 });
    const got = intake.received.map((r) => r.message);
    const all = messages('c', 0, 5_000);
    expect(got).toEqual(all.filter((m) => got.includes(m)));
    expect(got).not.toContain(all[4_999]);
    expect(await relay.metric('intake_relay_events_dropped_total', { reason: 'corrupt' })).toBe(1);
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: 4_999, sent: 4_998, dropped: 1, queued: 0, balanced: true }));
  });

  it('a full disk queue: block pauses the sender, drop_newest refuses and counts; a smaller max_bytes after a restart only means full until drained', async () => {
    const dir = tmp();
    const port = await freePort();
    let relay = track(await startRelay(diskYaml(port, dir, ', max_bytes: 300000, when_full: block')));
    const sending = sendTcp(relay.port('t', 'in'), frames('b', 0, 6_000));
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_input_pauses_total')).toBeGreaterThan(0));
    expect(await books(relay, 't')).toMatchObject({ dropped: 0, balanced: true });
    let intake = track(await startTestIntake(port));
    await sending;
    await vi.waitFor(() => expect(intake.received.length).toBe(6_000), { timeout: 20_000 });
    expect(intake.received.map((r) => r.message)).toEqual(messages('b', 0, 6_000));
    await relay.stop();
    await intake.stop();

    const dir2 = tmp();
    relay = track(await startRelay(diskYaml(port, dir2, ', max_bytes: 300000, when_full: drop_newest')));
    await sendTcp(relay.port('t', 'in'), frames('d', 0, 6_000));
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_events_received_total')).toBe(6_000));
    const dropped = await relay.metric('intake_relay_events_dropped_total', { reason: 'queue_full' });
    expect(dropped).toBeGreaterThan(0);
    const kept = 6_000 - dropped;
    await relay.stop();
    // Restart with a limit below what is on disk: it starts, is full until drained, loses nothing.
    intake = track(await startTestIntake(port));
    relay = track(await startRelay(diskYaml(port, dir2, ', max_bytes: 65536, when_full: drop_newest').replace('segment_bytes: 65536', 'segment_bytes: 67108864')));
    await vi.waitFor(() => expect(intake.received.length).toBe(kept), { timeout: 20_000 });
    expect(intake.received.map((r) => r.message)).toEqual(messages('d', 0, kept));
    // Once delivered (acknowledged), the segments go and there is room again.
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_disk_queue_bytes')).toBeLessThan(65_536), { timeout: 5_000 });
    await sendTcp(relay.port('t', 'in'), frames('after', 0, 10));
    await vi.waitFor(() => expect(intake.received.length).toBe(kept + 10));
  });
});

// The relay as its own process, for kill -9.

describe('disk queue, kill -9', () => {
  it.each([
    ['while it forwards', true],
    ['with the intake down', false],
  ])('kill -9 %s, then restart: every event arrives at least once, duplicates bounded', async (_what, intakeUp) => {
    const dir = tmp();
    const port = await freePort();
    const tcp = await freePort();
    const config = join(dir, 'relay.yaml');
    writeFileSync(config, diskYaml(port, dir, ', fsync_interval_ms: 100').replace('port: 0, name: in', `port: ${tcp}, name: in`).replace('log_level: debug', 'log_level: info'));
    let intake: TestIntake | undefined;
    if (intakeUp) intake = track(await startTestIntake(port));
    let r = startRelayProcess(config);
    await vi.waitFor(() => expect(r.output()).toContain('intake-relay started'), { timeout: 15_000 });
    const total = 30_000;
    let sent = 0;
    // The sender's events are all written (TCP) before the kill; what the relay had read is on disk.
    while (sent < total / 2) {
      await sendTcp(tcp, frames('k', sent, sent + 1_000));
      sent += 1_000;
    }
    // Let the relay read what was sent (the kernel buffers the rest), then kill it mid-stream.
    await new Promise((res) => setTimeout(res, 300));
    r.proc.kill('SIGKILL');
    await exited(r.proc);
    // What the intake has counted so far is no measure of what the relay sent: some may still be
    // in its socket buffers. What was sent to the relay before the kill is.
    const sentAtKill = sent;
    if (!intakeUp) intake = track(await startTestIntake(port));
    r = startRelayProcess(config);
    await vi.waitFor(() => expect(r.output()).toContain('intake-relay started'), { timeout: 15_000 });
    while (sent < total) {
      await sendTcp(tcp, frames('k', sent, sent + 1_000));
      sent += 1_000;
    }
    await vi.waitFor(() => expect(counts(intake!).size).toBeGreaterThanOrEqual(total), { timeout: 30_000, interval: 50 });
    const c = counts(intake!);
    // Every event the relay had read was in the disk queue (kill -9 does not lose the page cache;
    // fsync covers power loss), so every one arrives.
    for (const m of messages('k', 0, total)) expect(c.get(m), m).toBeGreaterThanOrEqual(1);
    const duplicates = intake!.received.length - total;
    expect(duplicates).toBeLessThanOrEqual(intakeUp ? sentAtKill : 0);
    r.proc.kill('SIGTERM');
    await exited(r.proc);
  }, 60_000);
});

describe('disk queue, unwritable', () => {
  it.runIf(process.platform === 'linux')('a directory it cannot write: the queue is full (senders wait), the error is logged and counted; it recovers when writing works again', async () => {
    const dir = tmp();
    const port = await freePort();
    const tcp = await freePort();
    const metricsPort = await freePort();
    const config = join(dir, 'relay.yaml');
    writeFileSync(config, diskYaml(port, dir)
      .replace('port: 0, name: in', `port: ${tcp}, name: in`)
      .replace('metrics: { enabled: false }', `metrics: { address: 127.0.0.1, port: ${metricsPort} }`)
      .replace('log_level: debug', 'log_level: info'));
    // As root, drop the capabilities that bypass file permissions, as a service user would lack them.
    const prefix = process.getuid?.() === 0 ? ['setpriv', '--inh-caps=-all', '--bounding-set=-dac_override,-dac_read_search,-fowner'] : [];
    const { proc, output } = startRelayProcess(config, { prefix });
    await vi.waitFor(() => expect(output()).toContain('intake-relay started'), { timeout: 15_000 });
    const scrape = async (name: string): Promise<number> => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return text.split('\n').filter((l) => l.startsWith(name)).reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    };
    await sendTcp(tcp, frames('w', 0, 200));
    await vi.waitFor(async () => expect(await scrape('intake_relay_events_received_total')).toBe(200));
    const qdir = join(dir, 'queues', 't');
    chmodSync(qdir, 0o555);
    // More than one segment's worth: the next segment cannot be created.
    const sending = sendTcp(tcp, frames('w', 200, 3_000));
    await vi.waitFor(async () => expect(await scrape('intake_relay_disk_queue_errors_total{intake="t",code="EACCES"}')).toBeGreaterThan(0), { timeout: 10_000 });
    expect(output()).toContain('Disk queue: cannot write');
    expect(await scrape('intake_relay_events_dropped_total')).toBe(0);
    chmodSync(qdir, 0o755);
    const intake = track(await startTestIntake(port));
    await sending;
    await vi.waitFor(() => expect(counts(intake).size).toBe(3_000), { timeout: 20_000 });
    expect(intake.received.map((r) => r.message)).toEqual(messages('w', 0, 3_000));
    proc.kill('SIGTERM');
    await exited(proc);
  }, 40_000);
});

describe('disk queue with a file input', () => {
  it('checkpoints move once lines are in the disk queue (fsynced), even with the intake down; a restart sends them from the queue, not from the file again', async () => {
    const dir = tmp();
    const port = await freePort();
    const file = join(dir, 'app.log');
    const lines = frames('f', 0, 1_000);
    writeFileSync(file, lines);
    const yaml = relayYaml({
      intakePort: port,
      inputs: `      - { type: file, paths: ["${file}"], read_from: beginning }`,
      extra: `data_dir: ${dir}\nshutdown_timeout_ms: 1000`,
      queue: '    queue: { type: disk, fsync_interval_ms: 50 }',
    });
    let relay = track(await startRelay(yaml));
    const state = join(dir, 'files', readdirSync(join(dir, 'files')).find((f) => f.endsWith('.json'))!);
    await vi.waitFor(() => expect(JSON.parse(readFileSync(state, 'utf8')).files[0].offset).toBe(Buffer.byteLength(lines)), { timeout: 5_000 });
    expect(await relay.metric('intake_relay_events_sent_total')).toBe(0);
    await relay.stop();
    const intake = track(await startTestIntake(port));
    relay = track(await startRelay(yaml));
    await vi.waitFor(() => expect(intake.received.length).toBe(1_000), { timeout: 10_000 });
    await new Promise((r) => setTimeout(r, 500));
    expect(intake.received.length).toBe(1_000);
    expect(intake.received.map((r) => r.message)).toEqual(lines.split('\n').slice(0, -1));
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ queued: 0, balanced: true }));
  });
});
