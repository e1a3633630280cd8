import { describe, expect, it, vi } from 'vitest';
import { BoundedQueue } from '../../src/core/queue.ts';
import type { LogEvent } from '../../src/core/event.ts';
import { backoffDelay } from '../../src/core/backoff.ts';

// An event of `size` bytes, told apart by its hostname.
const ev = (name: string, size = 10): LogEvent => ({
  buf: Buffer.alloc(size), start: 0, end: size, sdStart: 0, sdEnd: 0, msgStart: 0, tsStart: 0, tsEnd: 0,
  receivedAt: 0, sender: '', pri: 13, format: 0, hostname: name, appName: '', procId: '', msgId: '',
});
const evs = (n: number, prefix = 'e', size = 10) => Array.from({ length: n }, (_, i) => ev(`${prefix}${i}`, size));
const now = { maxEvents: 1000, maxBytes: 1 << 20, lingerMs: 0 };
const signal = new AbortController().signal;

/** Runs `fn` with Date, performance.now() (the soft mark's clock) and timers faked. */
async function withFakeClock(fn: () => Promise<void>): Promise<void> {
  vi.useFakeTimers({ toFake: ['Date', 'performance', 'setTimeout', 'clearTimeout'] });
  try {
    await fn();
  } finally {
    vi.useRealTimers();
  }
}

/** A reader's wait for room: writable(), and whether it has resolved yet. */
function waitWritable(q: BoundedQueue): { readonly done: Promise<void>; readonly resumed: boolean } {
  let resumed = false;
  const done = q.writable().then(() => {
    resumed = true;
  });
  return {
    done,
    get resumed() {
      return resumed;
    },
  };
}

/** The output takes a batch and releases it (from then on the queue counts as draining). */
async function drainOne(q: BoundedQueue, limits: typeof now): Promise<void> {
  q.release((await q.take(limits, signal))!);
}

/** 5,000 events or 5 MiB: a soft mark of 100 events (2%) unless the batches make it larger (2 batches). */
const softQueue = (): BoundedQueue => new BoundedQueue({ maxEvents: 5000, maxBytes: 5 << 20, whenFull: 'block' });

/** A soft queue offered `queued` events by a reader that can wait, whose output has taken and released 10 of them. */
async function drainingQueue(queued: number): Promise<BoundedQueue> {
  const q = softQueue();
  q.offer(evs(queued), queued * 10, 'pause');
  await drainOne(q, { ...now, maxEvents: 10 });
  return q;
}

/** The output takes and releases `n` batches: the reader is still held. */
async function expectHeldWhileDraining(q: BoundedQueue, batch: typeof now, n: number, w: ReturnType<typeof waitWritable>): Promise<void> {
  for (let i = 0; i < n; i++) await drainOne(q, batch);
  await Promise.resolve();
  expect(w.resumed).toBe(false);
}

/** `ms` pass (fake clock): the reader is still held. */
async function expectHeldAfter(w: ReturnType<typeof waitWritable>, ms: number): Promise<void> {
  vi.advanceTimersByTime(ms);
  await Promise.resolve();
  expect(w.resumed).toBe(false);
}

/** `ms` pass (fake clock): the reader has gone on. */
async function expectGoneOnAfter(w: ReturnType<typeof waitWritable>, ms: number): Promise<void> {
  vi.advanceTimersByTime(ms);
  await w.done;
  expect(w.resumed).toBe(true);
}

describe('BoundedQueue', () => {
  it('block: a pausable input is told to slow down at the limit, never refused', () => {
    const q = new BoundedQueue({ maxEvents: 5, maxBytes: 1000, whenFull: 'block' });
    expect(q.offer(evs(3), 30, 'pause').result).toBe('ok');
    expect(q.offer(evs(4), 40, 'pause')).toEqual({ result: 'slow_down', dropped: 0, droppedBytes: 0 });
    expect(q.events).toBe(7);
  });

  it('block: an input that cannot pause (UDP) gets what does not fit refused and counted', () => {
    const q = new BoundedQueue({ maxEvents: 5, maxBytes: 1000, whenFull: 'block' });
    expect(q.offer(evs(4), 40, 'drop').result).toBe('ok');
    expect(q.offer(evs(3), 30, 'drop')).toEqual({ result: 'dropped', dropped: 2, droppedBytes: 20 });
    expect(q.events).toBe(5);
  });

  it('drop_newest: refuses by bytes as well as by count', () => {
    const q = new BoundedQueue({ maxEvents: 100, maxBytes: 25, whenFull: 'drop_newest' });
    expect(q.offer(evs(3), 30, 'pause')).toEqual({ result: 'dropped', dropped: 1, droppedBytes: 10 });
    expect(q.bytes).toBe(20);
  });

  it('cuts batches by count and bytes, in order, and always moves an event larger than max_bytes', async () => {
    const q = new BoundedQueue({ maxEvents: 100, maxBytes: 10_000, whenFull: 'block' });
    q.offer(evs(5, 'a'), 50, 'pause');
    q.offer([ev('big', 500)], 500, 'pause');
    q.offer(evs(2, 'b'), 20, 'pause');
    const b1 = await q.take({ maxEvents: 3, maxBytes: 1000, lingerMs: 0 }, signal);
    expect(b1?.events.map((e) => e.hostname)).toEqual(['a0', 'a1', 'a2']);
    const b2 = await q.take({ maxEvents: 10, maxBytes: 100, lingerMs: 0 }, signal);
    expect(b2?.events.map((e) => e.hostname)).toEqual(['a3', 'a4']);
    const b3 = await q.take({ maxEvents: 10, maxBytes: 100, lingerMs: 0 }, signal);
    expect(b3?.events.map((e) => e.hostname)).toEqual(['big']);
    expect(b3?.bytes).toBe(500);
    expect(q.events).toBe(2);
    expect(q.bytes).toBe(20);
  });

  it('counts taken batches against the limits until they are released', async () => {
    const q = new BoundedQueue({ maxEvents: 10, maxBytes: 10_000, whenFull: 'drop_newest' });
    q.offer(evs(10), 100, 'pause');
    const b = await q.take({ ...now, maxEvents: 4 }, signal);
    expect(q.offer(evs(1), 10, 'pause').dropped).toBe(1);
    expect([q.events, q.pendingEvents]).toEqual([6, 10]);
    q.release(b!);
    expect(q.offer(evs(4), 40, 'pause').result).toBe('ok');
  });

  it('requeue puts batches back in front, oldest first', async () => {
    const q = new BoundedQueue({ maxEvents: 100, maxBytes: 10_000, whenFull: 'block' });
    q.offer(evs(4, 'q'), 40, 'pause');
    const old = await q.take({ ...now, maxEvents: 1 }, signal);
    const next = await q.take({ ...now, maxEvents: 2 }, signal);
    q.requeue([old!, next!]);
    expect(q.pendingEvents).toBe(4);
    const all = await q.take(now, signal);
    expect(all?.events.map((e) => e.hostname)).toEqual(['q0', 'q1', 'q2', 'q3']);
  });

  it('waits for linger or a full batch, and hands out the rest after close', async () => {
    const q = new BoundedQueue({ maxEvents: 100, maxBytes: 10_000, whenFull: 'block' });
    const pending = q.take({ maxEvents: 3, maxBytes: 10_000, lingerMs: 60_000 }, signal);
    q.offer(evs(1), 10, 'pause');
    q.offer(evs(2), 20, 'pause');
    expect((await pending)?.events).toHaveLength(3);
    q.offer(evs(1), 10, 'pause');
    const lingering = q.take({ maxEvents: 3, maxBytes: 10_000, lingerMs: 60_000 }, signal);
    q.close();
    expect((await lingering)?.events).toHaveLength(1);
    expect(await q.take(now, signal)).toBeUndefined();
    expect(q.offer(evs(2), 20, 'pause')).toEqual({ result: 'dropped', dropped: 2, droppedBytes: 20 });
  });

  it('a linger is measured on the monotonic clock: the wall clock stepped back an hour does not hold the batch', () =>
    withFakeClock(async () => {
      const q = new BoundedQueue({ maxEvents: 100, maxBytes: 10_000, whenFull: 'block' });
      q.offer(evs(1), 10, 'pause');
      let taken: number | undefined;
      void q.take({ maxEvents: 50, maxBytes: 10_000, lingerMs: 100 }, signal).then((b) => (taken = b?.events.length));
      await vi.advanceTimersByTimeAsync(50);
      vi.setSystemTime(Date.now() - 3_600_000);
      await vi.advanceTimersByTimeAsync(50);
      expect(taken).toBe(1);
    }));

  it('a lingering take is woken by a full batch of bytes, or at the linger\'s end with what is there', async () => {
    const q = new BoundedQueue({ maxEvents: 100, maxBytes: 10_000, whenFull: 'block' });
    const byBytes = q.take({ maxEvents: 50, maxBytes: 30, lingerMs: 60_000 }, signal);
    q.offer(evs(1), 10, 'pause');
    q.offer(evs(1), 10, 'pause');
    q.offer(evs(1), 10, 'pause');
    expect((await byBytes)?.events).toHaveLength(3);
    const short = q.take({ maxEvents: 50, maxBytes: 10_000, lingerMs: 20 }, signal);
    q.offer(evs(2), 20, 'pause');
    expect((await short)?.events).toHaveLength(2);
  });

  it('writable() resolves below 90% of the limits, once the output has stopped draining (else below half the soft mark)', async () => {
    await withFakeClock(async () => {
      const q = new BoundedQueue({ maxEvents: 200, maxBytes: 10_000, whenFull: 'block' });
      q.offer(evs(200), 2000, 'pause');
      // Batches of 11: a soft mark of 22 (two batches; 2% of the limits is 4).
      const batch = { ...now, maxEvents: 11 };
      const taken = [(await q.take(batch, signal))!, (await q.take(batch, signal))!];
      q.release(taken[0]!);
      // 189 of 200, the output draining: the reader waits until those 189 are released down to
      // half the mark (11), or 2 s pass without a release.
      const w = waitWritable(q);
      await Promise.resolve();
      expect(w.resumed).toBe(false);
      q.release(taken[1]!);
      // 178 of 200: below 90%, but the output is draining, 178 wait (above half the soft mark, 11),
      // and 11 of the 178 to release have been released since the reader paused.
      await expectHeldAfter(w, 1_900);
      // It releases nothing more (an outage): the reader goes on and may fill the queue.
      await expectGoneOnAfter(w, 200);
      expect(vi.getTimerCount()).toBe(0);
    });
  });

  it('while the output drains, a reader that can wait is slowed at the soft mark (2% of the limits, at least 2 batches) and goes on below half of it', async () => {
    const q = softQueue();
    const batch = { ...now, maxEvents: 10 };
    // Before the output has taken anything, nothing is draining: only the limits hold readers.
    expect(q.offer(evs(150), 1500, 'pause').result).toBe('ok');
    await drainOne(q, batch);
    // Draining now: 140 pending is above the soft mark (max(100, 2 x 10) = 100).
    expect(q.offer(evs(1), 10, 'pause').result).toBe('slow_down');
    // A reader that cannot wait (UDP) is not held by it: it is not full.
    expect(q.offer(evs(1), 10, 'drop').result).toBe('ok');
    expect(q.full).toBe(false);
    const w = waitWritable(q);
    while (q.pendingEvents >= 60) await drainOne(q, batch);
    await Promise.resolve();
    expect(w.resumed).toBe(false);
    await drainOne(q, batch);
    await w.done;
    expect(q.pendingEvents).toBeLessThan(50);
    expect(w.resumed).toBe(true);
  });

  it('an output that stops releasing (an outage) lets readers held by the soft mark go on after 2 s and fill the queue to its limits', async () => {
    await withFakeClock(async () => {
      const q = await drainingQueue(20);
      expect(q.offer(evs(100), 1000, 'pause').result).toBe('slow_down');
      const w = waitWritable(q);
      await expectHeldAfter(w, 1_900);
      await expectGoneOnAfter(w, 200);
      expect(q.offer(evs(4800), 48000, 'pause').result).toBe('ok');
      expect(q.offer(evs(100), 1000, 'pause').result).toBe('slow_down');
      expect(q.full).toBe(true);
      expect(vi.getTimerCount()).toBe(0);
    });
  });
});

describe('BoundedQueue soft mark (review cases)', () => {
  it('a reader that pauses just before the 2 s without a release end goes on when they end', async () => {
    await withFakeClock(async () => {
      const q = await drainingQueue(10);
      vi.advanceTimersByTime(1_999);
      expect(q.offer(evs(150), 1500, 'pause').result).toBe('slow_down');
      await expectGoneOnAfter(waitWritable(q), 2);
    });
  });

  it('a wall clock stepped back does not stretch the wait: it is measured on the monotonic clock', async () => {
    await withFakeClock(async () => {
      const q = await drainingQueue(10);
      expect(q.offer(evs(150), 1500, 'pause').result).toBe('slow_down');
      vi.setSystemTime(Date.now() - 3_600_000);
      await expectGoneOnAfter(waitWritable(q), 2_100);
    });
  });

  it('readers that cannot wait (UDP) keeping the queue above the mark do not starve a held reader: it goes on once the backlog it waited behind is released', async () => {
    const q = softQueue();
    const batch = { ...now, maxEvents: 100 };
    q.offer(evs(300), 3000, 'drop');
    await drainOne(q, batch);
    // 210 waiting, above the mark (max(100, 2 x 100) = 200): 210 pending to be released first.
    expect(q.offer(evs(10), 100, 'pause').result).toBe('slow_down');
    const w = waitWritable(q);
    // The output takes 100 at a time while UDP brings 100 more each time: the queue stays at 210.
    // The reader goes on once the 210 pending when it paused are released down to half the mark
    // (100): 110 released since.
    await drainOne(q, batch);
    q.offer(evs(100), 1000, 'drop');
    await Promise.resolve();
    expect(w.resumed).toBe(false);
    // 200 released since it paused: it goes on at once (not 2 s later).
    await drainOne(q, batch);
    await Promise.resolve();
    expect(w.resumed).toBe(true);
    await w.done;
  });

  it('readers held by the mark with the queue above 90% (UDP filled it) go on when the output stops, though the queue is not below 90%', async () => {
    await withFakeClock(async () => {
      const q = await drainingQueue(20);
      q.offer(evs(4510), 45100, 'drop');
      expect(q.offer(evs(5), 50, 'pause').result).toBe('slow_down');
      expect(q.full).toBe(false);
      await expectGoneOnAfter(waitWritable(q), 2_100);
    });
  });

  it('readers held far above the mark (each connection adds a read as it goes on) wait until the queue is back at half the mark, not for a mark\'s worth only', async () => {
    const q = await drainingQueue(20);
    const batch = { ...now, maxEvents: 10 };
    // Several connections' reads came in at once: 510 waiting against a mark of 100.
    expect(q.offer(evs(500), 5000, 'pause').result).toBe('slow_down');
    const w = waitWritable(q);
    // A mark's worth released (100): 410 still wait. Going on now would add another read per
    // connection, more than was released, round after round, up to the limits.
    await expectHeldWhileDraining(q, batch, 10, w);
    // 35 batches more leave 60; one more and it is down to half the mark: 50 wait.
    await expectHeldWhileDraining(q, batch, 35, w);
    expect(q.pendingEvents).toBe(60);
    await drainOne(q, batch);
    await w.done;
    expect(q.pendingEvents).toBe(50);
  });

  it('the same in bytes: large events reach the mark in bytes first, and a held reader waits for the bytes to drain', async () => {
    // A mark of 2,000 events (2%) but 2,000 bytes (two batches of 1,000 bytes): 100-byte events.
    const q = new BoundedQueue({ maxEvents: 100_000, maxBytes: 100_000, whenFull: 'block' });
    const batch = { maxEvents: 10, maxBytes: 1000, lingerMs: 0 };
    q.offer(evs(20, 'a', 100), 2000, 'pause');
    await drainOne(q, batch);
    expect(q.offer(evs(100, 'b', 100), 10_000, 'pause').result).toBe('slow_down');
    const w = waitWritable(q);
    // 110 events, far below half the event mark, but 11,000 bytes: released down to 1,000 bytes.
    await expectHeldWhileDraining(q, batch, 9, w);
    await drainOne(q, batch);
    await w.done;
    expect(q.pendingBytes).toBe(1000);
  });

  it('an output that takes what waits (an HTTP output opening requests) lets held readers go on before any answer', async () => {
    const q = await drainingQueue(20);
    const batch = { ...now, maxEvents: 10 };
    expect(q.offer(evs(100), 1000, 'pause').result).toBe('slow_down');
    const w = waitWritable(q);
    for (let i = 0; i < 6; i++) await q.take(batch, signal);
    await Promise.resolve();
    expect(w.resumed).toBe(false);
    // 40 waiting, 70 in flight: below half the mark (50) without a release.
    await q.take(batch, signal);
    await w.done;
    expect(w.resumed).toBe(true);
  });

  it('batches in flight do not count toward the mark (an HTTP output keeps many requests open)', async () => {
    const q = softQueue();
    const batch = { ...now, maxEvents: 10 };
    q.offer(evs(300), 3000, 'pause');
    await drainOne(q, batch);
    const inFlight = [];
    for (let i = 0; i < 25; i++) inFlight.push((await q.take(batch, signal))!);
    // 250 in flight, 40 waiting: below the mark of 100 waiting.
    expect(q.pendingEvents).toBe(290);
    expect(q.offer(evs(50), 500, 'pause').result).toBe('ok');
    expect(q.offer(evs(20), 200, 'pause').result).toBe('slow_down');
  });
});

describe('sequence numbers and the settled watermark', () => {
  it('numbers events in order; batches hold consecutive numbers, also after a requeue', async () => {
    const q = new BoundedQueue({ maxEvents: 100, maxBytes: 10_000, whenFull: 'block' });
    q.offer(evs(3, 'a'), 30, 'pause');
    q.offer(evs(4, 'b'), 40, 'pause');
    expect(q.nextSeq).toBe(7);
    const lim = { ...now, maxEvents: 5 };
    const first = await q.take(lim, signal);
    expect(first).toMatchObject({ seq: 0 });
    expect(first?.events.map((e) => e.hostname)).toEqual(['a0', 'a1', 'a2', 'b0', 'b1']);
    const second = await q.take(lim, signal);
    expect(second).toMatchObject({ seq: 5 });
    // Put back out of order (as parallel sends stopping at shutdown can): no batch spans the gap.
    q.requeue([first!]);
    q.requeue([second!]);
    const again = await q.take({ ...now, maxEvents: 100 }, signal);
    expect(again).toMatchObject({ seq: 5 });
    expect(again?.events.length).toBe(2);
    const last = await q.take({ ...now, maxEvents: 100 }, signal);
    expect(last).toMatchObject({ seq: 0 });
    expect(last?.events.length).toBe(5);
  });

  it('the watermark moves only over a gapless run of settled events, whatever order they settle in', () => {
    const q = new BoundedQueue({ maxEvents: 100, maxBytes: 10_000, whenFull: 'block' });
    q.offer(evs(30), 300, 'pause');
    q.settle(10, 10);
    q.settle(20, 5);
    expect(q.settledBelow).toBe(0);
    q.settle(0, 10);
    expect(q.settledBelow).toBe(25);
    q.settle(0, 10); // a duplicate changes nothing
    q.settle(25, 5);
    expect(q.settledBelow).toBe(30);
  });

  it('events refused at the offer get no number', () => {
    const q = new BoundedQueue({ maxEvents: 5, maxBytes: 10_000, whenFull: 'drop_newest' });
    expect(q.offer(evs(8), 80, 'pause').dropped).toBe(3);
    expect(q.nextSeq).toBe(5);
  });
});

describe('backoffDelay', () => {
  it('grows exponentially with jitter and stays under the cap', () => {
    const o = { initialMs: 100, maxMs: 1000 };
    expect(backoffDelay(1, o, () => 0)).toBe(50);
    expect(backoffDelay(1, o, () => 1)).toBe(100);
    expect(backoffDelay(3, o, () => 1)).toBe(400);
    expect(backoffDelay(50, o, () => 1)).toBe(1000);
    expect(backoffDelay(50, o, () => 0)).toBe(500);
  });
});
