// The backlog watch on a made-up timeline (a snapshot every 2 s): an intake at 100 events/s that
// stops delivering for 60 s, then drains at 400/s. Its rates over the minute, the backlog's size,
// trend and time left, and the log lines: one when it builds, one when it turns to draining, one
// every 30 s at most meanwhile, one when it is delivered. Also the top screen fits 80 columns.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { BacklogWatch } from '../../src/runtime/backlog.ts';
import type { IntakeSnapshot, Snapshot } from '../../src/telemetry/snapshot.ts';
import { render, type TopSnapshot } from '../../src/cli/top.ts';

function intake(received: number, sent: number, queued: number): IntakeSnapshot {
  return {
    name: 'web', output: 'syslog', state: sent > 0 ? 'connected' : 'retrying', stalled: false, accepting: true,
    received, sent, resent: 0, filtered: 0, dropped: {}, queued_events: queued, queued_bytes: queued * 100,
    max_events: 100_000, max_bytes: 64 << 20, unacked_events: 0, oldest_age_seconds: 0, last_error: null,
  };
}

function snapshot(at: number, i: IntakeSnapshot): Snapshot {
  return { at, version: 'test', phase: 'running', intakes: [i], inputs: [], threads: [] };
}

describe('backlog watch', () => {
  it('follows an outage and its drain, and logs it within its rate limit', () => {
    const lines: Record<string, unknown>[] = [];
    const log = pino({ base: undefined }, new Writable({ write: (c: Buffer, _e, cb) => (lines.push(JSON.parse(c.toString()) as Record<string, unknown>), cb()) }));
    const w = new BacklogWatch(log);
    let received = 0;
    let sent = 0;
    const t0 = 1_000_000;
    const at: number[] = [];
    let sawDraining = false;
    for (let t = 0; t <= 200_000; t += 2_000) {
      received += 200; // 100/s
      const down = t >= 20_000 && t < 80_000;
      if (!down) sent = Math.min(received, sent + 800); // up to 400/s
      w.sample(snapshot(t0 + t, intake(received, sent, received - sent)));
      at.push(t0 + t);
      const b = w.backlog('web');
      if (t === 78_000) expect(b).toMatchObject({ events: 6_000, trend: 'growing', eta_seconds: null });
      if (t === 86_000) {
        expect(b?.trend).toBe('draining');
        expect(b?.drain_per_s).toBe(300);
        expect(b?.eta_seconds).toBe(Math.ceil((received - sent) / 300));
        sawDraining = true;
      }
      if (t === 150_000) expect(b).toBeUndefined();
    }
    expect(sawDraining).toBe(true);
    expect(w.rates('web')).toEqual({ in_per_s: 100, out_per_s: 100 });
    const msgs = lines.map((l) => String(l.msg));
    expect(msgs[0]).toMatch(/^A backlog is building: 1,000 events wait for delivery\.$/);
    expect(msgs.filter((m) => m.startsWith('Backlog of') && m.includes('growing'))).toHaveLength(1); // the 30 s line during the outage
    expect(msgs.some((m) => /^Backlog of [\d,]+ events draining at 300\/s \(delivering 400\/s, receiving 100\/s\): about \d+ s left\.$/.test(m))).toBe(true);
    expect(msgs.at(-1)).toMatch(/^Backlog delivered: at its peak 6,000 events waited; it lasted \d+ s, drained in \d+ s\.$/);
    expect(lines.every((l) => l.intake === 'web')).toBe(true);
  });

  it('no backlog for a flood the output keeps up with, nor from a first snapshot (no rates yet)', () => {
    const lines: unknown[] = [];
    const w = new BacklogWatch(pino({}, new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c), cb()) })));
    // Already 4,487 queued at the first snapshot (the load began before it): no rate to judge by.
    w.sample(snapshot(0, intake(10_000, 5_513, 4_487)));
    // 500,000 events/s in and out, 10,000 queued between reads: a fiftieth of a second's delivery.
    for (let t = 1; t < 10; t++) w.sample(snapshot(t * 2_000, intake(10_000 + t * 1_000_000, t * 1_000_000, 10_000)));
    expect(lines).toEqual([]);
    expect(w.backlog('web')).toBeUndefined();
  });

  it('no backlog for a short hiccup (under 1,000 events)', () => {
    const lines: unknown[] = [];
    const w = new BacklogWatch(pino({}, new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c), cb()) })));
    for (let t = 0; t < 20; t++) w.sample(snapshot(t * 2_000, intake(t * 100, t < 5 ? 0 : t * 100, t < 5 ? t * 100 : 0)));
    expect(lines).toEqual([]);
  });
});

describe('top screen', () => {
  it('fits 80 columns with long names and large numbers', () => {
    const big = { ...intake(123_456_789_012, 123_456_000_000, 99_999_999), name: 'a-very-long-intake-name-indeed', last_error: 'x'.repeat(200), backlog: { events: 99_999_999, since: '2026-11-28T05:00:00.000Z', trend: 'draining' as const, drain_per_s: 1_234_567, eta_seconds: 81 } };
    const cur: TopSnapshot = { at: 2_000, version: '1.2.3', phase: 'running', intakes: [big], inputs: [{ intake: 'a-very-long-intake-name-indeed', input: 'an-input-with-a-long-name/12345', received: 1e12, connections: 100_000, kernel_drops: 1e9, silent_senders: 12_345 }], threads: [{ thread: 'main', utilization: 1 }] };
    const prev: TopSnapshot = { ...cur, at: 1_000, intakes: [{ ...big, received: big.received - 1_500_000, sent: big.sent - 900_000 }] };
    const lines = render({ cur, prev, sort: 'name', picked: big.name, base: 'http://127.0.0.1:9750', live: true });
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(80);
    expect(lines.join('\n')).toMatch(/a-very-long-~ connected\s+1\.5M\s+900k\s+100M >999%/);
    expect(lines.join('\n')).toContain('~1m21s');
  });
});
