// The process's housekeeping (src/runtime/housekeeping.ts): each thread collects its V8 heap once
// its outputs are idle (once per lull) and once shortly after its start; the main thread gives the
// C library's free memory back once every output of the process is idle, once per lull, never at
// the start. And every launcher gives Node the flags it needs (--expose-gc for the collection).
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Housekeeping, START_COLLECT_MS } from '../../src/runtime/housekeeping.ts';
import { memoryReducingGc } from '../../src/platform/v8-gc.ts';

describe('housekeeping', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  function rig(others: (() => boolean) | undefined) {
    const calls: string[] = [];
    const h = new Housekeeping(others, () => calls.push('trim'), () => calls.push('collect'));
    return { h, calls };
  }

  it('after the start: the heap is collected once, if the outputs are idle then; nothing is trimmed', () => {
    const { h, calls } = rig(() => true);
    h.started();
    vi.advanceTimersByTime(START_COLLECT_MS - 1);
    expect(calls).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(calls).toEqual(['collect']);
    // A worker's report (idle) later: nothing more until a burst.
    h.check();
    expect(calls).toEqual(['collect']);
  });

  it('nothing is collected before the start is over (a worker reporting idle while the others start), nor after a stop', () => {
    const { h, calls } = rig(() => true);
    h.check();
    expect(calls).toEqual([]);
    h.started();
    h.stop();
    vi.advanceTimersByTime(START_COLLECT_MS);
    expect(calls).toEqual([]);
  });

  it('an output busy at that moment: collected at its lull instead, then trimmed; once per lull', () => {
    let othersIdle = false;
    const { h, calls } = rig(() => othersIdle);
    const a = h.activity();
    h.started();
    a.busy();
    vi.advanceTimersByTime(START_COLLECT_MS);
    expect(calls).toEqual([]);
    a.idle();
    // The workers were busy: this thread's heap is collected, the process not trimmed yet.
    expect(calls).toEqual(['collect']);
    othersIdle = true;
    h.check();
    h.check();
    expect(calls).toEqual(['collect', 'trim']);
    // The next burst, and its lull: both again, once.
    a.busy();
    a.idle();
    h.check();
    expect(calls).toEqual(['collect', 'trim', 'collect', 'trim']);
  });

  it('in a worker: its own heap is collected at each lull, the process is never trimmed there', () => {
    const { h, calls } = rig(undefined);
    h.started();
    const a = h.activity();
    a.busy();
    a.idle();
    a.busy();
    a.idle();
    expect(calls).toEqual(['collect', 'collect']);
  });

  it('the collection is V8\'s own where Node has --expose-gc, none without', () => {
    const had = (globalThis as { gc?: unknown }).gc;
    try {
      (globalThis as { gc?: unknown }).gc = undefined;
      expect(memoryReducingGc()).toBeUndefined();
      const seen: unknown[] = [];
      (globalThis as { gc?: unknown }).gc = (o: unknown) => seen.push(o);
      memoryReducingGc()?.();
      expect(seen).toEqual([{ type: 'major', execution: 'sync', flavor: 'last-resort' }]);
    } finally {
      (globalThis as { gc?: unknown }).gc = had;
    }
  });

  it('every launcher gives Node the same flags: npm start, the intake-relay command, the single executable, the benchmark', () => {
    const root = new URL('../../', import.meta.url);
    const read = (f: string): string => readFileSync(new URL(f, root), 'utf8');
    const flags = (s: string): string[] => s.match(/--[a-z-]+(=\S+?)?(?=[\s'",\]]|$)/g) ?? [];
    const start = flags((JSON.parse(read('package.json')) as { scripts: { start: string } }).scripts.start.split(' dist/')[0] as string);
    expect(start).toEqual(['--max-semi-space-size=2', '--heap-growing-percent=50', '--expose-gc', '--no-allocation-site-pretenuring']);
    expect(flags(read('bin/intake-relay.js').split('\n')[0] as string)).toEqual(start);
    // The executable adds one of its own (scripts/package.ts says why).
    expect(flags(/const EXEC_ARGV = \[([^\]]*)\]/.exec(read('scripts/package.ts'))?.[1] ?? '')).toEqual([...start, '--invocation-count-for-maglev=1500']);
    expect(flags(/process\.execPath, \[([^\]]*)\]/.exec(read('bench/run.ts'))?.[1] ?? '')).toEqual(start);
  });
});
