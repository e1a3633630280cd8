import { describe, expect, it } from 'vitest';
import { AdaptiveConcurrency } from '../../src/core/adaptive-concurrency.ts';
import { parseRetryAfter } from '../../src/outputs/http/sink.ts';

describe('parseRetryAfter (RFC 9110 §10.2.3)', () => {
  const now = Date.parse('2026-11-22T10:00:00Z');
  it('reads delay-seconds and HTTP-dates, caps at an hour, ignores junk', () => {
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter(['7'], now)).toBe(7000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('999999', now)).toBe(3_600_000);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});

describe('AdaptiveConcurrency', () => {
  it('grows by one per round of fast answers while it is the bottleneck', () => {
    const a = new AdaptiveConcurrency(1, 10);
    let t = 0;
    for (let i = 0; i < 20; i++) a.record({ rttMs: 10, overloaded: false, inFlight: a.limit }, (t += 10));
    expect(a.limit).toBeGreaterThan(3);
    expect(a.limit).toBeLessThanOrEqual(10);
  });

  it('does not grow when the limit is not what holds the output back', () => {
    const a = new AdaptiveConcurrency(1, 10, 4);
    for (let i = 0; i < 50; i++) a.record({ rttMs: 10, overloaded: false, inFlight: 1 }, i * 10);
    expect(a.limit).toBe(4);
  });

  it('shrinks on throttling and on answers much slower than the baseline, once per round trip', () => {
    const a = new AdaptiveConcurrency(1, 32, 20);
    for (let i = 0; i < 5; i++) a.record({ rttMs: 100, overloaded: false, inFlight: 1 }, i);
    a.record({ rttMs: 100, overloaded: true, inFlight: 20 }, 1000);
    expect(a.limit).toBe(14);
    a.record({ rttMs: 100, overloaded: true, inFlight: 14 }, 1010); // same round trip: no second cut
    expect(a.limit).toBe(14);
    a.record({ rttMs: 1000, overloaded: false, inFlight: 14 }, 2000); // 10x slower than baseline
    expect(a.limit).toBe(9);
    for (let i = 0; i < 10; i++) a.record({ rttMs: 100, overloaded: true, inFlight: 1 }, 3000 + i * 1000);
    expect(a.limit).toBe(1); // never below min
  });
});
