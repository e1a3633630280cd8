// The disk queue against a TLS intake on loopback: long outages, restarts, kill -9 (the relay as
// its own process), damaged segments, a full queue, an unwritable disk. Every test checks that
// each event arrived (at least once; exactly once where nothing was cut) and the books.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { books, startRelay, type RunningRelay } from '../helpers/relay.ts';
import { freePort, sendTcp, startTestIntake, type TestIntake } from '../helpers/peers.ts';
import { relayYaml } from '../helpers/config.ts';

let relay: RunningRelay | undefined;
let intake: TestIntake | undefined;
const children: ChildProcess[] = [];
afterEach(async () => {
  await relay?.stop();
  relay = undefined;
  for (const c of children.splice(0)) c.kill('SIGKILL');
  await intake?.stop();
  intake = undefined;
});

const tmp = (): string => mkdtempSync(join(tmpdir(), 'disk-queue-'));
const frames = (tag: string, from: number, to: number): string => {
  let s = '';
  for (let i = from; i < to; i++) s += `<14>Nov 23 10:00:00 host app: ${tag} ${String(i).padStart(7, '0')} ${'d'.repeat(80)}\n`;
  return s;
};
const messages = (tag: string, from: number, to: number): string[] => frames(tag, from, to).split('\n').slice(0, -1).map((l) => l.slice(l.indexOf('app: ') + 5));

function counts(t: TestIntake): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of t.received) m.set(r.message, (m.get(r.message) ?? 0) + 1);
  return m;
}

function diskYaml(port: number, dir: string, queue = '', extra = ''): string {
  return relayYaml({
    intakePort: port,
    inputs: '      - { type: tcp, address: 127.0.0.1, port: 0, name: in }',
    extra: `data_dir: ${dir}\nshutdown_timeout_ms: 2000\n${extra}`,
    queue: `    queue: { type: disk, memory_events: 500, segment_bytes: 65536${queue} }`,
  });
}

describe('disk queue', () => {
  it('an intake down for a long stretch while events keep coming: all delivered after it returns, in order', async () => {
    const dir = tmp();
    const port = await freePort();
    relay = await startRelay(diskYaml(port, dir));
    for (let i = 0; i < 20; i++) await sendTcp(relay.port('t', 'in'), frames('o', i * 1_000, (i + 1) * 1_000));
    await vi.waitFor(async () => expect(await relay!.metric('intake_relay_events_received_total')).toBe(20_000));
    // On disk, not in memory: the memory stage holds 500.
    expect(await relay.metric('intake_relay_disk_queue_events')).toBe(20_000);
    expect(await relay.metric('intake_relay_disk_queue_bytes')).toBeGreaterThan(20_000 * 100);
    expect(readdirSync(join(dir, 'queues', 't')).filter((f) => f.endsWith('.seg')).length).toBeGreaterThan(10);
    intake = await startTestIntake(port);
    await vi.waitFor(() => expect(intake!.received.length).toBeGreaterThanOrEqual(20_000), { timeout: 20_000 });
    expect(intake.received.map((r) => r.message)).toEqual(messages('o', 0, 20_000));
    await vi.waitFor(async () => expect(await books(relay!, 't')).toMatchObject({ received: 20_000, queued: 0, dropped: 0, balanced: true }));
    // Delivered segments are deleted.
    await vi.waitFor(async () => expect(await relay!.metric('intake_relay_disk_queue_events')).toBe(0), { timeout: 5_000 });
    expect(readdirSync(join(dir, 'queues', 't')).filter((f) => f.endsWith('.seg')).length).toBe(1);
  });

  it('a restart with the intake down keeps every event; they are delivered after the restart, once', async () => {
    const dir = tmp();
    const port = await freePort();
    const yaml = diskYaml(port, dir);
    relay = await startRelay(yaml);
    await sendTcp(relay.port('t', 'in'), frames('r', 0, 3_000));
    await vi.waitFor(async () => expect(await relay!.metric('intake_relay_events_received_total')).toBe(3_000));
    const report = await relay.stop();
    relay = undefined;
    expect(report.undelivered).toBe(0);
    intake = await startTestIntake(port);
    relay = await startRelay(yaml);
    expect(await relay.metric('intake_relay_disk_queue_recovered_events_total')).toBe(3_000);
    await sendTcp(relay.port('t', 'in'), frames('r', 3_000, 4_000));
    await vi.waitFor(() => expect(intake!.received.length).toBeGreaterThanOrEqual(4_000), { timeout: 20_000 });
    expect(intake.received.map((r) => r.message)).toEqual(messages('r', 0, 4_000));
    await vi.waitFor(async () => expect(await books(relay!, 't')).toMatchObject({ received: 4_000, queued: 0, balanced: true }));
  });
});
