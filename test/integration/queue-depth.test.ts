// How deep the memory queue gets with TCP readers: while the output takes batches, readers are held
// to a short queue (the soft mark); when it stops (an intake outage), they fill it to its limits.
// Real TCP senders and the intake emulator on loopback; the depth read from the relay's own gauge.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BoundedQueue } from '../../src/core/queue.ts';
import { relayYaml } from '../helpers/config.ts';
import { sendTcp, startTestIntake, type TestIntake } from '../helpers/peers.ts';
import { books, startRelay, TEST_KEY, TLS, type RunningRelay } from '../helpers/relay.ts';
import { startHttpIntake } from '../helpers/http-intake.ts';
import { track } from '../helpers/cleanup.ts';

let relay: RunningRelay | undefined;
let intake: TestIntake | undefined;
afterEach(async () => {
  await relay?.stop();
  await intake?.stop();
  relay = intake = undefined;
});

const lines = (tag: string, from: number, n: number): Buffer =>
  Buffer.from(Array.from({ length: n }, (_, i) => `<14>Nov 23 10:00:00 host app: ${tag} ${String(from + i).padStart(7, '0')} ${'x'.repeat(150)}\n`).join(''));

/** Records the deepest any memory queue gets: its pending events after every offer. */
function recordDepth(): { deepest(): number; restore(): void } {
  const offer = BoundedQueue.prototype.offer;
  let deepest = 0;
  BoundedQueue.prototype.offer = function (this: BoundedQueue, ...args: Parameters<typeof offer>) {
    const r = offer.apply(this, args);
    deepest = Math.max(deepest, this.pendingEvents);
    return r;
  };
  return { deepest: () => deepest, restore: () => void (BoundedQueue.prototype.offer = offer) };
}

describe('memory queue depth with readers that can wait', () => {
  it('a flood over TCP to an intake that answers each request after 20 ms: the queue stays near 2% of its limit; every event arrives once', async () => {
    // HTTP: a batch leaves the queue when its request is answered, so the output drains steadily and
    // slower than the readers (a syslog intake's kernel buffers would take the whole flood at once).
    const http = track(await startHttpIntake(() => ({ status: 200, delayMs: 20 })));
    relay = await startRelay(`log_level: info
metrics: { enabled: false }
shutdown_timeout_ms: 1000
intakes:
  - name: t
    intake_key: ${TEST_KEY}
    inputs:
      - { type: tcp, name: in, address: 127.0.0.1, port: 0 }
    output: { type: http, url: ${http.url}, ca_file: ${TLS}ca.crt, proxy: none, concurrency: 2 }
    queue: { max_events: 20000 }
    batch: { max_events: 100, linger_ms: 5 }
`);
    const port = relay.port('t', 'in');
    // Prime the output (a first batch answered), then flood from 4 connections at once.
    await sendTcp(port, lines('p', 0, 10));
    await vi.waitFor(() => expect(http.accepted).toHaveLength(10), { timeout: 10_000 });
    const depth = recordDepth();
    let deepest: number;
    try {
      await Promise.all([0, 1, 2, 3].map((c) => sendTcp(port, lines(`c${c}`, 0, 10_000))));
      await vi.waitFor(() => expect(http.accepted).toHaveLength(40_010), { timeout: 60_000, interval: 50 });
      deepest = depth.deepest();
    } finally {
      depth.restore();
    }
    // The soft mark is 400 (2% of 20,000; two batches are 200); each connection may overshoot by
    // one read (64 KiB: about 350 of these lines) and two batches are in flight: about 2,000 at
    // most. Without the mark the queue reaches its limit (21,308 measured). The bound leaves room
    // for a machine so busy that the output answers nothing for 2 s.
    expect(deepest).toBeGreaterThanOrEqual(400);
    expect(deepest).toBeLessThan(10_000);
    expect(await relay.metric('intake_relay_input_pauses_total')).toBeGreaterThan(0);
    expect(new Set(http.accepted).size).toBe(40_010);
    // The intake counts an event accepted before the relay has its answer: the last batch's lands a moment later.
    await vi.waitFor(async () => expect(await books(relay!, 't')).toMatchObject({ received: 40_010, sent: 40_010, dropped: 0, balanced: true }));
  }, 90_000);

  it('an intake outage after traffic: within about 2 s readers fill the queue to its limit; when the intake returns everything arrives', async () => {
    intake = await startTestIntake();
    const intakePort = intake.port;
    relay = await startRelay(relayYaml({
      intakePort,
      inputs: '      - { type: tcp, name: in, address: 127.0.0.1, port: 0 }',
      queue: '    queue: { max_events: 30000 }',
    }));
    const port = relay.port('t', 'in');
    await sendTcp(port, lines('a', 0, 5_000));
    await vi.waitFor(() => expect(intake!.received.length).toBe(5_000), { timeout: 20_000 });
    await intake.stop();
    intake = undefined;
    // 60,000 more: the output releases nothing now, so after the soft mark's 2 s the readers take
    // the queue to its limit (30,000) and the rest waits in the sender's socket.
    const sending = sendTcp(port, lines('b', 0, 60_000));
    await vi.waitFor(async () => expect(await relay!.metric('intake_relay_queue_events', { intake: 't' })).toBeGreaterThanOrEqual(30_000), { timeout: 15_000, interval: 50 });
    intake = await startTestIntake(intakePort);
    await sending;
    // What the first intake had not confirmed when it stopped is written again (at least once).
    const b = (): number => new Set(intake!.received.filter((m) => m.message.startsWith('b ')).map((m) => m.message)).size;
    await vi.waitFor(() => expect(b()).toBe(60_000), { timeout: 60_000, interval: 100 });
    await vi.waitFor(async () => expect(await books(relay!, 't')).toMatchObject({ received: 65_000, dropped: 0, queued: 0, unacked: 0, balanced: true }), { timeout: 10_000 });
  }, 90_000);
});
