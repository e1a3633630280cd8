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
  it('grows by one per interval of fast answers while it is the bottleneck', () => {
    const a = new AdaptiveConcurrency(1, 10);
    let t = 0;
    for (let i = 0; i < 20; i++) a.record({ rttMs: 10, ok: true, overloaded: false, inFlight: a.limit }, (t += 10));
    expect(a.limit).toBeGreaterThan(3);
    expect(a.limit).toBeLessThanOrEqual(10);
  });

  it('does not grow when the limit is not what holds the output back', () => {
    const a = new AdaptiveConcurrency(1, 10, 4);
    for (let i = 0; i < 50; i++) a.record({ rttMs: 10, ok: true, overloaded: false, inFlight: 1 }, i * 10);
    expect(a.limit).toBe(4);
  });

  it('halves on throttling, once per interval; cuts a tenth when latency rises past its deviation; never below min', () => {
    const a = new AdaptiveConcurrency(1, 32, 20);
    let t = 0;
    for (let i = 0; i < 10; i++) a.record({ rttMs: 100, ok: true, overloaded: false, inFlight: 1 }, (t += 100));
    expect(a.limit).toBe(20);
    // Three throttled answers in one interval (about a round trip): one cut.
    a.record({ rttMs: 100, ok: false, overloaded: true, inFlight: 20 }, (t += 10));
    a.record({ rttMs: 100, ok: false, overloaded: true, inFlight: 20 }, (t += 10));
    expect(a.limit).toBe(20);
    a.record({ rttMs: 100, ok: false, overloaded: true, inFlight: 20 }, (t += 80));
    expect(a.limit).toBe(10);
    // An interval 40% slower than the past mean, whose deviation is about 0.
    a.record({ rttMs: 140, ok: true, overloaded: false, inFlight: 10 }, (t += 10));
    a.record({ rttMs: 140, ok: true, overloaded: false, inFlight: 10 }, (t += 140));
    expect(a.limit).toBe(9);
    for (let i = 0; i < 10; i++) a.record({ rttMs: 100, ok: false, overloaded: true, inFlight: 1 }, (t += 1000));
    expect(a.limit).toBe(1);
  });

  it('measures the round trip on successes only: fast errors do not lower the baseline', () => {
    const a = new AdaptiveConcurrency(1, 32, 8);
    let t = 0;
    for (let i = 0; i < 10; i++) a.record({ rttMs: 80, ok: true, overloaded: false, inFlight: 1 }, (t += 80));
    for (let i = 0; i < 100; i++) a.record({ rttMs: 1, ok: false, overloaded: false, inFlight: 1 }, (t += 1));
    expect(a.meanMs).toBeCloseTo(80, 0);
  });

  it('against an intake of fixed capacity (3 workers x 20 ms, a FIFO queue in front) settles near 3 with latency near 20 ms', () => {
    const a = new AdaptiveConcurrency(1, 32);
    const workers = 3;
    const serviceMs = 20;
    // Requests in flight wait their turn: with L outstanding, each takes about L/3 services.
    let t = 0;
    const limits: number[] = [];
    const rtts: number[] = [];
    for (let round = 0; round < 400; round++) {
      const l = a.limit;
      const rtt = serviceMs * Math.max(1, l / workers);
      for (let k = 0; k < l; k++) a.record({ rttMs: rtt, ok: true, overloaded: false, inFlight: l }, (t += rtt / l));
      if (round >= 200) {
        limits.push(l);
        rtts.push(rtt);
      }
    }
    const mean = (xs: number[]): number => xs.reduce((x, y) => x + y, 0) / xs.length;
    expect(Math.max(...limits)).toBeLessThanOrEqual(5);
    expect(Math.min(...limits)).toBeGreaterThanOrEqual(2);
    expect(mean(rtts)).toBeLessThan(serviceMs * 1.5);
  });
});
