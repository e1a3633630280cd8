// UDP receive threads at their edges: a stop that comes while start() is still spawning leaves no
// thread and no socket behind; a second set of receive threads (a second relay) on a port the
// first holds is ERELAY_LISTEN, not a silent share of its senders (SO_REUSEPORT would allow it).
import { describe, expect, it, vi } from 'vitest';
import { UdpReceiveThreads } from '../../src/inputs/udp/receive-threads.ts';
import { udpSocketDrops } from '../../src/inputs/udp/input.ts';
import { nativeUdpFile } from '../../src/inputs/udp/native.ts';
import { track } from '../helpers/cleanup.ts';

// Both ways a thread receives: the native receive (built here by npm ci) and dgram.
const NATIVE = nativeUdpFile();

it('the native receive is built here (npm ci), so the threads below use it', () => {
  expect(NATIVE).toMatch(/udp-recvmmsg\.node$/);
});

describe.each([
  ['recvmmsg', NATIVE],
  ['dgram', undefined],
])('UDP receive threads (%s)', (_name, native) => {
  function threads(port: number, n: number, batches: number[] = []): UdpReceiveThreads {
    return new UdpReceiveThreads({
      threads: n, address: '127.0.0.1', port, type: 'udp4', receiveBufferBytes: undefined, maxBacklogBytes: 1 << 20,
      onBatch: (b) => batches.push(b.ends.length), onFailure: () => {}, what: 'review/udp', native,
    });
  }

  it('a stop while start() is spawning leaves no thread and no socket on the port', async () => {
    const t = threads(0, 3);
    const starting = t.start().catch(() => {});
    // Stop as soon as the first thread is bound (the second is being spawned).
    await new Promise<void>((resolve) => {
      const poll = (): void => void (t.port ? resolve() : setImmediate(poll));
      poll();
    });
    const port = t.port;
    await t.stop();
    await starting;
    // Every socket of the port is closed once stop() and start() have returned.
    await vi.waitFor(() => expect(udpSocketDrops('/proc/net/udp', port)).toBeUndefined(), { timeout: 5_000 });
  });

  it('a second set of receive threads on a port the first holds is refused (ERELAY_LISTEN), not given half its senders', async () => {
    const first = threads(0, 1);
    await first.start();
    track(first);
    const second = threads(first.port, 1);
    const outcome = await second.start().then(
      () => 'bound',
      (err: Error) => err.message,
    );
    track(second);
    expect(outcome).toMatch(/cannot listen on udp/);
  });
});
