// The disk queue's own state while it runs: the settled watermark (what a restart resends from)
// and the fsynced position (what file checkpoints and power loss rely on) must keep moving, also
// after ticks that found nothing to do; and a log that lost its end (power cut, damaged tail) behind
// the saved watermark never numbers new events below it.
import { cpSync, mkdtempSync, readdirSync, readFileSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { DiskQueue } from '../../src/core/disk-queue.ts';
import { recordSize } from '../../src/core/event-codec.ts';
import { SingleFlight } from '../../src/core/single-flight.ts';
import { headerlessEvent } from '../../src/syslog/parse.ts';
import { event } from '../helpers/fake-output.ts';

const D = { pri: 13, hostname: 'h', appName: 'a', procId: '-' };
const events = (n: number) => {
  const buf = Buffer.from('x'.repeat(10 * n));
  return Array.from({ length: n }, (_, i) => headerlessEvent(buf, i * 10, i * 10 + 10, Date.now(), '', D));
};
const hooks = { onError: () => {}, onLost: () => {}, onWrite: () => {}, onSync: () => {} };

function queue(dir: string): DiskQueue {
  return new DiskQueue({ dir, maxBytes: 1 << 24, whenFull: 'block', memoryEvents: 100, memoryBytes: 1 << 20, segmentBytes: 1 << 16, fsyncIntervalMs: 20 }, hooks);
}

describe('disk queue state', () => {
  it('saves the settled watermark while running, also after idle ticks (what a kill -9 resends from)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dq-state-'));
    const q = queue(dir);
    await new Promise((r) => setTimeout(r, 150)); // several ticks with nothing settled
    for (let round = 1; round <= 3; round++) {
      expect(q.offer(events(10), 100, 'pause').result).toBe('ok');
      const b = await q.take({ maxEvents: 100, maxBytes: 1 << 20, lingerMs: 0 }, AbortSignal.timeout(1_000));
      q.release(b!);
      q.settle(b!.seq, b!.events.length);
      await vi.waitFor(() => expect(JSON.parse(readFileSync(join(dir, 'settled.json'), 'utf8'))).toEqual({ settled_below: round * 10 }));
    }
    q.close();
    await q.finish();
    // A restart resends nothing.
    const again = queue(dir);
    expect(again.recovered).toBe(0);
    again.close();
    await again.finish();
  });

  it('fsyncs appended events while running, also after idle ticks', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dq-state-'));
    const q = queue(dir);
    await new Promise((r) => setTimeout(r, 150));
    q.offer(events(10), 100, 'pause');
    await vi.waitFor(() => expect(q.safeBelow).toBe(10));
    q.offer(events(5), 50, 'pause');
    await vi.waitFor(() => expect(q.safeBelow).toBe(15));
    q.close();
    await q.finish();
  });
});

describe('disk queue reopened on a log that lost its end behind the saved settled watermark', () => {
  const named = (tag: string, n: number) => Array.from({ length: n }, (_, i) => event(`${tag}${String(i).padStart(3, '0')}`));
  const take = (q: DiskQueue) => q.take({ maxEvents: 1_000, maxBytes: 1 << 20, lingerMs: 0 }, AbortSignal.timeout(1_000));

  /** A queue whose 20 events were delivered and settled (settled.json: 20), then its segment cut back to 10 records. */
  async function cutBehindSettled(dir: string): Promise<void> {
    const q = queue(dir);
    const old = named('old', 20);
    q.offer(old, 200, 'pause');
    const b = await take(q);
    q.release(b!);
    q.settle(b!.seq, b!.events.length);
    q.close();
    await q.finish();
    expect(JSON.parse(readFileSync(join(dir, 'settled.json'), 'utf8'))).toEqual({ settled_below: 20 });
    // The last 10 records were written but never reached the disk (power cut), or were set aside as damaged.
    truncateSync(join(dir, readdirSync(dir).find((f) => f.endsWith('.seg'))!), recordSize(old[0]!) * 10);
  }

  it('new events count as not settled, and every one of them is recovered after a stop and after a crash', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dq-state-'));
    await cutBehindSettled(dir);
    const q = queue(dir);
    expect(q.recovered).toBe(0);
    const first = q.nextSeq;
    expect(first).toBeGreaterThanOrEqual(q.settledBelow);
    // The output is down: nothing is delivered.
    expect(q.offer(named('new', 15), 150, 'pause').result).toBe('ok');
    expect(q.nextSeq).toBe(first + 15);
    expect(q.diskEvents).toBe(15);
    expect(q.pendingEvents).toBe(15);
    // What HTTP and RELP answers wait for: not settled, so not answered early.
    let settled = false;
    void q.untilSettled(first + 1).then(() => (settled = true));
    await vi.waitFor(() => expect(q.safeBelow).toBe(first + 15));
    expect(settled).toBe(false);
    // A crash now (no stop, settled.json as it is on disk): a copy of the directory as the next start would find it.
    const crashed = mkdtempSync(join(tmpdir(), 'dq-state-'));
    cpSync(dir, crashed, { recursive: true });
    q.close();
    await q.finish();
    for (const d of [dir, crashed]) {
      const again = queue(d);
      expect(again.recovered).toBe(15);
      const b = await take(again);
      expect(b!.events.map((e) => e.hostname)).toEqual(named('new', 15).map((e) => e.hostname));
      again.close();
      await again.finish();
    }
  });
});

describe('SingleFlight', () => {
  it('a task that finishes at once never blocks later runs', async () => {
    const f = new SingleFlight();
    let runs = 0;
    await f.run(() => {
      runs++;
    });
    await f.run(() => {
      runs++;
    });
    expect(runs).toBe(2);
  });

  it('joins a run in flight; runFresh starts one after it', async () => {
    const f = new SingleFlight();
    const seen: number[] = [];
    let state = 1;
    let release: (() => void) | undefined;
    const a = f.run(async () => {
      const s = state;
      await new Promise<void>((r) => (release = r));
      seen.push(s);
    });
    await vi.waitFor(() => expect(release).toBeDefined());
    const b = f.run(() => {
      seen.push(-1);
    });
    state = 2;
    const c = f.runFresh(() => {
      seen.push(state);
    });
    release!();
    await Promise.all([a, b, c]);
    expect(seen).toEqual([1, 2]);
  });
});
