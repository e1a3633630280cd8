// A worker's ForwardQueue and the main thread's ForwardReceiver, wired back to back as the threads
// wire them (messages delivered asynchronously, in order): events arrive whole and in order;
// backpressure crosses (slow_down, room again, refusals for readers that cannot wait); waits for
// safety and delivery are answered by the real queue; what the main thread cannot take is counted
// there and never answered as safe.
import { describe, expect, it } from 'vitest';
import { BoundedQueue } from '../../src/core/queue.ts';
import { type EventQueue } from '../../src/core/event-queue.ts';
import { ForwardQueue, ForwardReceiver, WINDOW_BYTES, type ForwardIn, type ForwardOut } from '../../src/pipeline/forward.ts';
import { event, events } from '../helpers/fake-output.ts';

const NEVER = new AbortController().signal;

/** A worker's queue for intake "d", talking to a receiver in front of `queue` (messages one turn later, in order). */
function pair(queue: EventQueue | undefined, whenFull: 'block' | 'drop_newest' = 'block') {
  const dropped: [string, number][] = [];
  const toMain: ForwardOut[] = [];
  let worker: ForwardQueue;
  const receiver = new ForwardReceiver((name) => (name.toLowerCase() === 'd' ? queue : undefined), (m: ForwardIn) => setImmediate(() => worker.reply(m)), (i, n) => dropped.push([i, n]));
  worker = new ForwardQueue({ name: 'D', intakeKey: 'k', filters: [], whenFull }, (m, transfer) => {
    toMain.push(m);
    // Transferred: the worker's copy is gone, as with postMessage's transfer list.
    const copy = m.kind === 'forward' ? { ...m, data: new Uint8Array(transfer.slice(0)) } : m;
    setImmediate(() => receiver.handle(copy));
  });
  return { worker, receiver, dropped, toMain };
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

async function takeAll(q: EventQueue): Promise<string[]> {
  const b = await q.take({ maxEvents: 1_000_000, maxBytes: 1 << 30, lingerMs: 0 }, NEVER);
  if (!b) return [];
  q.release(b);
  q.settle(b.seq, b.events.length);
  return b.events.map((e) => e.hostname);
}

describe('forwarding to the main thread', () => {
  it('events arrive whole and in order, one message per offer; waits for safety and delivery are the real queue\'s', async () => {
    const q = new BoundedQueue({ maxEvents: 1000, maxBytes: 1 << 20, whenFull: 'block' });
    const { worker, toMain } = pair(q);
    expect(worker.offer([event('a'), event('b')], 20, 'pause').result).toBe('ok');
    expect(worker.offer([event('c')], 10, 'pause').result).toBe('ok');
    expect(worker.nextSeq).toBe(3);
    expect(toMain.filter((m) => m.kind === 'forward')).toHaveLength(2);
    let safe = false;
    let settled = false;
    void worker.untilSafe(3).then(() => (safe = true));
    void worker.untilSettled(2).then(() => (settled = true));
    await worker.flushed();
    await worker.untilWritten(3);
    expect(worker.pendingEvents).toBe(0);
    expect(q.pendingEvents).toBe(3);
    await turn();
    expect([safe, settled]).toEqual([false, false]);
    expect(await takeAll(q)).toEqual(['a', 'b', 'c']);
    for (let i = 0; i < 5 && !(safe && settled); i++) await turn();
    expect([safe, settled]).toEqual([true, true]);
    expect(worker.safeBelow).toBe(3);
  });

  it('backpressure crosses: slow_down when the queue slows its readers, writable() once it has room; readers that cannot wait are refused meanwhile', async () => {
    const q = new BoundedQueue({ maxEvents: 10, maxBytes: 1 << 20, whenFull: 'block' });
    const { worker } = pair(q);
    expect(worker.offer(events(12), 120, 'pause').result).toBe('ok');
    await worker.flushed();
    // The main thread's queue is over its limit: the worker learned it with the answer.
    expect(worker.full).toBe(true);
    expect(worker.offer(events(1), 10, 'pause').result).toBe('slow_down');
    // UDP cannot wait: refused here, counted by its sender as queue_full.
    expect(worker.offer(events(3), 30, 'drop')).toMatchObject({ result: 'dropped', dropped: 3 });
    expect(worker.admit(events(1), 10)).toBe('full');
    let writable = false;
    void worker.writable().then(() => (writable = true));
    await turn();
    expect(writable).toBe(false);
    await takeAll(q);
    for (let i = 0; i < 5 && !writable; i++) await turn();
    expect(writable).toBe(true);
    expect(worker.full).toBe(false);
    expect(worker.admit(events(1), 10)).toBe('ok');
  });

  it('at most WINDOW_BYTES not yet taken by the main thread: beyond, readers pause', async () => {
    const q = new BoundedQueue({ maxEvents: 1_000_000, maxBytes: 1 << 30, whenFull: 'block' });
    const { worker } = pair(q);
    const big = Array.from({ length: 64 }, () => event('x', 65_536));
    expect(worker.offer(big, 64 * 65_536, 'pause').result).toBe('slow_down');
    expect(worker.pendingBytes).toBeGreaterThanOrEqual(WINDOW_BYTES);
    await worker.writable();
    expect(worker.pendingBytes).toBe(0);
  });

  it('drop_newest: a reader that can pause is refused too while the queue is full, as a local queue does', async () => {
    const q = new BoundedQueue({ maxEvents: 2, maxBytes: 1 << 20, whenFull: 'drop_newest' });
    const { worker } = pair(q, 'drop_newest');
    worker.offer(events(2), 20, 'pause');
    await worker.flushed();
    expect(worker.offer(events(1), 10, 'pause')).toMatchObject({ result: 'dropped', dropped: 1 });
    // Files wait whatever when_full says.
    expect(worker.offer(events(1), 10, 'wait').result).toBe('slow_down');
  });

  it('what the main thread cannot take (the intake removed, its queue closed) is counted there, and no wait covering it is answered as safe', async () => {
    const q = new BoundedQueue({ maxEvents: 1000, maxBytes: 1 << 20, whenFull: 'block' });
    const { worker, dropped } = pair(q);
    worker.offer(events(2), 20, 'pause');
    await worker.flushed();
    const early = worker.untilWritten(2);
    q.close();
    worker.offer(events(3), 30, 'pause');
    const late = worker.untilSafe(5);
    await worker.flushed();
    await expect(early).resolves.toBeUndefined();
    await expect(late).rejects.toThrow(/could not be handed to the main thread/);
    await expect(worker.untilWritten(5)).rejects.toThrow();
    expect(dropped).toEqual([['D', 3]]);
    const gone = pair(undefined);
    gone.worker.offer(events(1), 10, 'pause');
    await expect(gone.worker.untilSafe(1)).rejects.toThrow();
    expect(gone.dropped).toEqual([['D', 1]]);
  });

  it('closed in the worker (removed there by a reload): offers are refused and counted by the sender', () => {
    const { worker } = pair(new BoundedQueue({ maxEvents: 10, maxBytes: 1 << 20, whenFull: 'block' }));
    worker.close();
    expect(worker.offer(events(2), 20, 'pause')).toMatchObject({ result: 'dropped', dropped: 2 });
    expect(worker.admit(events(1), 10)).toBe('closed');
  });
});
