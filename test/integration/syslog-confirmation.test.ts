// The syslog output against intakes that misbehave: one that completes the handshake and then
// reads nothing before resetting (bytes written are not bytes received), and one that takes some
// bytes and resets, again and again. Nothing may count as sent before the intake has read it, every
// event must arrive, and a connection that never proves itself must back off.
import net from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { books, startRelay } from '../helpers/relay.ts';
import { relayYaml } from '../helpers/config.ts';
import { startFaultyIntake, type FaultyIntake } from '../helpers/faulty-intake.ts';
import { track } from '../helpers/cleanup.ts';
import { syslogLines } from '../helpers/lines.ts';

const lines = (from: number, to: number): string => syslogLines(from, to, (i) => `ev${String(i).padStart(6, '0')} ${'x'.repeat(100)}`);
const unique = (i: FaultyIntake): number => new Set(i.received.map((m) => m.message)).size;

function writeTo(port: number): { socket: net.Socket; write(data: string): Promise<void> } {
  const socket = net.connect(port, '127.0.0.1');
  return {
    socket,
    write: (data) => new Promise<void>((resolve, reject) => socket.write(data, (err) => (err ? reject(err) : resolve()))),
  };
}

describe('syslog output, confirmation', () => {
  it('an intake that reads nothing and then resets: nothing counts as sent before it is read; every event arrives', async () => {
    const stallMs = 3_000;
    // Every connection accepted during the stall is left unread, then reset when the stall ends.
    const intake = track(await startFaultyIntake((_i, t) => (t < stallMs ? { kind: 'blackhole', resetAfterMs: stallMs - t } : { kind: 'read' })));
    const relay = track(await startRelay(relayYaml({ intakePort: intake.port, resendWindowMs: 400, output: '      write_timeout_ms: 1000' })));
    const sender = writeTo(relay.port('t', 'tcp/0'));
    const total = 20_000;
    let sentDuringStall = 0;
    const t0 = Date.now();
    // Paced over about twice the stall, so that events keep coming while the intake reads nothing.
    for (let k = 0; k < 20; k++) {
      await sender.write(lines(k * 1_000, (k + 1) * 1_000));
      await new Promise((r) => setTimeout(r, 300));
      // The invariant: what the relay counts as sent, the intake has read (read sent first: both only grow).
      const sent = await relay.metric('intake_relay_events_sent_total');
      expect(sent).toBeLessThanOrEqual(unique(intake));
      if (Date.now() - t0 < stallMs) sentDuringStall = Math.max(sentDuringStall, sent);
    }
    sender.socket.end();
    expect(sentDuringStall).toBe(0);
    await vi.waitFor(() => expect(unique(intake)).toBe(total), { timeout: 30_000, interval: 100 });
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: total, sent: total, dropped: 0, queued: 0, unacked: 0, balanced: true }), { timeout: 15_000 });
    const duplicates = intake.received.length - total;
    expect(duplicates).toBeLessThanOrEqual(await relay.metric('intake_relay_events_resent_total'));
    expect(await relay.metric('intake_relay_output_errors_total', { code: 'ERELAY_WRITE_TIMEOUT' }) + await relay.metric('intake_relay_output_errors_total', { code: 'ERELAY_CONNECTION_LOST' })).toBeGreaterThan(0);
  });

  it('an intake that takes 512 KiB and resets, again and again: reconnects back off until it confirms; every event arrives', async () => {
    const stormMs = 4_000;
    const intake = track(await startFaultyIntake((_i, t) => (t < stormMs ? { kind: 'reset_after', bytes: 512 * 1024 } : { kind: 'read' })));
    const yaml = relayYaml({ intakePort: intake.port, resendWindowMs: 400 }).replace('backoff: { initial_ms: 50, max_ms: 200 }', 'backoff: { initial_ms: 100, max_ms: 2000 }');
    const relay = track(await startRelay(yaml));
    const total = 40_000; // about 6 MB: far more than one connection takes
    const sender = writeTo(relay.port('t', 'tcp/0'));
    await sender.write(lines(0, total));
    sender.socket.end();
    await vi.waitFor(() => expect(unique(intake)).toBe(total), { timeout: 40_000, interval: 100 });
    const start = intake.acceptedAt[0] as number;
    const duringStorm = intake.acceptedAt.filter((t) => t - start < stormMs).length;
    // Backoff 100 ms doubling to 2 s: about 7 attempts in 4 s (jitter aside). Without it: hundreds.
    expect(duringStorm).toBeLessThanOrEqual(12);
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: total, sent: total, dropped: 0, queued: 0, unacked: 0, balanced: true }), { timeout: 15_000 });
    const duplicates = intake.received.length - total;
    expect(duplicates).toBeLessThanOrEqual(await relay.metric('intake_relay_events_resent_total'));
    // Each failed connection delivered at most what it read: duplicates stay within that.
    expect(duplicates).toBeLessThanOrEqual(duringStorm * Math.ceil((512 * 1024) / 150));
  });

  it('a lull: what was written is confirmed by a clean close within resend_window_ms, and the next event opens a new connection', async () => {
    const intake = track(await startFaultyIntake(() => ({ kind: 'read' })));
    const relay = track(await startRelay(relayYaml({ intakePort: intake.port, resendWindowMs: 300 })));
    const sender = writeTo(relay.port('t', 'tcp/0'));
    await sender.write(lines(0, 10));
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_events_sent_total')).toBe(10), { timeout: 10_000 });
    expect(unique(intake)).toBe(10);
    expect(intake.connections).toBe(1);
    await sender.write(lines(10, 20));
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_events_sent_total')).toBe(20), { timeout: 10_000 });
    sender.socket.end();
    expect(intake.connections).toBe(2);
    expect(intake.received).toHaveLength(20);
    expect(await books(relay, 't')).toMatchObject({ received: 20, sent: 20, unacked: 0, balanced: true });
    expect(await relay.metric('intake_relay_events_resent_total')).toBe(0);
  });
});
