// The native addon's memory calls (native/process.c, src/platform/native-addon.ts): trimMemory gives
// back what a burst freed inside the C library's heaps, as the relay asks once every output is
// idle; mallocThresholds keeps glibc from raising its thresholds as large blocks are freed, as
// `run` sets first thing (tuneMalloc). Measured in processes of their own.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MALLOC_MAP_BYTES, MALLOC_TRIM_BYTES, nativeAddon, releaseFreeMemory, tuneMalloc } from '../../src/platform/native-addon.ts';

const ADDON = fileURLToPath(new URL('../../native/build/relay.node', import.meta.url));

describe('native addon: trimMemory', () => {
  it('is there (glibc), and gives back memory freed below the top of the heap', () => {
    expect(nativeAddon().reason).toBe('loaded');
    expect(releaseFreeMemory()).toBe(true);
    // 2,000 buffers of 64 KiB (malloc'd from the heap, under the mmap threshold), nine in ten of
    // them freed at once (detached) while every tenth stays: holes free() never gives back.
    const script = `
      const m = { exports: {} };
      process.dlopen(m, ${JSON.stringify(ADDON)});
      const rss = () => Number(/VmRSS:\\s+(\\d+)/.exec(require('node:fs').readFileSync('/proc/self/status', 'latin1'))[1]) / 1024;
      const bufs = Array.from({ length: 2000 }, () => Buffer.allocUnsafeSlow(65536).fill(7));
      const kept = bufs.filter((_, i) => i % 10 === 9);
      bufs.forEach((b, i) => { if (i % 10 !== 9) b.buffer.transfer(0); });
      const before = rss();
      const trimmed = m.exports.trimMemory();
      console.log(JSON.stringify({ before, after: rss(), trimmed, kept: kept.every((b) => b[65535] === 7) }));
    `;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    const { before, after, trimmed, kept } = JSON.parse(r.stdout) as { before: number; after: number; trimmed: boolean; kept: boolean };
    expect(trimmed).toBe(true);
    expect(kept).toBe(true);
    // 1,800 × 64 KiB = 112.5 MiB freed; at least 80 of it given back.
    expect(before - after).toBeGreaterThan(80);
  });
});

describe('native addon: the thresholds fixed for a daemon (tuneMalloc)', () => {
  // A 4 MiB block freed, then twenty of 1.5 MiB taken and all but the last freed: anonymous memory
  // kept, in MiB. Untouched, glibc raises its mapping threshold to 4 MiB at the first free, so the
  // 1.5 MiB blocks come from the heap, below the last one: holes it keeps.
  const kept = (tune: boolean): number => {
    const script = `
      const m = { exports: {} };
      process.dlopen(m, ${JSON.stringify(ADDON)});
      if (${tune}) m.exports.mallocThresholds(${MALLOC_MAP_BYTES}, ${MALLOC_TRIM_BYTES});
      const anon = () => Number(/RssAnon:\\s+(\\d+)/.exec(require('node:fs').readFileSync('/proc/self/status', 'latin1'))[1]) / 1024;
      Buffer.allocUnsafeSlow(4 << 20).fill(1).buffer.transfer(0);
      const before = anon();
      const bufs = Array.from({ length: 20 }, () => Buffer.allocUnsafeSlow(1536 << 10).fill(7));
      bufs.slice(0, -1).forEach((b) => b.buffer.transfer(0));
      console.log(JSON.stringify({ kept: anon() - before, last: bufs.at(-1)[(1536 << 10) - 1] }));
    `;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { kept: number; last: number };
    expect(out.last).toBe(7);
    return out.kept;
  };

  it('fixes the thresholds: large blocks freed are given back, not kept as holes', () => {
    expect(kept(false)).toBeGreaterThan(20);
    expect(kept(true)).toBeLessThan(6);
  });

  it('leaves thresholds the environment gave glibc as they are', () => {
    expect(tuneMalloc({ MALLOC_TRIM_THRESHOLD_: '131072' })).toBe(false);
    expect(tuneMalloc({ MALLOC_MMAP_THRESHOLD_: '131072' })).toBe(false);
    expect(tuneMalloc({})).toBe(true);
  });
});
