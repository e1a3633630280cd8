// SegmentLog.durableBelow never runs ahead of a finished segment whose fsync (started in the
// background when the segment was rolled) has not completed: a later sync of the new segment
// ending first must not make the old segment's events count as durable (RELP answers and file
// checkpoints rely on it across a power loss). And a failing open, stat or read (EMFILE, EIO)
// throws without leaving the log pointing at a file it does not know or a descriptor it closed.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SegmentLog } from '../../src/core/segment-log.ts';
import { event } from '../helpers/fake-output.ts';
import { tempDir } from '../helpers/cleanup.ts';

const held = vi.hoisted(() => ({ on: false, callbacks: [] as (() => void)[] }));
/** While set, these calls fail with this code. */
const failing = vi.hoisted(() => ({ open: '', fstat: '' }));

vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>();
  // While `held.on`, the first fsync asked for waits until released; the others run.
  const fsync = (fd: number, cb: (err: NodeJS.ErrnoException | null) => void): void => {
    if (held.on && held.callbacks.length === 0) held.callbacks.push(() => real.fsync(fd, cb));
    else real.fsync(fd, cb);
  };
  const fail = (code: string, call: string): never => {
    throw Object.assign(new Error(`${code}: ${call}`), { code, syscall: call });
  };
  const openSync = ((...a: Parameters<typeof real.openSync>) => (failing.open ? fail(failing.open, 'open') : real.openSync(...a))) as typeof real.openSync;
  const fstatSync = ((...a: Parameters<typeof real.fstatSync>) => (failing.fstat ? fail(failing.fstat, 'fstat') : real.fstatSync(...a))) as typeof real.fstatSync;
  const mocked = { fsync, openSync, fstatSync };
  return { ...real, ...mocked, default: { ...real, ...mocked } };
});

afterEach(() => {
  held.on = false;
  held.callbacks = [];
  failing.open = '';
  failing.fstat = '';
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

describe('SegmentLog when a call fails', () => {
  const names = (r: { events: readonly { hostname: string }[] }): string[] => r.events.map((e) => e.hostname);

  it('a read that cannot open the next segment (EMFILE) throws; the same read works once opening does, with no stale descriptor', () => {
    const { log } = SegmentLog.open(tempDir('seg-fail-'), 100);
    for (let i = 0; i < 3; i++) log.append([event(`e${i}`, 200)]); // one segment each
    expect(log.segments).toBe(3);
    expect(names(log.read(0, 1, 1 << 20))).toEqual(['e0']); // the first segment is open for reading
    failing.open = 'EMFILE';
    expect(() => log.read(1, 10, 1 << 20)).toThrow(expect.objectContaining({ code: 'EMFILE' }));
    failing.open = '';
    const r = log.read(1, 10, 1 << 20);
    expect(r).toMatchObject({ seq: 1, lost: 0 });
    expect(names(r)).toEqual(['e1', 'e2']);
    log.close();
  });

  it('a new segment that cannot be set up (fstat fails after its open) is not written to: the next append goes where the log reads', () => {
    const dir = tempDir('seg-fail-');
    let { log } = SegmentLog.open(dir, 1 << 20);
    log.append([event('e0')]);
    log.close();
    ({ log } = SegmentLog.open(dir, 1 << 20)); // reopened: the next append starts a new segment
    failing.fstat = 'EIO';
    expect(() => log.append([event('refused')])).toThrow(expect.objectContaining({ code: 'EIO' }));
    expect(log.nextSeq).toBe(1);
    failing.fstat = '';
    log.append([event('e1')]);
    expect(names(log.read(0, 10, 1 << 20))).toEqual(['e0', 'e1']);
    log.close();
    const again = SegmentLog.open(dir, 1 << 20);
    expect(again.report).toMatchObject({ events: 2, nextSeq: 2, damaged: [] });
    expect(names(again.log.read(0, 10, 1 << 20))).toEqual(['e0', 'e1']);
    again.log.close();
  });
});
