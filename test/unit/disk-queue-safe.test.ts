// DiskQueue.untilSafe (what RELP answers wait for): one fsync shared by those who wait, and, when
// fsync fails, no loop of fsyncs: the periodic tick tries again, and the waiters are woken once one works.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DiskQueue } from '../../src/core/disk-queue.ts';
import { event } from '../helpers/fake-output.ts';
import { tempDir, track } from '../helpers/cleanup.ts';

const fsyncs = vi.hoisted(() => ({ calls: 0, failing: false }));

vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>();
  const fsync = (fd: number, cb: (err: NodeJS.ErrnoException | null) => void): void => {
    fsyncs.calls++;
    if (fsyncs.failing) setImmediate(() => cb(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' })));
    else real.fsync(fd, cb);
  };
  return { ...real, fsync, default: { ...real, fsync } };
});

afterEach(() => {
  fsyncs.calls = 0;
  fsyncs.failing = false;
});

function queue(fsyncIntervalMs: number): DiskQueue {
  const q = new DiskQueue(
    { dir: tempDir('disk-safe-'), maxBytes: 1 << 24, whenFull: 'block', memoryEvents: 100, memoryBytes: 1 << 20, segmentBytes: 1 << 16, fsyncIntervalMs },
    { onError: (err) => { throw err; }, onLost: () => {}, onWrite: () => {}, onSync: () => {} },
  );
  track({ stop: async () => { q.close(); await q.finish(); } });
  return q;
}

const turns = async (n: number): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

describe('DiskQueue.untilSafe', () => {
  it('those who wait in one turn share one fsync, and are woken once it is done', async () => {
    const q = queue(60_000);
    const waits: Promise<void>[] = [];
    for (let i = 0; i < 20; i++) {
      q.offer([event(`e${i}`)], 10, true, true);
      waits.push(q.untilSafe(q.nextSeq));
    }
    await Promise.all(waits);
    expect(q.safeBelow).toBe(20);
    // One for all of them (a periodic one may come on top on a slow machine), not one each.
    expect(fsyncs.calls).toBeLessThanOrEqual(2);
  });

  it('a failing fsync is not retried in a loop: the waiters wait for the periodic one, and are answered once it works', async () => {
    const q = queue(200);
    fsyncs.failing = true;
    q.offer([event('a')], 10, true, true);
    let safe = false;
    void q.untilSafe(q.nextSeq).then(() => (safe = true));
    // Many turns of the event loop: a retry at each would be dozens of fsyncs.
    await turns(200);
    expect(safe).toBe(false);
    expect(fsyncs.calls).toBeLessThanOrEqual(3);
    fsyncs.failing = false;
    await vi.waitFor(() => expect(safe).toBe(true), { timeout: 10_000 });
    expect(q.safeBelow).toBe(1);
  });
});
