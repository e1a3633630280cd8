// UDP receive threads at their edges: a stop that comes while start() is still spawning leaves no
// thread and no socket behind; a second set of receive threads (a second relay) on a port the
// first holds is ERELAY_LISTEN, not a silent share of its senders (SO_REUSEPORT would allow it).
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { UdpReceiveThreads } from '../../src/inputs/udp/receive-threads.ts';
import { udpSocketDrops } from '../../src/inputs/udp/input.ts';
import { nativeUdpForThreads } from '../../src/inputs/udp/native.ts';
import { tempDir, track } from '../helpers/cleanup.ts';
import { recvmmsgFailingShim, udpBurstWhileBlocked } from '../helpers/peers.ts';

// Both ways a thread receives: the native receive (built here by npm ci) and dgram.
const forThreads = nativeUdpForThreads();
const NATIVE = 'file' in forThreads ? forThreads.file : undefined;

it('the native receive is built here (npm ci), so the threads below use it', () => {
  expect(NATIVE).toMatch(/relay\.node$/);
});

it('a receive thread whose reads keep failing reports it (the first of every 1,000) and retries every 100 ms', () => {
  // recvmmsg made to fail with ENOBUFS in the whole process (a preloaded shim built here), so in
  // the receive thread too.
  const shim = recvmmsgFailingShim();
  const dir = tempDir('recvmmsg-thread-');
  const module = new URL('../../src/inputs/udp/receive-threads.ts', import.meta.url).pathname;
  const script = join(dir, 'run.mjs');
  writeFileSync(script, `
    import { UdpReceiveThreads } from ${JSON.stringify(module)};
    import dgram from 'node:dgram';
    const errors = [];
    const t = new UdpReceiveThreads({ threads: 1, address: '127.0.0.1', port: 0, type: 'udp4', receiveBufferBytes: undefined, maxBacklogBytes: 1 << 20,
      onBatch: () => {}, onFailure: (e) => errors.push('failure ' + e.message), onReadError: (errno, count) => errors.push(errno + '/' + count), what: 'shim', native: ${JSON.stringify(NATIVE)} });
    await t.start();
    const s = dgram.createSocket('udp4');
    s.send('x', t.port, '127.0.0.1', () => s.close());
    setTimeout(async () => { await t.stop(); console.log(JSON.stringify(errors)); }, 1000);`);
  const child = spawnSync(process.execPath, [script], { encoding: 'utf8', env: { ...process.env, LD_PRELOAD: shim } });
  expect(child.stderr).toBe('');
  // One report (the first failure), with ENOBUFS; retried about every 100 ms, not in a loop.
  expect(JSON.parse(child.stdout)).toEqual(['105/1']);
});

describe.each([
  ['recvmmsg', NATIVE],
  ['dgram', undefined],
])('UDP receive threads (%s)', (_name, native) => {
  function threads(port: number, n: number, batches: number[] = []): UdpReceiveThreads {
    return new UdpReceiveThreads({
      threads: n, address: '127.0.0.1', port, type: 'udp4', receiveBufferBytes: undefined, maxBacklogBytes: 1 << 20,
      onBatch: (b) => batches.push(b.ends.length), onFailure: () => {}, onReadError: () => {}, what: 'review/udp', native,
    });
  }

  it('what the main thread has not taken is bounded: past maxBacklogBytes the thread drops datagrams and says how many', async () => {
    let delivered = 0;
    let dropped = 0;
    const t = new UdpReceiveThreads({
      threads: 1, address: '127.0.0.1', port: 0, type: 'udp4', receiveBufferBytes: 4 << 20, maxBacklogBytes: 64 * 1024,
      onBatch: (b) => {
        delivered += b.ends.length;
        dropped += b.dropped;
      },
      onFailure: () => {}, onReadError: () => {}, what: 'review/udp', native,
    });
    await t.start();
    track(t);
    // 400 datagrams of 1,000 bytes from another process while this (the main) thread is blocked:
    // the thread may hand over 64 KiB, then drops.
    const sent = 400;
    await udpBurstWhileBlocked(t.port, { count: sent, perTick: 20, tickMs: 5, blockMs: 1_500 });
    await vi.waitFor(() => expect(delivered + dropped).toBe(sent), { timeout: 10_000 });
    expect(dropped).toBeGreaterThan(0);
    expect(delivered).toBeLessThanOrEqual(64 + 64);
    expect(udpSocketDrops('/proc/net/udp', t.port)).toBe(0);
  });

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
