// A burst of UDP datagrams sent while the relay's thread is blocked, and what must come of it:
// every datagram received, none dropped by the kernel or by a backlog's bound, the books balanced.
// For the inputs that read the socket on a thread of their own (the native reader thread,
// receive_threads).
import { expect, vi } from 'vitest';
import { track } from './cleanup.ts';
import { relayYaml } from './config.ts';
import { udpBurstWhileBlocked, startTestIntake } from './peers.ts';
import { books, startRelay } from './relay.ts';

/**
 * 1,500 datagrams of 1,000 bytes over about a second from another process, while this thread (the
 * relay's main thread) sleeps for 2 s: about 3 MB, far more than a socket's default receive buffer
 * holds, so without a thread reading the socket the kernel would drop most of them. `inputs`: the
 * intake `t`'s inputs, one UDP input on port 0.
 */
export async function expectBurstWhileBlockedArrivesWhole(inputs: string): Promise<void> {
  const intake = track(await startTestIntake());
  const relay = track(await startRelay(relayYaml({ intakePort: intake.port, inputs })));
  const port = relay.port('t', 'udp/0');
  const sent = 1_500;
  await udpBurstWhileBlocked(port, { count: sent, perTick: 15, tickMs: 10, blockMs: 2_000, prefix: '<14>burst ' });
  await vi.waitFor(async () => expect(await relay.metric('intake_relay_events_received_total')).toBe(sent), { timeout: 15_000 });
  expect(await relay.metric('intake_relay_udp_kernel_drops_total')).toBe(0);
  expect(await relay.metric('intake_relay_udp_receive_drops_total')).toBe(0);
  await vi.waitFor(() => expect(intake.received).toHaveLength(sent), { timeout: 15_000 });
  await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: sent, sent, dropped: 0, balanced: true }));
}
