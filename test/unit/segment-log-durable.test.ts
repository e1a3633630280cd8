// SegmentLog.durableBelow never runs ahead of a finished segment whose fsync (started in the
// background when the segment was rolled) has not completed: a later sync of the new segment
// ending first must not make the old segment's events count as durable (RELP answers and file
// checkpoints rely on it across a power loss).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SegmentLog } from '../../src/core/segment-log.ts';
import { event } from '../helpers/fake-output.ts';
import { tempDir } from '../helpers/cleanup.ts';

const held = vi.hoisted(() => ({ on: false, callbacks: [] as (() => void)[] }));

vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>();
  // While `held.on`, the first fsync asked for waits until released; the others run.
  const fsync = (fd: number, cb: (err: NodeJS.ErrnoException | null) => void): void => {
    if (held.on && held.callbacks.length === 0) held.callbacks.push(() => real.fsync(fd, cb));
    else real.fsync(fd, cb);
  };
  return { ...real, fsync, default: { ...real, fsync } };
});

afterEach(() => {
  held.on = false;
  held.callbacks = [];
});

describe('SegmentLog durability across a roll', () => {
  it('a sync of the new segment that ends first does not cover the finished one still syncing', async () => {
    const { log } = SegmentLog.open(tempDir('seg-durable-'), 64 * 1024);
    log.startAt(0);
    held.on = true;
    // Enough events to fill the first segment and roll into a second one.
    let n = 0;
    while (held.callbacks.length === 0) {
      log.append(Array.from({ length: 100 }, (_, i) => event(`e${n + i}`, 200)));
      n += 100;
    }
    const rolledAt = n;
    log.append([event('after', 200)]);
    // The new segment's fsync runs and ends; the old segment's is still held.
    let synced = false;
    const sync = log.sync(true).then(() => (synced = true));
    await new Promise((r) => setTimeout(r, 100));
    expect(log.durableBelow).toBeLessThan(rolledAt);
    expect(synced).toBe(false);
    held.callbacks[0]?.();
    await sync;
    await vi.waitFor(() => expect(log.durableBelow).toBe(n + 1));
    log.close();
  });
});
