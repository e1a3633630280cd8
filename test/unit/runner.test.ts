// The SinkRunner alone: a real BoundedQueue, a scripted sink, a recording telemetry and fake time,
// so that every retry delay, pause and split can be named exactly.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SinkRunner } from '../../src/core/runner.ts';
import { BoundedQueue } from '../../src/core/queue.ts';
import { RelayError } from '../../src/core/errors.ts';
import type { Concurrency, SendResult } from '../../src/core/contracts.ts';
import { acked, events, FakeSink, FakeTelemetry, permanent, retryable, SENT, type Script } from '../helpers/fake-output.ts';

const INITIAL_MS = 100;

// What the runner tells the process's housekeeping: its output busy, then idle at each lull.
const activity = { busy: 0, idle: 0 };

interface Rig {
  readonly queue: BoundedQueue;
  readonly sink: FakeSink;
  readonly t: FakeTelemetry;
  readonly runner: SinkRunner;
}

interface RigOptions {
  /** Events e0 … e(n-1) queued before the start, as one chunk. */
  readonly events?: number;
  /** Events per batch. */
  readonly maxEvents?: number;
  readonly concurrency?: Concurrency;
  readonly maxRetries?: number;
  readonly queue?: BoundedQueue;
}

const runners: SinkRunner[] = [];

function rig(script: Script, o: RigOptions = {}): Rig {
  const queue = o.queue ?? new BoundedQueue({ maxEvents: 10_000, maxBytes: 1 << 20, whenFull: 'block' });
  const n = o.events ?? 1;
  if (n > 0) queue.offer(events(n), n * 10, 'pause');
  const sink = new FakeSink(script, o.concurrency);
  const t = new FakeTelemetry();
  const runner = new SinkRunner({
    intake: 'i',
    queue,
    sink,
    // No linger: a batch is cut as soon as the runner asks, so no timer but the runner's own runs.
    batch: { maxEvents: o.maxEvents ?? 1_000, maxBytes: 1 << 20, lingerMs: 0 },
    backoff: { initialMs: INITIAL_MS, maxMs: 60_000 },
    maxRetries: o.maxRetries,
    telemetry: t,
    activity: { busy: () => activity.busy++, idle: () => activity.idle++ },
  });
  runners.push(runner);
  return { queue, sink, t, runner };
}

/** Lets the runner run for `ms` of fake time; 0: what it can do without time passing. */
const run = (ms = 0): Promise<unknown> => vi.advanceTimersByTimeAsync(ms);

/** The time from each send to the next. */
const gaps = (sink: FakeSink): number[] => sink.calls.slice(1).map((c, i) => c.at - sink.calls[i]!.at);

/** Written, not confirmed: the sink holds it. */
const SENT_AND_HELD: Script = (c, s) => {
  s.unacknowledged += c.batch.events.length;
  return SENT;
};

/** Closes `queue` and starts `runner`, then stops it: the stop's deadline, and what the stop returned (once it has). */
async function stopping(queue: BoundedQueue, runner: SinkRunner): Promise<{ deadline: AbortController; undelivered: () => number | undefined }> {
  queue.close();
  await runner.start();
  const deadline = new AbortController();
  let undelivered: number | undefined;
  void runner.stop(deadline.signal).then((n) => (undelivered = n));
  return { deadline, undelivered: () => undelivered };
}

/** A send answered when the test says. */
function held(): { promise: Promise<SendResult>; resolve: (r: SendResult) => void } {
  return Promise.withResolvers<SendResult>();
}

beforeEach(() => {
  vi.useFakeTimers();
  // Backoff without jitter: each delay is its cap, initial * 2^(n-1), so a test can name it.
  vi.spyOn(Math, 'random').mockReturnValue(1);
});

afterEach(async () => {
  // Runners a test left running stop taking batches and end their sleeps.
  await Promise.all(runners.splice(0).map((r) => r.detach()));
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe('SinkRunner: batches', () => {
  it('takes batches in order, a batch in reserve at most while the send is busy, and releases each one sent', async () => {
    const first = held();
    const { queue, sink, runner } = rig((c) => (c.n === 0 ? first.promise : SENT), { events: 5, maxEvents: 2 });
    await runner.start();
    await run();
    // One batch in the send, one taken for the next free slot; the rest waits in the queue.
    expect(sink.calls).toHaveLength(1);
    expect(queue.events).toBe(1);
    first.resolve(SENT);
    await run();
    expect(sink.calls.map((c) => [c.batch.seq, c.names])).toEqual([[0, ['e0', 'e1']], [2, ['e2', 'e3']], [4, ['e4']]]);
    // Released: the room is free again. Not settled: only the intake's acknowledgement says delivered.
    expect(queue.pendingEvents).toBe(0);
    expect(queue.settledBelow).toBe(0);
  });

  it('an acknowledgement settles the queue and is reported with its time; a connection is reported once', async () => {
    const { queue, sink, t, runner } = rig(
      (c, s) => {
        if (c.n === 0) s.events.connected();
        return acked(c, s);
      },
      { events: 5, maxEvents: 2 },
    );
    expect(runner.state).toBe('starting');
    await runner.start();
    await run();
    const now = Date.now();
    expect(sink.calls).toHaveLength(3);
    expect(queue.settledBelow).toBe(5);
    expect(t.args('acknowledged')).toEqual([[2, now], [2, now], [1, now]]);
    expect(t.args('batchEvents')).toEqual([[2], [2], [1]]);
    expect(runner.lastAckAt).toBe(now);
    expect(runner.state).toBe('connected');
    expect(t.last('connected')).toBe(true);
    expect(t.args('reconnected')).toHaveLength(1);
    expect(t.logged('Output connected.')).toHaveLength(1);
  });
});

describe('SinkRunner: a lull', () => {
  it('10 s after the last batch sent, once nothing is queued or unacknowledged, the sink lets go of what it keeps; once per lull, and no timer at rest', async () => {
    const { queue, sink, runner } = rig(SENT_AND_HELD, { events: 2, maxEvents: 1 });
    await runner.start();
    await run();
    expect(sink.calls).toHaveLength(2);
    await run(9_999);
    expect(sink.trims).toBe(0);
    // Ten seconds, but the intake has not confirmed yet: not a lull.
    await run(1);
    expect(sink.trims).toBe(0);
    const before = { ...activity };
    sink.unacknowledged = 0;
    await run(10_000);
    expect(sink.trims).toBe(1);
    // And the process's housekeeping is told the output is idle, once (busy once, since the first batch).
    expect(activity).toEqual({ busy: before.busy, idle: before.idle + 1 });
    // At rest: nothing runs, nothing more is trimmed.
    expect(vi.getTimerCount()).toBe(0);
    await run(60_000);
    expect(sink.trims).toBe(1);
    expect(activity).toEqual({ busy: before.busy, idle: before.idle + 1 });
    // The next burst, then the next lull.
    queue.offer(events(1), 10, 'pause');
    await run();
    expect(sink.calls).toHaveLength(3);
    sink.unacknowledged = 0;
    await run(5_000);
    queue.offer(events(1), 10, 'pause');
    await run();
    sink.unacknowledged = 0;
    // Counted from the last batch, not the first.
    await run(9_999);
    expect(sink.trims).toBe(1);
    expect(activity).toEqual({ busy: before.busy + 1, idle: before.idle + 1 });
    await run(1);
    expect(sink.trims).toBe(2);
    expect(activity).toEqual({ busy: before.busy + 1, idle: before.idle + 2 });
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('SinkRunner: a lull after a stop or a detach', () => {
  it.each(['stop', 'detach'] as const)('%s: the lull is over, the sink is not trimmed afterwards', async (end) => {
    const { queue, sink, runner } = rig(() => SENT, { events: 1 });
    await runner.start();
    await run();
    expect(sink.calls).toHaveLength(1);
    if (end === 'stop') {
      queue.close();
      const stopped = runner.stop(new AbortController().signal);
      await run();
      await stopped;
    } else {
      const detached = runner.detach();
      await run();
      await detached;
    }
    await run(20_000);
    expect(sink.trims).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    // Its end is a lull for the housekeeping: every busy is matched by an idle.
    expect(activity.busy).toBe(activity.idle);
  });
});

describe('SinkRunner: retries', () => {
  it('backs off more with each failure; only an acknowledgement resets the backoff, a send without one does not', async () => {
    const script: Script = (c, s) => {
      if (c.n === 3) return SENT; // written, never confirmed
      if (c.n === 5 || c.n === 7) return acked(c, s);
      return retryable();
    };
    const { sink, t, runner } = rig(script, { events: 3, maxEvents: 1 });
    await runner.start();
    await run(10_000);
    expect(sink.calls.map((c) => c.names[0])).toEqual(['e0', 'e0', 'e0', 'e0', 'e1', 'e1', 'e2', 'e2']);
    // e0: 100, 200, 400; e1 at once, then 800 (the unconfirmed send did not reset); e2 after the
    // acknowledgement: 100 again.
    expect(gaps(sink)).toEqual([100, 200, 400, 0, 800, 0, 100]);
    expect(t.args('retried')).toHaveLength(5);
    expect(t.args('error')).toEqual(Array.from({ length: 5 }, () => ['ERELAY_NETWORK']));
    expect(runner.lastError?.code).toBe('ERELAY_NETWORK');
    expect(t.logged('Delivery failed; retrying with backoff.')).toHaveLength(5);
  });

  it('waits what the intake asked (retryAfterMs) instead of the backoff', async () => {
    const { sink, runner } = rig((c, s) => (c.n === 0 ? retryable({ retryAfterMs: 5_000 }) : acked(c, s)));
    await runner.start();
    await run(4_999);
    expect(sink.calls).toHaveLength(1);
    expect(runner.state).toBe('retrying');
    await run(1);
    expect(gaps(sink)).toEqual([5_000]);
  });

  it('a Retry-After of 0 (or a date past) waits the first backoff step, never retries at once', async () => {
    const { sink, runner } = rig((c, s) => (c.n < 3 ? retryable({ retryAfterMs: 0, pauseAll: true }) : acked(c, s)));
    await runner.start();
    await run(1_000);
    expect(sink.calls).toHaveLength(4);
    expect(gaps(sink)).toEqual([INITIAL_MS, INITIAL_MS, INITIAL_MS]);
  });

  it.each([
    ['pauses the whole output: no send starts during the pause', true, 1_000],
    ['without pauseAll, only the failed batch waits', false, 0],
  ])('a retryable result with pauseAll %s', async (_what, pauseAll, e2StartsAt) => {
    const e1 = held();
    const script: Script = (c, s) => {
      if (c.n === 0) return retryable({ pauseAll, retryAfterMs: 1_000 }, 'ERELAY_HTTP_STATUS');
      if (c.n === 1) return e1.promise;
      return acked(c, s);
    };
    const { queue, sink, runner } = rig(script, { events: 3, maxEvents: 1, concurrency: { fixed: 2 } });
    const t0 = Date.now();
    await runner.start();
    await run();
    expect(sink.calls.map((c) => c.names[0])).toEqual(['e0', 'e1']);
    // e1 done: its slot is free for e2 at once, unless the whole output is paused.
    e1.resolve(SENT);
    await run(999);
    const before = sink.calls.filter((c) => c.at - t0 < 1_000).map((c) => c.names[0]);
    expect(before).toEqual(pauseAll ? ['e0', 'e1'] : ['e0', 'e1', 'e2']);
    await run(1);
    expect(sink.calls.find((c) => c.names[0] === 'e2')!.at - t0).toBe(e2StartsAt);
    expect(sink.calls.filter((c) => c.names[0] === 'e0').map((c) => c.at - t0)).toEqual([0, 1_000]);
    expect(queue.pendingEvents).toBe(0);
  });

  it('a pause made longer while a batch sleeps it out: the batch wakes, sees the new end, and sends nothing before it', async () => {
    // e0 is throttled at 0 (pause to 1,000); e1, in flight, is throttled at 500 (pause to 1,500).
    // e0 went to sleep until 1,000: it must look again, not send into the longer pause.
    const e1 = held();
    const script: Script = (c, s) => {
      if (c.n === 0) return retryable({ pauseAll: true, retryAfterMs: 1_000 }, 'ERELAY_HTTP_STATUS');
      if (c.n === 1) return e1.promise;
      return acked(c, s);
    };
    const { queue, sink, runner } = rig(script, { events: 2, maxEvents: 1, concurrency: { fixed: 2 } });
    const t0 = Date.now();
    await runner.start();
    await run(500);
    e1.resolve(retryable({ pauseAll: true, retryAfterMs: 1_000 }, 'ERELAY_HTTP_STATUS'));
    await run(999);
    expect(sink.calls.map((c) => [c.names[0], c.at - t0])).toEqual([['e0', 0], ['e1', 0]]);
    await run(1);
    expect(sink.calls.slice(2).map((c) => c.at - t0)).toEqual([1_500, 1_500]);
    expect(queue.pendingEvents).toBe(0);
  });

  it('a pause is measured on the monotonic clock: the wall clock stepped back an hour (NTP, a VM resumed) does not lengthen it', async () => {
    const { sink, runner } = rig((c, s) => (c.n === 0 ? retryable({ pauseAll: true, retryAfterMs: 1_000 }, 'ERELAY_HTTP_STATUS') : acked(c, s)));
    const t0 = performance.now();
    await runner.start();
    await run(500);
    vi.setSystemTime(Date.now() - 3_600_000);
    await run(500);
    expect(sink.calls.map((c) => c.names[0])).toEqual(['e0', 'e0']);
    expect(performance.now() - t0).toBe(1_000);
  });

  it('a refused key: state key_rejected (whatever the connection says) until a send succeeds, then connected', async () => {
    const script: Script = (c, s) => {
      if (c.n > 0) return acked(c, s);
      s.events.connected(); // the connection is up: the key is what is refused
      return retryable({ keyRejected: true, pauseAll: true, retryAfterMs: 30_000 }, 'ERELAY_KEY_REJECTED');
    };
    const { queue, sink, t, runner } = rig(script);
    await runner.start();
    await run();
    expect(runner.state).toBe('key_rejected');
    expect(runner.lastError?.code).toBe('ERELAY_KEY_REJECTED');
    expect(t.last('keyRejected')).toBe(true);
    expect(t.last('connected')).toBe(false);
    expect(t.logged('The intake refuses the key of this intake')).toHaveLength(1);
    await run(29_999);
    expect(sink.calls).toHaveLength(1);
    expect(runner.state).toBe('key_rejected');
    await run(1);
    expect(sink.calls).toHaveLength(2);
    expect(runner.state).toBe('connected');
    expect(t.args('keyRejected')).toEqual([[false], [true], [false]]);
    expect(t.logged('The intake accepts the key again.')).toHaveLength(1);
    expect(queue.settledBelow).toBe(1);
  });

  it('a retry after an unknown outcome counts the batch as resent (a possible duplicate); a plain retry does not', async () => {
    const script: Script = (c, s) => {
      if (c.n === 0) return retryable();
      if (c.n === 1) return retryable({ unknownOutcome: true }, 'ERELAY_HTTP_TIMEOUT');
      return acked(c, s);
    };
    const { sink, t, runner } = rig(script, { events: 3 });
    await runner.start();
    await run(1_000);
    expect(sink.calls).toHaveLength(3);
    expect(t.args('resent')).toEqual([[3]]);
  });

  it('max_retries: after the first attempt and that many retries, the batch is dropped as retries_exhausted', async () => {
    const { queue, sink, t, runner } = rig(() => retryable(), { events: 2, maxRetries: 2 });
    await runner.start();
    await run(60_000);
    expect(sink.calls).toHaveLength(3);
    expect(gaps(sink)).toEqual([100, 200]);
    expect(t.args('retried')).toHaveLength(2);
    expect(t.args('dropped')).toEqual([['retries_exhausted', 2]]);
    // Dropped with a counted reason is settled: the queue does not wait for it.
    expect(queue.settledBelow).toBe(2);
    expect(queue.pendingEvents).toBe(0);
  });

  it('max_retries: a send cut short by a detach (a reload) is no attempt: the batch goes back to the queue, not dropped', async () => {
    const { queue, sink, t, runner } = rig((c) => new Promise<SendResult>((resolve) => c.signal.addEventListener('abort', () => resolve(retryable()))), { events: 3, maxRetries: 0 });
    await runner.start();
    await run();
    expect(sink.calls).toHaveLength(1);
    await runner.detach();
    expect(t.args('dropped')).toEqual([]);
    expect(t.args('retried')).toEqual([]);
    expect(t.args('error')).toEqual([]);
    expect(queue.settledBelow).toBe(0);
    expect(queue.pendingEvents).toBe(3);
    // The next runner sends them.
    const next = rig(acked, { queue, events: 0 });
    await next.runner.start();
    await run();
    expect(next.sink.calls.flatMap((c) => c.names)).toEqual(['e0', 'e1', 'e2']);
  });
});

describe('SinkRunner: refusals', () => {
  it('permanent with bisect: splits down to the refused events; only those are dropped, with the reason', async () => {
    const refused = new Set(['e2', 'e5']);
    const { queue, sink, t, runner } = rig((c, s) => (c.names.some((n) => refused.has(n)) ? permanent('rejected', true) : acked(c, s)), { events: 8 });
    await runner.start();
    await run();
    expect(sink.calls.map((c) => c.names.join(','))).toEqual([
      'e0,e1,e2,e3,e4,e5,e6,e7',
      'e0,e1,e2,e3', 'e0,e1', 'e2,e3', 'e2', 'e3',
      'e4,e5,e6,e7', 'e4,e5', 'e4', 'e5', 'e6,e7',
    ]);
    expect(t.args('dropped')).toEqual([['rejected', 1], ['rejected', 1]]);
    expect(t.logged('Events dropped').map((l) => [l.reason, l.events])).toEqual([['rejected', 1], ['rejected', 1]]);
    // Every event settled (acknowledged or dropped), under its own number.
    expect(queue.settledBelow).toBe(8);
    expect(queue.pendingEvents).toBe(0);
  });

  it('permanent without bisect: the whole batch is dropped with the reason, once', async () => {
    const { queue, sink, t, runner } = rig(() => permanent('too_large', false), { events: 3 });
    await runner.start();
    await run(10_000);
    expect(sink.calls).toHaveLength(1);
    expect(t.args('dropped')).toEqual([['too_large', 3]]);
    expect(t.args('error')).toEqual([['ERELAY_HTTP_STATUS']]);
    expect(t.args('retried')).toEqual([]);
    expect(t.logged('Events dropped')).toMatchObject([{ reason: 'too_large', events: 3 }]);
    expect(queue.settledBelow).toBe(3);
    expect(queue.pendingEvents).toBe(0);
  });
});

describe('SinkRunner: a lost connection', () => {
  it.each([
    ['with unconfirmed events: counted as resent, and the empty send that writes them again waits its backoff', 2, INITIAL_MS],
    ['with nothing unconfirmed: the connection is opened again after the backoff too (no tight loop with an intake that drops every connection)', 0, INITIAL_MS],
  ])('%s', async (_what, unconfirmed, wait) => {
    const script: Script = (c, s) => {
      // The first batch is written, not confirmed; the empty send rewrites it, and it is confirmed.
      if (c.batch.events.length === 0) s.ack(s.calls[0]!.batch);
      return SENT;
    };
    const { queue, sink, t, runner } = rig(script, { events: 2 });
    await runner.start();
    await run();
    expect(sink.calls).toHaveLength(1);
    const lostAt = Date.now();
    sink.events.connectionLost(new RelayError('ERELAY_CONNECTION_LOST', 'Scripted loss.'), unconfirmed);
    expect(runner.state).toBe('retrying');
    expect(t.last('connected')).toBe(false);
    expect(t.args('error')).toEqual([['ERELAY_CONNECTION_LOST']]);
    expect(t.args('resent')).toEqual(unconfirmed > 0 ? [[unconfirmed]] : []);
    if (wait > 0) {
      await run(wait - 1);
      expect(sink.calls).toHaveLength(1);
    }
    await run(1);
    expect(sink.calls).toHaveLength(2);
    expect(sink.calls[1]!.batch.events).toHaveLength(0);
    expect(sink.calls[1]!.at - lostAt).toBe(wait);
    expect(queue.settledBelow).toBe(2);
    expect(queue.pendingEvents).toBe(0);
  });
});

describe('SinkRunner: suspensions (the forwarder statistics)', () => {
  it('one suspension per outage, its time counted as it passes, one resumption when it delivers again', async () => {
    const { t, runner } = rig((c, s) => (c.n < 3 || (c.n >= 5 && c.n < 7) ? retryable() : acked(c, s)), { events: 10, maxEvents: 1 });
    await runner.start();
    await run(20_000);
    expect(t.args('suspended')).toHaveLength(2);
    expect(t.args('resumed')).toHaveLength(2);
    const seconds = t.args('suspendedFor').reduce((n, [s]) => n + (s as number), 0);
    expect(seconds).toBeGreaterThan(0);
    expect(seconds).toBeLessThan(20);
  });
  it('the wall clock stepped back during an outage: the time counted stays what passed (a counter cannot go down; it threw)', async () => {
    const { t, runner } = rig((c, s) => (c.n < 3 ? retryable() : acked(c, s)));
    await runner.start();
    await run(INITIAL_MS + 50);
    vi.setSystemTime(Date.now() - 3_600_000);
    await run(10_000);
    expect(t.args('resumed')).toHaveLength(1);
    const counted = t.args('suspendedFor').map(([s]) => s as number);
    expect(counted.every((s) => s >= 0)).toBe(true);
    // backoff 100 + 200 + 400 ms from the first failure to the success.
    expect(counted.reduce((a, b) => a + b, 0)).toBeCloseTo(0.7, 5);
  });
});

describe('SinkRunner: adaptive concurrency', () => {
  it('grows the number of sends in flight, one at a time, while sends are fast and the limit holds them back', async () => {
    const script: Script = (c, s) => new Promise((resolve) => setTimeout(() => resolve(acked(c, s)), 10));
    const { queue, sink, t, runner } = rig(script, { events: 60, maxEvents: 1, concurrency: { adaptive: { min: 1, max: 4 } } });
    await runner.start();
    await run(2_000);
    expect(queue.settledBelow).toBe(60);
    expect(t.args('concurrency')).toEqual([[1], [2], [3], [4]]);
    expect(sink.maxInFlight).toBe(4);
  });
});

describe('SinkRunner: stop and detach', () => {
  it('stop() drains a closed queue into the sink, then stops the sink; nothing undelivered', async () => {
    const { queue, sink, t, runner } = rig(acked, { events: 5, maxEvents: 2 });
    queue.close();
    await runner.start();
    expect(await runner.stop(new AbortController().signal)).toBe(0);
    expect(sink.calls.flatMap((c) => c.names)).toEqual(['e0', 'e1', 'e2', 'e3', 'e4']);
    expect(queue.settledBelow).toBe(5);
    expect(sink.stops).toHaveLength(1);
    expect(runner.state).toBe('stopped');
    expect(t.last('connected')).toBe(false);
  });

  it('stop() keeps retrying until the deadline, then returns what was not delivered: queued plus unconfirmed by the sink', async () => {
    const { queue, sink, runner } = rig(() => retryable(), { events: 5 });
    sink.unconfirmedAtStop = 2;
    const { deadline, undelivered } = await stopping(queue, runner);
    await run(10_000);
    expect(undelivered()).toBeUndefined();
    expect(sink.calls.length).toBeGreaterThan(3);
    deadline.abort();
    await run();
    expect(undelivered()).toBe(7);
    expect(sink.stops).toEqual([deadline.signal]);
    expect(queue.pendingEvents).toBe(5);
  });

  it('stop(): a connection lost while the sink waits for the intake to confirm is opened again after the backoff, its window written again and confirmed; nothing undelivered', async () => {
    const stopped = Promise.withResolvers<number>();
    const script: Script = (c, s) => {
      if (c.batch.events.length > 0) {
        s.unacknowledged += c.batch.events.length; // written, not confirmed
        return SENT;
      }
      // The empty send writes the window again on a new connection; the intake confirms it, and the sink's stop ends.
      s.ack(s.calls[0]!.batch);
      s.unacknowledged = 0;
      stopped.resolve(0);
      return SENT;
    };
    const { queue, sink, t, runner } = rig(script, { events: 3 });
    sink.stop = async (deadline) => {
      sink.stops.push(deadline);
      return stopped.promise;
    };
    const { undelivered } = await stopping(queue, runner);
    await run();
    // The queue is empty: the sink is stopping, waiting for the intake's answer to its close.
    expect(sink.calls).toHaveLength(1);
    expect(sink.stops).toHaveLength(1);
    const lostAt = Date.now();
    sink.events.connectionLost(new RelayError('ERELAY_CONNECTION_LOST', 'Scripted loss.'), 3);
    await run(INITIAL_MS - 1);
    expect(sink.calls).toHaveLength(1);
    await run(1);
    expect(sink.calls).toHaveLength(2);
    expect(sink.calls[1]!.batch.events).toHaveLength(0);
    expect(sink.calls[1]!.at - lostAt).toBe(INITIAL_MS);
    await run();
    expect(undelivered()).toBe(0);
    expect(queue.settledBelow).toBe(3);
    expect(t.args('acknowledged')).toEqual([[3, Date.now()]]);
    expect(t.args('resent')).toEqual([[3]]);
    expect(t.args('dropped')).toEqual([]);
    expect(runner.state).toBe('stopped');
    expect(t.last('connected')).toBe(false);
  });

  it('stop(): a window lost during the stop is tried again with the usual backoff until the deadline, not after; what the sink did not confirm is returned, counted nowhere else', async () => {
    const script: Script = (c, s) => {
      if (c.batch.events.length === 0) return retryable({}, 'ERELAY_CONNECT_REFUSED'); // the intake is gone
      s.unacknowledged += c.batch.events.length;
      return SENT;
    };
    const { queue, sink, t, runner } = rig(script, { events: 3 });
    sink.stop = (deadline) => {
      sink.stops.push(deadline);
      return new Promise((resolve) => deadline.addEventListener('abort', () => resolve(sink.unacknowledged), { once: true }));
    };
    const { deadline, undelivered } = await stopping(queue, runner);
    await run();
    const lostAt = Date.now();
    sink.events.connectionLost(new RelayError('ERELAY_CONNECTION_LOST', 'Scripted loss.'), 3);
    await run(1_000);
    // Empty sends after 100 ms (the loss's backoff), then 200 and 400 ms more (each failure's).
    expect(sink.calls.slice(1).map((c) => [c.names.length, c.at - lostAt])).toEqual([[0, 100], [0, 300], [0, 700]]);
    expect(undelivered()).toBeUndefined();
    deadline.abort();
    await run();
    expect(undelivered()).toBe(3);
    expect(sink.calls.at(-1)!.signal.aborted).toBe(true);
    await run(60_000);
    expect(sink.calls).toHaveLength(4);
    expect(queue.settledBelow).toBe(0);
    expect(queue.pendingEvents).toBe(0);
    expect(t.args('dropped')).toEqual([]); // the caller counts what stop() returns
    expect(runner.state).toBe('stopped');
  });

  it('detach(): a loss the sink reports afterwards (stopping in the background) is not the runner\'s: nothing sent, counted or changed', async () => {
    const { queue, sink, t, runner } = rig(SENT_AND_HELD, { events: 2 });
    await runner.start();
    await run();
    await runner.detach();
    const before = t.calls.length;
    sink.events.connectionLost(new RelayError('ERELAY_CONNECTION_LOST', 'Scripted loss.'), 2);
    await run(10_000);
    expect(sink.calls).toHaveLength(1);
    expect(t.calls.slice(before)).toEqual([]);
    expect(runner.state).toBe('stopped');
    expect(queue.pendingEvents).toBe(0);
  });

  it('detach() leaves the queue open with the unsent batches back in order; what was sent is not sent again', async () => {
    const [e0, e1] = [held(), held()];
    const script: Script = (c) => {
      if (c.n === 0) return e0.promise;
      if (c.n === 1) return e1.promise;
      return retryable(); // e2: waits its backoff; e3 waits for a slot
    };
    const { queue, sink, runner } = rig(script, { events: 5, maxEvents: 1, concurrency: { fixed: 3 } });
    await runner.start();
    await run();
    expect(sink.calls.map((c) => c.names[0])).toEqual(['e0', 'e1', 'e2']);
    const detached = runner.detach();
    await run();
    // The sends in flight end after the batches behind them: e1 fails, e0 is written and confirmed.
    e1.resolve(retryable());
    sink.ack(sink.calls[0]!.batch);
    e0.resolve(SENT);
    await detached;
    expect(runner.state).toBe('stopped');
    expect(sink.stops).toEqual([]); // the sink is the caller's (handed over, or stopped)
    expect(queue.closed).toBe(false);
    expect(queue.pendingEvents).toBe(4);

    // The next runner takes over the same queue: e1 … e4, in order, and not e0 again.
    const next = rig(acked, { queue, events: 0 });
    await next.runner.start();
    await run();
    expect(next.sink.calls.flatMap((c) => c.names)).toEqual(['e1', 'e2', 'e3', 'e4']);
    expect(queue.settledBelow).toBe(5);
  });
});
