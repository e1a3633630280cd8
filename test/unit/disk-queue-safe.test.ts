// DiskQueue.untilSafe (what RELP answers wait for): one fsync shared by those who wait, and, when
// fsync fails, no loop of fsyncs: the periodic tick tries again, and the waiters are woken once one works.
// And a disk that fails otherwise (no file descriptors left, EIO): settle and release never throw
// (they run in socket callbacks and the runner), the error is reported, the work is retried; a
// caller told its events were dropped or refused never sees them delivered.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DiskQueue, type DiskQueueOptions } from '../../src/core/disk-queue.ts';
import { event } from '../helpers/fake-output.ts';
import { tempDir, track } from '../helpers/cleanup.ts';

const fsyncs = vi.hoisted(() => ({ calls: 0, failing: false }));
/** While set, these calls fail with this code. */
const failing = vi.hoisted(() => ({ open: '', read: '' }));

vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>();
  const fsync = (fd: number, cb: (err: NodeJS.ErrnoException | null) => void): void => {
    fsyncs.calls++;
    if (fsyncs.failing) setImmediate(() => cb(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' })));
    else real.fsync(fd, cb);
  };
  const fail = (code: string, call: string): never => {
    throw Object.assign(new Error(`${code}: ${call}`), { code, syscall: call });
  };
  const openSync = ((...a: Parameters<typeof real.openSync>) => (failing.open ? fail(failing.open, 'open') : real.openSync(...a))) as typeof real.openSync;
  const readSync = ((...a: Parameters<typeof real.readSync>) => (failing.read ? fail(failing.read, 'read') : real.readSync(...a))) as typeof real.readSync;
  const mocked = { fsync, openSync, readSync };
  return { ...real, ...mocked, default: { ...real, ...mocked } };
});

afterEach(() => {
  fsyncs.calls = 0;
  fsyncs.failing = false;
  failing.open = '';
  failing.read = '';
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
      q.offer([event(`e${i}`)], 10, 'wait');
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
    q.offer([event('a')], 10, 'wait');
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

/** A queue whose errors are collected (as "op:code") in `errors`; ticks every 20 ms. */
function failingQueue(errors: string[], o: Partial<DiskQueueOptions> = {}, dir = tempDir('disk-fail-')): DiskQueue {
  const q = new DiskQueue(
    { dir, maxBytes: 1 << 24, whenFull: 'block', memoryEvents: 100, memoryBytes: 1 << 20, segmentBytes: 1 << 16, fsyncIntervalMs: 20, ...o },
    { onError: (err, op) => void errors.push(`${op}:${err.code ?? '?'}`), onLost: () => {}, onWrite: () => {}, onSync: () => {} },
  );
  track({ stop: async () => { q.close(); await q.finish(); } });
  return q;
}

const take = (q: DiskQueue, maxEvents = 1_000) => q.take({ maxEvents, maxBytes: 1 << 24, lingerMs: 0 }, AbortSignal.timeout(5_000));
const names = (b: { events: readonly { hostname: string }[] } | undefined): string[] => (b?.events ?? []).map((e) => e.hostname);
const named = (tag: string, from: number, to: number, size = 10) => Array.from({ length: to - from }, (_, i) => event(`${tag}${from + i}`, size));

describe('DiskQueue when the disk fails', () => {
  it('settle that must roll the delivered writer segment to delete it, with no descriptors left: no throw, reported, deleted by a later tick', async () => {
    const errors: string[] = [];
    const dir = tempDir('disk-fail-');
    const q = failingQueue(errors, {}, dir);
    // More than a segment (64 KiB) in one write: the writer's segment is full once it is delivered.
    expect(q.offer(named('e', 0, 70, 1_000), 70_000, 'pause').result).toBe('ok');
    const b = await take(q);
    q.release(b!);
    failing.open = 'EMFILE';
    expect(() => q.settle(b!.seq, b!.events.length)).not.toThrow();
    expect(errors).toContain('delete:EMFILE');
    expect(q.settledBelow).toBe(70);
    expect(q.diskBytes).toBeGreaterThan(70_000);
    failing.open = '';
    // No further settle: the tick retries the deletion.
    await vi.waitFor(() => expect(q.diskBytes).toBe(0));
    expect(q.settledBelow).toBe(70);
    expect(q.offer([event('after')], 10, 'pause').result).toBe('ok');
    const next = await take(q);
    expect(next!.seq).toBe(70);
    expect(names(next)).toEqual(['after']);
    q.release(next!);
    q.settle(next!.seq, 1);
    q.close();
    await q.finish();
    // Nothing resent, nothing skipped.
    const again = failingQueue(errors, {}, dir);
    expect(again.recovered).toBe(0);
    expect(again.nextSeq).toBe(71);
  });

  it('release that must read spilled events back, with the open (EMFILE) or the read (EIO) failing: no throw, reported, every event delivered once, in order', async () => {
    const errors: string[] = [];
    const q = failingQueue(errors, { memoryEvents: 10 });
    for (let i = 0; i < 30; i++) q.offer([event(`e${i}`)], 10, 'pause'); // 10 in memory, 20 spilled
    const got: string[] = [];
    for (const fault of ['open', 'read'] as const) {
      const b = await take(q);
      got.push(...names(b));
      failing[fault] = fault === 'open' ? 'EMFILE' : 'EIO';
      expect(() => q.release(b!)).not.toThrow();
      expect(errors).toContain(`read:${failing[fault]}`);
      failing[fault] = '';
      q.settle(b!.seq, b!.events.length);
    }
    // The tick reads them back.
    const last = await take(q);
    got.push(...names(last));
    q.release(last!);
    q.settle(last!.seq, last!.events.length);
    expect(got).toEqual(named('e', 0, 30).map((e) => e.hostname));
    expect(q.pendingEvents).toBe(0);
    expect(q.settledBelow).toBe(30);
  });

  it('a write refused to callers that cannot wait (UDP under drop_newest, HTTP admit) leaves nothing behind: what they count dropped is never delivered', async () => {
    const errors: string[] = [];
    const q = failingQueue(errors, { whenFull: 'drop_newest' });
    failing.open = 'EMFILE';
    expect(q.offer(named('udp', 0, 3), 30, 'drop')).toEqual({ result: 'dropped', dropped: 3, droppedBytes: 30 });
    expect(q.admit(named('http', 0, 2), 20)).toBe('full');
    expect(errors).toEqual(['write:EMFILE', 'write:EMFILE']);
    expect(q.pendingEvents).toBe(0);
    expect(q.nextSeq).toBe(0);
    expect(q.full).toBe(false);
    failing.open = '';
    expect(q.offer([event('after')], 10, 'wait').result).toBe('ok');
    const b = await take(q);
    expect(b!.seq).toBe(0);
    expect(names(b)).toEqual(['after']);
  });

  it('a caller that waits keeps its events through a failed write: held, written first once the disk works, in order', async () => {
    const errors: string[] = [];
    const q = failingQueue(errors);
    failing.open = 'EMFILE';
    expect(q.offer(named('tcp', 0, 2), 20, 'pause').result).toBe('slow_down');
    expect(q.full).toBe(true);
    expect(q.pendingEvents).toBe(2);
    // One that cannot wait, meanwhile: refused (the queue is full), nothing kept.
    expect(q.offer([event('udp')], 10, 'drop').result).toBe('dropped');
    expect(q.pendingEvents).toBe(2);
    failing.open = '';
    await q.writable();
    expect(q.offer([event('tcp2')], 10, 'pause').result).toBe('ok');
    const b = await take(q);
    expect(names(b)).toEqual(['tcp0', 'tcp1', 'tcp2']);
  });
});
