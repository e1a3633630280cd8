// The native addon's memory call (native/process.c, src/platform/native-addon.ts): trimMemory gives
// back what a burst freed inside the C library's heaps, as the relay asks once every output is
// idle. Measured in a process of its own.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { nativeAddon, releaseFreeMemory } from '../../src/platform/native-addon.ts';

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
