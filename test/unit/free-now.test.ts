import { describe, expect, it } from 'vitest';
import { freeNow } from '../../src/core/free-now.ts';

describe('freeNow', () => {
  it('frees a Buffer that is the whole of its own memory: afterwards it is empty', () => {
    const b = Buffer.allocUnsafeSlow(100_000).fill(1);
    const ab = b.buffer;
    expect(freeNow(b)).toBe(true);
    expect(ab.detached).toBe(true);
    expect(b.length).toBe(0);
    expect(freeNow(b)).toBe(false);
  });

  it('leaves what shares its memory: a view into Node\'s pool, a part of a larger buffer', () => {
    const pooled = Buffer.from('a small one');
    const neighbour = Buffer.from('its neighbour in the pool');
    expect(pooled.buffer).toBe(neighbour.buffer);
    expect(freeNow(pooled)).toBe(false);
    expect(neighbour.toString()).toBe('its neighbour in the pool');
    const whole = Buffer.allocUnsafeSlow(1000).fill(7);
    expect(freeNow(whole.subarray(0, 500))).toBe(false);
    expect(freeNow(whole.subarray(1))).toBe(false);
    expect(whole[999]).toBe(7);
  });

  it('leaves memory that may not be detached (WebAssembly\'s, as Node\'s socket reads)', () => {
    const { WebAssembly: wasm } = globalThis as unknown as { WebAssembly: { Memory: new (o: { initial: number }) => { buffer: ArrayBuffer } } };
    const mem = new wasm.Memory({ initial: 1 });
    const view = new Uint8Array(mem.buffer);
    expect(freeNow(view)).toBe(false);
    expect(mem.buffer.byteLength).toBe(65536);
  });
});
