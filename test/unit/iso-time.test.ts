import { describe, expect, it } from 'vitest';
import { isoUtc } from '../../src/core/iso-time.ts';

describe('isoUtc', () => {
  it('writes what Date.prototype.toISOString writes', () => {
    const cases = [
      0, 1, 999, 1000, 86_399_999, 86_400_000, -1, -86_400_001, 951_782_400_000 /* 2000-02-29 */, 4_107_542_399_999 /* 2100-02-28 end */,
      4_107_542_400_000, 1_709_164_800_000 /* 2024-02-29 */, Date.UTC(9999, 11, 31, 23, 59, 59, 999), Date.UTC(0, 0, 1), Date.UTC(999, 5, 15, 1, 2, 3, 4),
      Date.UTC(1600, 1, 29), Date.UTC(1900, 2, 1), 1_794_000_000_123.9, -0.5, -86_400_000.5,
    ];
    let seed = 12345;
    const rnd = (): number => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    for (let i = 0; i < 20_000; i++) cases.push(Math.floor((rnd() * 2 - 0.3) * 253_402_300_799_999));
    for (const ms of cases) expect(isoUtc(ms), String(ms)).toBe(new Date(ms).toISOString());
  });

  it('falls back to toISOString outside years 0 to 9999', () => {
    expect(isoUtc(Date.UTC(10_000, 0, 1))).toBe('+010000-01-01T00:00:00.000Z');
    expect(isoUtc(Date.UTC(-1, 0, 1))).toBe('-000001-01-01T00:00:00.000Z');
    expect(() => isoUtc(Number.NaN)).toThrow(RangeError);
  });
});
