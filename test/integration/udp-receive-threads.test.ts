// UDP receive threads (receive_threads: N): sockets on one port (SO_REUSEPORT) read by worker
// threads, their datagrams parsed and queued by the main thread. Each datagram arrives once with
// its sender's address; a burst while the main thread is blocked is not dropped by the kernel;
// a stop hands over what the threads had read; a port in use is a clear error. Books balance.
import { describe, expect, it, vi } from 'vitest';
import { books, startRelay } from '../helpers/relay.ts';
import { holdUdpPort, sendUdp, startTestIntake } from '../helpers/peers.ts';
import { expectBurstWhileBlockedArrivesWhole } from '../helpers/udp-burst.ts';
import { relayYaml } from '../helpers/config.ts';
import { track } from '../helpers/cleanup.ts';

const input = (threads: number, port = 0): string => `      - { type: udp, address: 127.0.0.1, port: ${port}, receive_threads: ${threads} }`;

describe('UDP receive threads', () => {
  it('every datagram once, from its own sender, whichever thread read it', async () => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(relayYaml({ intakePort: intake.port, inputs: input(3) })));
    const port = relay.port('t', 'udp/0');
    const lines = (tag: string): string[] => Array.from({ length: 1_000 }, (_, i) => `<14>Nov 22 10:00:00 ${tag}-${i}: from ${tag} ${i}`);
    // Plain lines (no header) take the sender's address as HOSTNAME.
    const plain = Array.from({ length: 200 }, (_, i) => `plain ${i}`);
    await Promise.all([sendUdp('127.0.0.2', port, lines('a'), 8), sendUdp('127.0.0.3', port, lines('b'), 8), sendUdp('127.0.0.4', port, plain, 4)]);
    await vi.waitFor(() => expect(intake.received).toHaveLength(2_200), { timeout: 20_000 });
    const messages = intake.received.map((m) => m.message);
    expect(new Set(messages).size).toBe(2_200);
    for (const tag of ['a', 'b']) expect(messages.filter((m) => m.startsWith(`from ${tag} `))).toHaveLength(1_000);
    const plainHosts = new Set(intake.received.filter((m) => m.message.startsWith('plain ')).map((m) => m.hostname));
    expect([...plainHosts]).toEqual(['127.0.0.4']);
    expect(await relay.metric('intake_relay_udp_kernel_drops_total')).toBe(0);
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: 2_200, sent: 2_200, dropped: 0, balanced: true }));
    // The threads received with recvmmsg (built here by npm ci), not dgram.
    expect(relay.logText()).not.toContain('receive with Node\'s dgram');
  });

  it('with the native receive turned off, the threads receive with dgram, say so, and every datagram still arrives once', async () => {
    process.env.INTAKE_RELAY_UDP_RECVMMSG = '0';
    try {
      const intake = track(await startTestIntake());
      const relay = track(await startRelay(relayYaml({ intakePort: intake.port, inputs: input(2) })));
      const port = relay.port('t', 'udp/0');
      const lines = Array.from({ length: 500 }, (_, i) => `<14>Nov 22 10:00:00 h app: dgram ${i}`);
      // 100 at a time, each read before the next: dgram has no reader thread of its own, and on a
      // busy machine a thread kept off the CPU lets the kernel's default buffer (~270 small
      // datagrams) overflow. Loss under load is the native reader's case (the burst test).
      for (let k = 0; k < lines.length; k += 100) {
        await sendUdp('127.0.0.2', port, lines.slice(k, k + 100), 4);
        await vi.waitFor(() => expect(intake.received.length).toBeGreaterThanOrEqual(k + 100), { timeout: 20_000 });
      }
      await vi.waitFor(() => expect(intake.received).toHaveLength(500), { timeout: 20_000 });
      expect(new Set(intake.received.map((m) => m.message)).size).toBe(500);
      expect(relay.logText()).toContain('UDP receive threads receive with Node\'s dgram');
      await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: 500, sent: 500, dropped: 0, balanced: true }));
    } finally {
      delete process.env.INTAKE_RELAY_UDP_RECVMMSG;
    }
  });

  it('a burst while the main thread is blocked is read by the threads, not dropped by the kernel', async () => {
    await expectBurstWhileBlockedArrivesWhole(input(2));
  });

  it('a stop hands over what the threads had read: nothing read is lost', async () => {
    const intake = track(await startTestIntake());
    const relay = await startRelay(relayYaml({ intakePort: intake.port, inputs: input(2), extra: 'shutdown_timeout_ms: 10000' }));
    const port = relay.port('t', 'udp/0');
    await sendUdp('127.0.0.2', port, Array.from({ length: 500 }, (_, i) => `<14>stop ${i}`), 4);
    const { lost } = await relay.stop();
    expect(lost).toBe(0);
    // Everything the relay counted as received was delivered before the stop ended. (Datagrams
    // still in the sockets' buffers when they close, on a busy machine, were never read: the
    // kernel discards them with the socket, as it would for any UDP receiver.)
    const received = await relay.metric('intake_relay_events_received_total');
    expect(received).toBeGreaterThan(0);
    expect(received + (await relay.metric('intake_relay_udp_kernel_drops_total'))).toBeLessThanOrEqual(500);
    expect(intake.received).toHaveLength(received);
    expect(new Set(intake.received.map((m) => m.message)).size).toBe(received);
  });

  it('a port another socket holds is a clear error naming the input, and no thread is left', async () => {
    const taken = await holdUdpPort();
    const intake = track(await startTestIntake());
    await expect(startRelay(relayYaml({ intakePort: intake.port, inputs: input(2, taken) }))).rejects.toThrow(new RegExp(`t/udp/${taken}: cannot listen on udp 127\\.0\\.0\\.1:${taken}: another process already listens there`));
  });
});
