// The HTTP input's telemetry and its sender's counting, bound to the registry: each report lands in the metric, under the
// labels, that dashboards read, and its logs carry the listener and are rate-limited.
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { NO_SIGHTINGS } from '../helpers/frame-input.ts';
import { BoundedQueue } from '../../src/core/queue.ts';
import { headerlessEvent } from '../../src/syslog/parse.ts';
import { httpInputTelemetry } from '../../src/inputs/http/instruments.ts';
import { REASONS } from '../../src/inputs/http/error.ts';
import { FilterSet } from '../../src/routing/filters.ts';
import { Inlet } from '../../src/routing/inlet.ts';
import { inletTelemetry } from '../../src/pipeline/instruments.ts';
import { Metrics } from '../../src/telemetry/metrics.ts';

function setup() {
  const metrics = new Metrics(false);
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      cb();
    },
  });
  return { metrics, lines, t: httpInputTelemetry(metrics, pino({ level: 'info' }, sink), 'api', NO_SIGHTINGS) };
}

/** Every series of a metric, as labels and value. */
async function series(metrics: Metrics, name: string) {
  const m = metrics.registry.getSingleMetric(name);
  if (!m) throw new Error(`no metric ${name}`);
  return (await m.get()).values.map((v) => ({ labels: v.labels, value: v.value }));
}

describe('httpInputTelemetry', () => {
  it('counts requests answered and refused per listener', async () => {
    const { metrics, t } = setup();
    t.answered(202);
    t.answered(202);
    t.refused('throttled');
    expect(await series(metrics, 'intake_relay_http_input_requests_total')).toEqual([{ labels: { listener: 'api', status: '202' }, value: 2 }]);
    const refused = await series(metrics, 'intake_relay_http_input_refused_total');
    expect(refused.filter((r) => r.value > 0)).toEqual([{ labels: { listener: 'api', reason: 'throttled' }, value: 1 }]);
    // Every reason has a series from the start (at 0), for rate() alerts.
    expect(refused.map((r) => r.labels.reason).sort()).toEqual([...REASONS].sort());
  });

  it('counts a load balancer\'s PROXY protocol health checks apart from refused connections, under no intake', async () => {
    const { metrics, t } = setup();
    t.healthCheck();
    t.healthCheck();
    t.rejected('proxy_untrusted');
    expect(await series(metrics, 'intake_relay_input_proxy_health_checks_total')).toEqual([{ labels: { intake: '', input: 'api' }, value: 2 }]);
    expect(await series(metrics, 'intake_relay_input_connections_rejected_total')).toEqual([{ labels: { intake: '', input: 'api', reason: 'proxy_untrusted' }, value: 1 }]);
    expect((await metrics.registry.getSingleMetric('intake_relay_input_proxy_health_checks_total')!.get()).help).toContain('health checks');
  });

  it('counts events received (through the sender), repaired and dropped per intake, with the listener as the input', async () => {
    const { metrics, t } = setup();
    const target = { intake: 'main', intakeKey: 'k', queue: new BoundedQueue({ maxEvents: 10, maxBytes: 1 << 20, whenFull: 'block' }), filters: new FilterSet([]) };
    const sender = new Inlet({ targets: [target] }, { mode: 'drop' }, inletTelemetry(metrics, 'api'));
    const buf = Buffer.from('x'.repeat(40));
    const events = [0, 1].map((k) => headerlessEvent(buf, k * 20, k * 20 + 20, 0, '', { pri: 13, hostname: 'h', appName: 'a', procId: '' }));
    sender.refuse(target, 'too_large', 1);
    expect(sender.admit(target, events, 120)).toEqual({ result: 'ok', admitted: 2 });
    t.modified('main', 'truncated', 1);
    t.modified('main', 'invalid_utf8', 2);
    expect(await series(metrics, 'intake_relay_events_received_total')).toEqual([{ labels: { intake: 'main', input: 'api' }, value: 3 }]);
    expect(await series(metrics, 'intake_relay_bytes_received_total')).toEqual([{ labels: { intake: 'main', input: 'api' }, value: 120 }]);
    expect(await series(metrics, 'intake_relay_events_modified_total')).toEqual([
      { labels: { intake: 'main', input: 'api', reason: 'truncated' }, value: 1 },
      { labels: { intake: 'main', input: 'api', reason: 'invalid_utf8' }, value: 2 },
    ]);
    expect(await series(metrics, 'intake_relay_events_dropped_total')).toEqual([{ labels: { intake: 'main', stage: 'input', reason: 'too_large' }, value: 1 }]);
  });

  it('reads the bytes in flight at each collection, until the listener is gone', async () => {
    const { metrics, t } = setup();
    let used = 10;
    const stop = t.inflightBytes(() => used);
    expect(await series(metrics, 'intake_relay_http_input_inflight_bytes')).toEqual([{ labels: { listener: 'api' }, value: 10 }]);
    used = 25;
    expect(await series(metrics, 'intake_relay_http_input_inflight_bytes')).toEqual([{ labels: { listener: 'api' }, value: 25 }]);
    stop();
    expect(await series(metrics, 'intake_relay_http_input_inflight_bytes')).toEqual([]);
  });

  it('filters with the intake\'s rules (the sender), counting each match under its rule, and admits the rest', async () => {
    const { metrics } = setup();
    const filters = new FilterSet([{ description: 'noisy app', enabled: true, filters: [{ field: 'app_name', operator: '==', value: 'noisy' }] }]);
    const queue = new BoundedQueue({ maxEvents: 10, maxBytes: 1 << 20, whenFull: 'block' });
    const target = { intake: 'main', intakeKey: 'k', queue, filters };
    const sender = new Inlet({ targets: [target] }, { mode: 'drop' }, inletTelemetry(metrics, 'api'));
    const buf = Buffer.from('keepdrop');
    const d = { pri: 13, hostname: 'h', procId: '' };
    const keep = headerlessEvent(buf, 0, 4, 0, '', { ...d, appName: 'quiet' });
    const drop = headerlessEvent(buf, 4, 8, 0, '', { ...d, appName: 'noisy' });
    expect(sender.admit(target, [keep, drop], 8)).toEqual({ result: 'ok', admitted: 1 });
    expect(queue.events).toBe(1);
    expect(await series(metrics, 'intake_relay_events_filtered_total')).toEqual([{ labels: { intake: 'main', rule: 'noisy app' }, value: 1 }]);
    expect(await series(metrics, 'intake_relay_events_dropped_total')).toEqual([{ labels: { intake: 'main', stage: 'input', reason: 'filtered' }, value: 1 }]);
  });

  it('logs with the listener\'s label, one line per key per interval', () => {
    const { lines, t } = setup();
    t.log.info('client_closed', {}, 'Clients closed connections.');
    t.log.info('client_closed', {}, 'Clients closed connections.');
    t.log.error('internal', new Error('boom'), {}, 'HTTP input failed on a request.');
    expect(lines.map((l) => [l.level, l.listener, l.msg, l.suppressed])).toEqual([
      [30, 'api', 'Clients closed connections.', 0],
      [50, 'api', 'HTTP input failed on a request.', 0],
    ]);
    expect(lines[1]).toMatchObject({ err: { type: 'Error', message: 'boom' } });
  });
});
