// The syslog output's batch buffers (src/outputs/syslog/buffer-pool.ts): cut from reused slabs,
// never handing out memory a batch not given back still holds.
import { describe, expect, it } from 'vitest';
import { BufferPool, SLAB_BYTES } from '../../src/outputs/syslog/buffer-pool.ts';

const MiB = 1024 * 1024;
/** 270,000-byte batches per slab. */
const per = Math.floor(SLAB_BYTES / 270_000);

describe('BufferPool', () => {
  it('cuts batches one after another from a slab, and reuses the slab only once all of them are given back', () => {
    const pool = new BufferPool(8 * MiB);
    const a = pool.take(270_000);
    const b = pool.take(270_000);
    expect(b.buffer).toBe(a.buffer);
    expect(b.byteOffset).toBe(a.byteOffset + 270_000);
    // Fill the first slab; the next batch starts a second one.
    const rest = Array.from({ length: per - 2 }, () => pool.take(270_000));
    const next = pool.take(270_000);
    expect(next.buffer).not.toBe(a.buffer);
    for (const buf of [a, b, ...rest.slice(0, -1)]) pool.give(buf);
    // One batch of the first slab is still held: a third slab, not the first.
    for (let i = 0; i < per; i++) pool.take(270_000);
    const third = pool.take(270_000);
    expect(third.buffer).not.toBe(a.buffer);
    pool.give(rest.at(-1)!);
    // The first slab is free now: taken again when the current one is full.
    let again: Buffer | undefined;
    for (let i = 0; i < 32 && !again; i++) {
      const t = pool.take(270_000);
      if (t.buffer === a.buffer) again = t;
    }
    expect(again?.byteOffset).toBe(a.byteOffset);
  });

  it('keeps freed slabs up to its bound for the next burst, and trim() lets all but one go', () => {
    const pool = new BufferPool(64 * MiB);
    const burst = () => Array.from({ length: 4 * per }, () => pool.take(270_000));
    const first = burst();
    const slabs = new Set(first.map((b) => b.buffer));
    expect(slabs.size).toBe(4);
    for (const b of first) pool.give(b);
    // The next burst reuses the freed slabs instead of allocating new ones.
    const second = burst();
    expect(second.every((b) => slabs.has(b.buffer))).toBe(true);
    for (const b of second) pool.give(b);
    pool.trim();
    const third = burst();
    const reused = new Set(third.filter((b) => slabs.has(b.buffer)).map((b) => b.buffer));
    // The current slab and one free slab are kept; the others were let go.
    expect(reused.size).toBe(2);
  });

  it('frees the memory of a slab it lets go at once (trim, or more free than its bound), never of one a batch still holds', () => {
    const pool = new BufferPool(2 * SLAB_BYTES);
    const slabBatches = per;
    const batches = Array.from({ length: 5 * slabBatches }, () => pool.take(270_000));
    const slabs = [...new Set(batches.map((b) => b.buffer))];
    expect(slabs.length).toBe(5);
    const held = batches.slice(-slabBatches - 1); // the last slab's batches, and one of the fourth slab's
    for (const b of batches.slice(0, -slabBatches - 1)) pool.give(b);
    // Three slabs were given back whole: two are kept (the bound is two slabs), the third is let go.
    const freed = slabs.filter((a) => a.byteLength === 0);
    expect(freed).toHaveLength(1);
    for (const b of held) expect(b.length).toBe(270_000);
    pool.trim();
    // trim keeps one free slab: one more freed; the slabs batches still hold are untouched.
    expect(slabs.filter((a) => a.byteLength === 0)).toHaveLength(2);
    for (const b of held) expect(b.length).toBe(270_000);
    held.forEach((b, i) => b.fill(i & 0xff));
    held.forEach((b, i) => expect(b[269_999]).toBe(i & 0xff));
    // What is left still serves batches.
    expect(pool.take(270_000).length).toBe(270_000);
  });

  it('a batch over half a slab gets its own buffer; giving it back is harmless', () => {
    const pool = new BufferPool(8 * MiB);
    const big = pool.take(SLAB_BYTES / 2 + 1);
    expect(big.length).toBe(SLAB_BYTES / 2 + 1);
    pool.give(big);
    const small = pool.take(100);
    expect(small.buffer).not.toBe(big.buffer);
  });

  it('random takes and gives (out of order, as several connections give them): no live batch is ever overwritten', () => {
    const pool = new BufferPool(8 * MiB);
    let seed = 7;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    // Each batch is filled with one of 16 values and compared with a reference of that value.
    const refs = Array.from({ length: 16 }, (_, v) => Buffer.alloc(1_500_000, v));
    const intact = (buf: Buffer, fill: number): boolean => buf.compare(refs[fill]!, 0, buf.length) === 0;
    const live: Array<{ buf: Buffer; fill: number }> = [];
    for (let step = 0; step < 4_000; step++) {
      if (live.length > 60 || (live.length > 0 && rand(3) === 0)) {
        const { buf, fill } = live.splice(rand(live.length), 1)[0]!;
        expect(intact(buf, fill)).toBe(true);
        pool.give(buf);
      } else {
        const buf = pool.take(rand(20) === 0 ? 1_000_000 + rand(500_000) : 1 + rand(400_000));
        const fill = step & 15;
        buf.fill(fill);
        live.push({ buf, fill });
      }
    }
    for (const { buf, fill } of live) expect(intact(buf, fill)).toBe(true);
  });
});
