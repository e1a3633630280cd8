// The table of senders: counts per sender, the eviction order when full, silence reported once and
// its end, forgetting, the per-sender series and their cap, HOSTNAME grouping.
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { senders as sendersSchema } from '../../src/core/config-parts.ts';
import { SenderTable, SenderTables } from '../../src/pipeline/senders.ts';
import { Metrics } from '../../src/telemetry/metrics.ts';
import { event } from '../helpers/fake-output.ts';
import { metricValue } from '../helpers/relay.ts';

function setup(over: Partial<ReturnType<typeof sendersSchema.parse>> = {}) {
  const metrics = new Metrics(false);
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      cb();
    },
  });
  const config = { ...sendersSchema.parse({}), ...over };
  const table = new SenderTable('fw', 'udp/514', config, metrics, pino({ level: 'info' }, sink));
  return { metrics, lines, table };
}

const T0 = 1_700_000_000_000;

describe('table of senders', () => {
  it('counts events and bytes per sender, first and last seen, most recent first', () => {
    const { table } = setup();
    table.seen('10.0.0.1', 3, 300, T0);
    table.seen('10.0.0.2', 1, 50, T0 + 10);
    table.seen('10.0.0.1', 2, 200, T0 + 2_000);
    expect(table.size).toBe(2);
    expect(table.rows(10)).toEqual([
      { sender: '10.0.0.1', events: 5, bytes: 500, first_seen: new Date(T0).toISOString(), last_seen: new Date(T0 + 2_000).toISOString(), silent: false },
      { sender: '10.0.0.2', events: 1, bytes: 50, first_seen: new Date(T0 + 10).toISOString(), last_seen: new Date(T0 + 10).toISOString(), silent: false },
    ]);
    expect(table.rows(1).map((r) => r.sender)).toEqual(['10.0.0.1']);
  });

  it('when full, the sender seen longest ago makes room, counted and logged once', async () => {
    const { table, metrics, lines } = setup({ max_tracked: 2 });
    table.seen('a', 1, 1, T0);
    table.seen('b', 1, 1, T0 + 1_000);
    table.seen('a', 1, 1, T0 + 2_000); // a seen again: b is now the oldest
    table.seen('c', 1, 1, T0 + 3_000);
    expect(table.rows(10).map((r) => r.sender).sort()).toEqual(['a', 'c']);
    table.seen('d', 1, 1, T0 + 4_000);
    expect(await metricValue(metrics, 'intake_relay_senders_evicted_total', { intake: 'fw', input: 'udp/514' })).toBe(2);
    expect(lines.filter((l) => String(l.msg).startsWith('The table of senders is full'))).toHaveLength(1);
  });

  it('a flood of new senders cannot clear a silence: silent senders are forgotten last', async () => {
    const { table, metrics } = setup({ max_tracked: 3, silent_after_ms: 60_000 });
    table.seen('firewall', 1, 1, T0);
    table.check(T0 + 61_000);
    expect(table.silentCount).toBe(1);
    for (let i = 0; i < 100; i++) table.seen(`spoofed-${i}`, 1, 1, T0 + 62_000 + i);
    table.check(T0 + 63_000);
    expect(table.rows(1, true).map((r) => r.sender)).toEqual(['firewall']);
    expect(await metricValue(metrics, 'intake_relay_senders_silent', { input: 'udp/514' })).toBe(1);
    expect(await metricValue(metrics, 'intake_relay_senders_evicted_total', { input: 'udp/514' })).toBe(98);
    expect(table.size).toBe(3);
  });

  it('a reload that raises silent_after_ms (or turns it off) clears silences it no longer means; a smaller table is trimmed', () => {
    const { table, lines } = setup({ silent_after_ms: 60_000 });
    const config = sendersSchema.parse({});
    table.seen('a', 1, 1, T0);
    table.seen('b', 1, 1, T0);
    table.check(T0 + 61_000);
    expect(table.silentCount).toBe(2);
    table.configure({ ...config, silent_after_ms: 120_000, max_tracked: 1 });
    table.check(T0 + 62_000);
    expect(table.silentCount).toBe(0);
    expect(table.size).toBe(1);
    table.seen('a', 1, 1, T0 + 63_000);
    expect(table.silentCount).toBe(0);
    expect(lines.filter((l) => l.msg === 'A silent sender is sending again.')).toHaveLength(0);
  });

  it('many senders silent at once (a partition): one line for all', () => {
    const { table, lines } = setup({ silent_after_ms: 60_000 });
    for (let i = 0; i < 50; i++) table.seen(`10.0.0.${i}`, 1, 1, T0);
    table.check(T0 + 61_000);
    expect(table.silentCount).toBe(50);
    expect(lines.filter((l) => l.msg === 'A sender went silent.')).toHaveLength(0);
    const all = lines.filter((l) => String(l.msg).startsWith('Senders went silent'));
    expect(all).toHaveLength(1);
    expect(all[0]).toMatchObject({ silent: 50 });
    expect(all[0]!.senders).toHaveLength(10);
  });

  it('reports a known sender silent once, names it, and reports its return', async () => {
    const { table, lines, metrics } = setup({ silent_after_ms: 60_000, known_within_ms: 3_600_000 });
    table.seen('10.0.0.1', 1, 10, T0);
    table.seen('10.0.0.2', 1, 10, T0);
    table.check(T0 + 30_000);
    expect(table.silentCount).toBe(0);
    table.seen('10.0.0.2', 1, 10, T0 + 50_000);
    table.check(T0 + 61_000);
    table.check(T0 + 62_000);
    expect(table.silentCount).toBe(1);
    expect(await metricValue(metrics, 'intake_relay_senders_silent', { intake: 'fw', input: 'udp/514' })).toBe(1);
    expect(await metricValue(metrics, 'intake_relay_senders', { intake: 'fw', input: 'udp/514' })).toBe(2);
    const silent = lines.filter((l) => l.msg === 'A sender went silent.');
    expect(silent).toHaveLength(1);
    expect(silent[0]).toMatchObject({ level: 40, sender: '10.0.0.1', intake: 'fw', input: 'udp/514', events: 1 });
    expect(table.rows(10, true).map((r) => r.sender)).toEqual(['10.0.0.1']);
    // Silent ones come first in the table.
    expect(table.rows(10)[0]).toMatchObject({ sender: '10.0.0.1', silent: true });
    table.seen('10.0.0.1', 1, 10, T0 + 70_000);
    expect(lines.filter((l) => l.msg === 'A silent sender is sending again.')).toMatchObject([{ sender: '10.0.0.1', silent_for_s: 70 }]);
    expect(await metricValue(metrics, 'intake_relay_senders_silent', { intake: 'fw', input: 'udp/514' })).toBe(0);
  });

  it('forgets a sender unseen for known_within_ms; silent_after_ms 0 reports none', () => {
    const quiet = setup({ silent_after_ms: 0, known_within_ms: 10_000 });
    quiet.table.seen('a', 1, 1, T0);
    quiet.table.check(T0 + 9_000);
    expect(quiet.table.silentCount).toBe(0);
    expect(quiet.table.size).toBe(1);
    quiet.table.check(T0 + 10_001);
    expect(quiet.table.size).toBe(0);
    expect(quiet.lines.filter((l) => l.msg === 'A sender went silent.')).toHaveLength(0);
  });

  it('with metrics: one series per sender up to max_series, the rest counted as overflow', async () => {
    const { table, metrics } = setup({ metrics: true, max_series: 2 });
    expect(await metricValue(metrics, 'intake_relay_sender_series_overflow_total', { input: 'udp/514' })).toBe(0);
    table.seen('a', 3, 1, T0);
    table.seen('b', 4, 1, T0);
    table.seen('c', 5, 1, T0);
    table.seen('a', 1, 1, T0);
    expect(await metricValue(metrics, 'intake_relay_sender_events_total', { sender: 'a' })).toBe(4);
    expect(await metricValue(metrics, 'intake_relay_sender_events_total', { sender: 'b' })).toBe(4);
    expect(await metricValue(metrics, 'intake_relay_sender_events_total', { sender: 'c' })).toBe(0);
    expect(await metricValue(metrics, 'intake_relay_sender_series_overflow_total', { intake: 'fw', input: 'udp/514' })).toBe(5);
    expect((await metrics.senderEvents.get()).values).toHaveLength(2);
    // Turned off by a reload: the series go.
    table.configure({ ...sendersSchema.parse({}), metrics: false });
    expect((await metrics.senderEvents.get()).values).toHaveLength(0);
    table.configure({ ...sendersSchema.parse({}), metrics: true });
    table.seen('a', 1, 1, T0);
    table.dispose();
    expect((await metrics.senderEvents.get()).values).toHaveLength(0);
  });

  it('without metrics: no per-sender series', async () => {
    const { table, metrics } = setup();
    table.seen('a', 3, 1, T0);
    expect((await metrics.senderEvents.get()).values).toHaveLength(0);
  });

  it('groups a read by HOSTNAME (file and HTTP inputs)', () => {
    const { table } = setup();
    table.seenHosts([event('web-1', 10), event('web-1', 20), event('db-1', 5), event('web-1', 1)], T0);
    expect(table.rows(10).map(({ sender, events, bytes }) => ({ sender, events, bytes })).sort((a, b) => a.sender.localeCompare(b.sender))).toEqual([
      { sender: 'db-1', events: 1, bytes: 5 },
      { sender: 'web-1', events: 3, bytes: 31 },
    ]);
  });

  it('checked when a sender is due to go silent or be forgotten, not every second: nothing runs at rest', async () => {
    vi.useFakeTimers({ now: T0 });
    const checks = vi.spyOn(SenderTable.prototype, 'check');
    try {
      const metrics = new Metrics(false);
      const lines: Record<string, unknown>[] = [];
      const log = pino({ level: 'info' }, new Writable({ write: (c: Buffer, _e, cb) => (lines.push(JSON.parse(c.toString()) as Record<string, unknown>), cb()) }));
      const tables = new SenderTables(metrics, log);
      const t = tables.table('fw', 'udp/514', sendersSchema.parse({ silent_after_ms: 60_000, known_within_ms: 600_000 }));
      tables.start();
      // Nothing tracked: no timer.
      expect(vi.getTimerCount()).toBe(0);
      t.seen('a', 1, 1, Date.now());
      expect(vi.getTimerCount()).toBe(1);
      // The gauge follows at once, not at the next check.
      expect(await metricValue(metrics, 'intake_relay_senders', { intake: 'fw', input: 'udp/514' })).toBe(1);
      await vi.advanceTimersByTimeAsync(30_000);
      t.seen('a', 1, 1, Date.now()); // seen again: silent from T0 + 90 s now
      await vi.advanceTimersByTimeAsync(30_001);
      // One check at a's first deadline (T0 + 60 s), which found nothing to do; none each second.
      expect(checks).toHaveBeenCalledTimes(1);
      expect(lines.filter((l) => l.msg === 'A sender went silent.')).toEqual([]);
      await vi.advanceTimersByTimeAsync(30_000);
      expect(checks).toHaveBeenCalledTimes(2);
      expect(lines.filter((l) => l.msg === 'A sender went silent.').map((l) => l.sender)).toEqual(['a']);
      expect(await metricValue(metrics, 'intake_relay_senders_silent', { intake: 'fw', input: 'udp/514' })).toBe(1);
      // Next: forgotten at T0 + 30 s + 600 s; nothing before.
      await vi.advanceTimersByTimeAsync(539_000);
      expect(checks).toHaveBeenCalledTimes(2);
      await vi.advanceTimersByTimeAsync(2_000);
      expect(checks).toHaveBeenCalledTimes(3);
      expect(t.size).toBe(0);
      expect(vi.getTimerCount()).toBe(0);
      // A reload that lowers the threshold brings the check forward.
      t.seen('b', 1, 1, Date.now());
      tables.table('fw', 'udp/514', sendersSchema.parse({ silent_after_ms: 5_000, known_within_ms: 600_000 }));
      await vi.advanceTimersByTimeAsync(5_001);
      expect(lines.filter((l) => l.msg === 'A sender went silent.').map((l) => l.sender)).toEqual(['a', 'b']);
      tables.stop();
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      checks.mockRestore();
      vi.useRealTimers();
    }
  });

  it('a new sender due before the timer (it waits for a quiet sender to be forgotten, or for another input\'s longer threshold) is reported on time', async () => {
    vi.useFakeTimers({ now: T0 });
    try {
      const lines: Record<string, unknown>[] = [];
      const log = pino({ level: 'info' }, new Writable({ write: (c: Buffer, _e, cb) => (lines.push(JSON.parse(c.toString()) as Record<string, unknown>), cb()) }));
      // pino's own time (ms, from Date.now(): the fake clock) says when each line was written.
      const silentAt = (sender: string): number | undefined => lines.find((l) => l.msg === 'A sender went silent.' && l.sender === sender)?.time as number | undefined;
      const tables = new SenderTables(new Metrics(false), log);
      const short = tables.table('fw', 'udp/514', sendersSchema.parse({ silent_after_ms: 60_000, known_within_ms: 600_000 }));
      const long = tables.table('fw', 'tcp/514', sendersSchema.parse({ silent_after_ms: 1_800_000, known_within_ms: 86_400_000 }));
      tables.start();
      // The same table: a goes silent; the timer then waits for a to be forgotten (T0 + 600 s).
      short.seen('a', 1, 1, Date.now());
      await vi.advanceTimersByTimeAsync(61_000);
      expect(silentAt('a')).toBe(T0 + 60_001);
      short.seen('b', 1, 1, Date.now());
      await vi.advanceTimersByTimeAsync(61_000);
      expect(silentAt('b')).toBe(T0 + 121_001);
      // Another table: its 30 minutes must not hold back this table's minute.
      long.seen('c', 1, 1, Date.now());
      await vi.advanceTimersByTimeAsync(1_000);
      short.seen('d', 1, 1, Date.now());
      await vi.advanceTimersByTimeAsync(61_000);
      expect(silentAt('d')).toBe(T0 + 183_001);
      // A silent sender back, and quiet again: on time too.
      short.seen('a', 1, 1, Date.now());
      const back = Date.now();
      await vi.advanceTimersByTimeAsync(61_000);
      expect(lines.filter((l) => l.msg === 'A sender went silent.' && l.sender === 'a').map((l) => l.time)).toEqual([T0 + 60_001, back + 60_001]);
      tables.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('tables survive a restart of their input and go with it', async () => {
    const metrics = new Metrics(false);
    const tables = new SenderTables(metrics, pino({ level: 'silent' }));
    const config = sendersSchema.parse({});
    const t = tables.table('fw', 'udp/514', config);
    t.seen('a', 1, 1, T0);
    expect(tables.table('fw', 'udp/514', { ...config, max_tracked: 5 })).toBe(t);
    tables.table('', 'shared', config);
    tables.retain([['', 'shared']]);
    expect(tables.all().map((x) => x.input)).toEqual(['shared']);
    expect((await metrics.sendersTracked.get()).values.map((v) => v.labels.input)).toEqual(['shared']);
  });
});
