// The memory guard alone, with fake time and a scripted RssAnon: it collects at 90% of
// memory_bytes while busy, gives the C library's memory back a moment later, keeps its collections
// apart (further after one that freed little), and reads RssAnon as /proc writes it.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { COLLECT_WAIT_MS, MemoryGuard, MIN_GAP_MS, PRESSURE, SAMPLE_MS, SLOW_GAP_MS, statusReader, TRIM_DELAY_MS, rssAnon } from '../../src/runtime/memory-guard.ts';

const MiB = 1024 * 1024;
const BUDGET = 100 * MiB;

/** Every guard a test made: stopped after it, whatever it asserted. */
const guards: MemoryGuard[] = [];

function rig(o: { busy?: boolean; freed?: number; workers?: () => Promise<unknown> } = {}) {
  let anon = 50 * MiB;
  let busy = o.busy ?? true;
  const log: string[] = [];
  const guard = new MemoryGuard({
    budgetBytes: () => BUDGET,
    busy: () => busy,
    anon: () => anon,
    collect: () => {
      log.push(`collect ${Date.now()}`);
      return o.workers?.();
    },
    trim: () => {
      log.push(`trim ${Date.now()}`);
      anon -= o.freed ?? 30 * MiB;
    },
    collected: (before, after) => log.push(`${before / MiB} -> ${after / MiB}`),
  });
  guards.push(guard);
  return { guard, log, set: (mib: number) => (anon = mib * MiB), idle: () => (busy = false) };
}

// Date for the log's times, performance for the guard's own clock.
beforeEach(() => vi.useFakeTimers({ now: 0, toFake: ['Date', 'performance', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] }));
afterEach(() => {
  for (const g of guards.splice(0)) g.stop();
  vi.useRealTimers();
});

describe('MemoryGuard', () => {
  it('below 90% of memory_bytes, or with nothing busy, it collects nothing', async () => {
    const r = rig();
    expect(r.guard.start()).toBe(true);
    r.set(PRESSURE * 100 - 1);
    await vi.advanceTimersByTimeAsync(10 * SAMPLE_MS);
    r.set(95);
    r.idle();
    await vi.advanceTimersByTimeAsync(10 * SAMPLE_MS);
    expect(r.log).toEqual([]);
  });

  it('at the mark: collects, trims TRIM_DELAY_MS later, and not again within MIN_GAP_MS', async () => {
    const r = rig();
    r.guard.start();
    r.set(92);
    await vi.advanceTimersByTimeAsync(SAMPLE_MS);
    expect(r.log).toEqual([`collect ${SAMPLE_MS}`]);
    await vi.advanceTimersByTimeAsync(TRIM_DELAY_MS);
    expect(r.log.slice(1)).toEqual([`trim ${SAMPLE_MS + TRIM_DELAY_MS}`, '92 -> 62']);
    // Above the mark again at once: the next collection waits for the gap.
    r.set(95);
    await vi.advanceTimersByTimeAsync(MIN_GAP_MS - SAMPLE_MS);
    expect(r.log.filter((l) => l.startsWith('collect'))).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(SAMPLE_MS);
    expect(r.log.filter((l) => l.startsWith('collect'))).toEqual([`collect ${SAMPLE_MS}`, `collect ${SAMPLE_MS + MIN_GAP_MS}`]);
  });

  it('a collection that freed little (what is live is near the mark) makes the next one wait SLOW_GAP_MS', async () => {
    const r = rig({ freed: 1 * MiB });
    r.guard.start();
    r.set(95);
    await vi.advanceTimersByTimeAsync(SLOW_GAP_MS + SAMPLE_MS);
    r.set(95);
    await vi.advanceTimersByTimeAsync(SLOW_GAP_MS - SAMPLE_MS);
    // Not at MIN_GAP_MS: at SLOW_GAP_MS, and again SLOW_GAP_MS later while each frees little.
    const at = r.log.filter((l) => l.startsWith('collect')).map((l) => Number(l.split(' ')[1]));
    expect(at).toEqual([SAMPLE_MS, SAMPLE_MS + SLOW_GAP_MS]);
  });

  it('with workers: trims once every worker has collected, or COLLECT_WAIT_MS after asking at most', async () => {
    let answered: (() => void) | undefined;
    const r = rig({ workers: () => new Promise<void>((resolve) => (answered = resolve)) });
    r.guard.start();
    r.set(95);
    await vi.advanceTimersByTimeAsync(SAMPLE_MS + 100);
    expect(r.log).toEqual([`collect ${SAMPLE_MS}`]);
    answered?.();
    await vi.advanceTimersByTimeAsync(TRIM_DELAY_MS);
    expect(r.log[1]).toBe(`trim ${SAMPLE_MS + 100 + TRIM_DELAY_MS}`);
    // A worker that never answers: the trim comes at the cap, once.
    const late = rig({ workers: () => new Promise<void>(() => {}) });
    late.guard.start();
    late.set(95);
    const t0 = Date.now();
    await vi.advanceTimersByTimeAsync(SAMPLE_MS + COLLECT_WAIT_MS + TRIM_DELAY_MS + 10);
    expect(late.log.filter((l) => l.startsWith('trim'))).toEqual([`trim ${t0 + SAMPLE_MS + COLLECT_WAIT_MS + TRIM_DELAY_MS}`]);
  });

  it('the gap is measured on the monotonic clock: a wall clock stepped back an hour does not hold the next collection', async () => {
    const r = rig();
    r.guard.start();
    r.set(95);
    await vi.advanceTimersByTimeAsync(SAMPLE_MS + TRIM_DELAY_MS);
    vi.setSystemTime(Date.now() - 3_600_000);
    r.set(95);
    await vi.advanceTimersByTimeAsync(MIN_GAP_MS);
    expect(r.log.filter((l) => l.startsWith('collect'))).toHaveLength(2);
  });

  it('stop() ends the watch and a pending trim', async () => {
    const r = rig();
    r.guard.start();
    r.set(95);
    await vi.advanceTimersByTimeAsync(SAMPLE_MS);
    r.guard.stop();
    await vi.advanceTimersByTimeAsync(10 * SAMPLE_MS);
    expect(r.log).toEqual([`collect ${SAMPLE_MS}`]);
  });

  it('where RssAnon cannot be read, it does not start', () => {
    const guard = new MemoryGuard({ budgetBytes: () => BUDGET, busy: () => true, anon: () => undefined, collect: () => {}, trim: () => {} });
    expect(guard.start()).toBe(false);
  });
});

describe('RssAnon', () => {
  it('is read from a status file as the kernel writes it, again at each call; a file without it, or none, is undefined', () => {
    const dir = mkdtempSync(join(tmpdir(), 'status-'));
    const file = join(dir, 'status');
    writeFileSync(file, 'Name:\tnode\nVmRSS:\t  130000 kB\nRssAnon:\t   81234 kB\nRssFile:\t   48000 kB\n');
    const read = statusReader(file);
    expect(read()).toBe(81234 * 1024);
    writeFileSync(file, 'Name:\tnode\nRssAnon:\t7 kB\n');
    expect(read()).toBe(7 * 1024);
    writeFileSync(file, 'Name:\tnode\n');
    expect(read()).toBeUndefined();
    expect(statusReader(join(dir, 'none'))()).toBeUndefined();
  });

  it.runIf(process.platform === 'linux')("this process's is what /proc/self/status says", async () => {
    const { readFileSync } = await import('node:fs');
    const kb = Number(/RssAnon:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'latin1'))?.[1]);
    const read = rssAnon()();
    expect(read).toBeGreaterThan(0);
    // The same figure within what the process allocates between two reads.
    expect(Math.abs((read as number) / 1024 - kb)).toBeLessThan(8 * 1024);
  });
});
