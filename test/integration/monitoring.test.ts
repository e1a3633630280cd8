// The shipped monitoring (deploy/monitoring/): the alert rules pass `promtool check rules` and their
// unit tests (every alert has cases that fire it and cases that must not), the dashboard is a
// Grafana import whose queries parse, and every metric both query is in /metrics of a real relay
// (the rules' before any traffic), whose output `promtool check metrics` accepts. promtool comes from Debian's prometheus package
// (scripts/install-test-peers.sh), used as a command only, never started as a service.
import { spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import net from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { DROP_STAGES } from '../../src/core/contracts.ts';
import { tempDir, track } from '../helpers/cleanup.ts';
import { startHttpIntake } from '../helpers/http-intake.ts';
import { syslogLines } from '../helpers/lines.ts';
import { freePort, requirePeer, sendTcp, startTestIntake } from '../helpers/peers.ts';
import { startRelayProcess } from '../helpers/process.ts';
import { TEST_KEY, TLS } from '../helpers/relay.ts';

const DIR = new URL('../../deploy/monitoring/', import.meta.url).pathname;
const RULES = `${DIR}intake-relay-alerts.yaml`;
const RULE_TESTS = `${DIR}intake-relay-alerts.test.yaml`;
const DASHBOARD = `${DIR}intake-relay-dashboard.json`;

// Strict: every rule is an alert with a severity and the three annotations docs/guides/monitoring.md promises.
const rulesSchema = z.object({
  groups: z.array(z.object({
    name: z.string(),
    rules: z.array(z.strictObject({
      alert: z.string().regex(/^IntakeRelay[A-Za-z]+$/),
      expr: z.string(),
      for: z.string().optional(),
      labels: z.strictObject({ severity: z.enum(['critical', 'warning']) }),
      annotations: z.strictObject({ summary: z.string().min(10), description: z.string().min(10), runbook: z.string().min(10) }),
    })),
  })),
});
const ruleTestsSchema = z.object({
  rule_files: z.array(z.string()),
  tests: z.array(z.object({
    alert_rule_test: z.array(z.object({ alertname: z.string(), exp_alerts: z.array(z.unknown()) })),
  })),
});
const datasource = z.object({ type: z.literal('prometheus'), uid: z.literal('${DS_PROMETHEUS}') });
const dashboardSchema = z.object({
  schemaVersion: z.number().int().min(39),
  uid: z.string().min(1),
  __inputs: z.array(z.object({ name: z.string(), type: z.string(), pluginId: z.string() })),
  templating: z.object({ list: z.array(z.object({ name: z.string(), type: z.string(), query: z.unknown() })) }),
  panels: z.array(z.object({
    id: z.number().int(),
    type: z.string(),
    title: z.string().min(1),
    gridPos: z.object({ x: z.number(), y: z.number(), w: z.number(), h: z.number() }),
    datasource: datasource.optional(),
    targets: z.array(z.object({ refId: z.string(), expr: z.string(), datasource })).optional(),
  })),
});

function promtool(args: string[], input?: string) {
  const r = spawnSync('promtool', args, { encoding: 'utf8', input });
  requirePeer('promtool (Debian package prometheus)', r.error === undefined);
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

const rules = () => rulesSchema.parse(parse(readFileSync(RULES, 'utf8'))).groups.flatMap((g) => g.rules);
const dashboard = () => dashboardSchema.parse(JSON.parse(readFileSync(DASHBOARD, 'utf8')));

/** Every PromQL expression of the dashboard, variables' label_values() selectors included. */
function dashboardExprs(): { id: string; expr: string }[] {
  const d = dashboard();
  const targets = d.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ id: `panel_${p.id}:${t.refId}`, expr: t.expr })));
  const vars = d.templating.list.flatMap((v) => {
    const q = z.object({ query: z.string() }).safeParse(v.query);
    const selector = q.success ? /^label_values\((.+),\s*\w+\)$/.exec(q.data.query)?.[1] : undefined;
    return selector ? [{ id: `var_${v.name}`, expr: selector }] : [];
  });
  return [...targets, ...vars];
}

const metricNames = (expr: string): string[] => expr.match(/intake_relay_[a-z_]+/g) ?? [];

describe('alert rules', () => {
  it('pass promtool check rules; each has a severity, a summary, a description and a runbook', () => {
    const all = rules();
    const r = promtool(['check', 'rules', RULES]);
    expect(r.out).toContain(`SUCCESS: ${all.length} rules found`);
    expect(r.code).toBe(0);
    expect(all.map((a) => a.alert)).toEqual(expect.arrayContaining([
      'IntakeRelayDown', 'IntakeRelayOutputStalled', 'IntakeRelayKeyRejected', 'IntakeRelayQueueNearlyFull',
      'IntakeRelayUdpKernelDrops', 'IntakeRelayUdpReceiveDrops', 'IntakeRelayDiskQueueBacklogOld', 'IntakeRelayReloadFailed', 'IntakeRelaySenderSilent',
    ]));
  });

  it('alert on every drop reason but filtered (dropped on purpose)', () => {
    const alerted = new Set<string>();
    for (const { expr } of rules()) {
      for (const m of expr.matchAll(/intake_relay_events_dropped_total\{[^}]*reason=~?"([^"]+)"/g)) for (const r of m[1]!.split('|')) alerted.add(r);
    }
    const reasons = new Set(Object.values(DROP_STAGES).flat());
    reasons.delete('filtered');
    expect([...reasons].filter((r) => !alerted.has(r))).toEqual([]);
    expect(alerted.has('filtered')).toBe(false);
  });

  it('pass their promtool unit tests, which fire each alert and also hold it silent', () => {
    const r = promtool(['test', 'rules', RULE_TESTS]);
    expect(r.out).toContain('SUCCESS');
    expect(r.code).toBe(0);
    const cases = ruleTestsSchema.parse(parse(readFileSync(RULE_TESTS, 'utf8'))).tests.flatMap((t) => t.alert_rule_test);
    const missing = rules().flatMap(({ alert }) => [
      ...(cases.some((c) => c.alertname === alert && c.exp_alerts.length > 0) ? [] : [`${alert} never fires`]),
      ...(cases.some((c) => c.alertname === alert && c.exp_alerts.length === 0) ? [] : [`${alert} is never held silent`]),
    ]);
    expect(missing).toEqual([]);
  });
});

describe('Grafana dashboard', () => {
  it('imports with a DS_PROMETHEUS data source and instance and intake variables; panels do not overlap', () => {
    const d = dashboard();
    expect(d.__inputs).toEqual([expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' })]);
    expect(d.templating.list.map((v) => [v.name, v.type])).toEqual([['DS_PROMETHEUS', 'datasource'], ['instance', 'query'], ['intake', 'query']]);
    expect(new Set(d.panels.map((p) => p.id)).size).toBe(d.panels.length);
    const cells = new Set<string>();
    for (const p of d.panels) {
      if (p.type !== 'row') expect(p.targets?.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets ?? []) expect(t.expr, p.title).toContain('$instance');
      for (let x = p.gridPos.x; x < p.gridPos.x + p.gridPos.w; x++) {
        for (let y = p.gridPos.y; y < p.gridPos.y + p.gridPos.h; y++) {
          expect(cells.has(`${x},${y}`), `${p.title} overlaps at ${x},${y}`).toBe(false);
          cells.add(`${x},${y}`);
        }
      }
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
    }
  });

  it('has queries that parse as PromQL (promtool checks them as recording rules)', () => {
    const dir = tempDir('dashboard-promql-');
    const recorded = dashboardExprs().map(({ id, expr }) => ({
      record: `dashboard:${id}`,
      expr: expr.replaceAll('$__rate_interval', '5m').replaceAll('$instance', '.*').replaceAll('$intake', '.*'),
    }));
    writeFileSync(join(dir, 'rules.yaml'), JSON.stringify({ groups: [{ name: 'dashboard', rules: recorded }] }));
    const r = promtool(['check', 'rules', join(dir, 'rules.yaml')]);
    expect(r.out).toContain(`SUCCESS: ${recorded.length} rules found`);
    expect(r.code).toBe(0);
  });
});

describe('metrics of a running relay', () => {
  it('pass promtool check metrics, and hold every metric the dashboard and the rules query', async () => {
    const dir = tempDir('monitoring-test-');
    const syslog = track(await startTestIntake());
    const http = track(await startHttpIntake());
    const [ops, tcp, udp, shared, api] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
    const config = join(dir, 'relay.yaml');
    writeFileSync(config, `log_level: info
data_dir: ${dir}
metrics: { address: 127.0.0.1, port: ${ops} }
shutdown_timeout_ms: 1000
intakes:
  - name: fw
    intake_key: ${TEST_KEY}
    inputs:
      - { type: tcp, address: 127.0.0.1, port: ${tcp}, name: fw-tcp, max_connections: 1 }
      - { type: udp, address: 127.0.0.1, port: ${udp}, name: fw-udp, receive_threads: 1 }
    queue: { type: disk }
    # The per-sender series are opt-in; the dashboard shows them.
    senders: { metrics: true }
    output: { type: syslog, host: 127.0.0.1, port: ${syslog.port}, server_name: localhost, ca_file: ${TLS}ca.crt, resend_window_ms: 200 }
  - name: proxy
    intake_key: ${TEST_KEY.replace('A', 'B')}
    output: { type: http, url: ${http.url}, ca_file: ${TLS}ca.crt, proxy: none }
listeners:
  - type: tcp
    name: shared
    address: 127.0.0.1
    port: ${shared}
    routes:
      - { match: { app_name: squid }, intake: proxy }
    default: fw
  - type: http
    name: api
    address: 127.0.0.1
    port: ${api}
    paths:
      - { path: /ingest, intake: proxy, format: lines }
`);
    const relay = startRelayProcess(config);
    await vi.waitFor(() => expect(relay.output()).toContain('intake-relay started'), { timeout: 15_000 });
    const scrape = async (): Promise<string> => (await fetch(`http://127.0.0.1:${ops}/metrics`)).text();
    const sum = (text: string, series: string): number =>
      text.split('\n').filter((l) => l.startsWith(series)).reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    const samplesOf = (text: string): string[] => text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));

    // Before any traffic: an alert on increase() or on a gauge sees the first event, drop or
    // silent sender only if its series is there before it. So every metric the rules query has a
    // sample now, with each reason they select, and for every input (a shared listener's with
    // intake="", which Prometheus stores as no intake label: the rules' annotations allow for it).
    const before = samplesOf(await scrape());
    const sampledBefore = new Set(before.map((l) => /^[a-z_:]+/.exec(l)?.[0]));
    const fromRules = [...new Set(rules().flatMap((r) => metricNames(r.expr)))];
    expect(fromRules.filter((n) => !sampledBefore.has(n))).toEqual([]);
    const reasons = rules().flatMap((r) => [...r.expr.matchAll(/(intake_relay_[a-z_]+)\{[^}]*reason=~?"([^"]+)"/g)])
      .flatMap((m) => m[2]!.split('|').map((reason) => `${m[1]} ${reason}`));
    expect(reasons.filter((nr) => {
      const [name, reason] = nr.split(' ');
      return !before.some((l) => l.startsWith(`${name}{`) && l.includes(`reason="${reason}"`));
    })).toEqual([]);
    expect(before).toEqual(expect.arrayContaining([
      'intake_relay_udp_kernel_drops_total{intake="fw",input="fw-udp"} 0',
      ...['fw-tcp', 'fw-udp'].map((i) => `intake_relay_senders_silent{intake="fw",input="${i}"} 0`),
      ...['shared', 'api'].map((i) => `intake_relay_senders_silent{intake="",input="${i}"} 0`),
    ]));

    // Traffic through every kind of input: a plain TCP and UDP input, a routing listener, HTTP.
    await sendTcp(tcp, syslogLines(0, 100, (i) => `tcp ${i}`));
    const sock = dgram.createSocket('udp4');
    // Paced, so that the socket buffer never overflows: the counts delivered below are exact.
    for (let i = 0; i < 50; i++) {
      await new Promise<void>((r) => sock.send(`<14>udp ${i}`, udp, '127.0.0.1', () => r()));
      if (i % 10 === 9) await vi.waitFor(async () => expect(sum(await scrape(), 'intake_relay_events_received_total{intake="fw",input="fw-udp"}')).toBe(i + 1));
    }
    sock.close();
    await sendTcp(shared, syslogLines(0, 30, (i) => `proxy ${i}`, '<14>Nov 23 10:00:00 gw squid: ') + syslogLines(0, 20, (i) => `other ${i}`));
    const posted = await fetch(`http://127.0.0.1:${api}/ingest`, { method: 'POST', body: 'one\ntwo\n' });
    expect(posted.status).toBeLessThan(300);
    await vi.waitFor(async () => {
      const text = await scrape();
      expect(sum(text, 'intake_relay_events_sent_total{intake="fw"')).toBe(170);
      expect(sum(text, 'intake_relay_events_sent_total{intake="proxy"')).toBe(32);
    }, { timeout: 15_000 });

    // A connection over max_connections, refused and counted.
    const held = net.connect(tcp, '127.0.0.1');
    await new Promise((r) => held.once('connect', r));
    await vi.waitFor(async () => expect(sum(await scrape(), 'intake_relay_input_connections{intake="fw"')).toBe(1));
    const refused = net.connect(tcp, '127.0.0.1');
    await new Promise((r) => refused.once('close', r));
    held.destroy();
    await vi.waitFor(async () => {
      expect(sum(await scrape(), 'intake_relay_input_connections_rejected_total{intake="fw",input="fw-tcp",reason="max_connections"}')).toBe(1);
    }, { timeout: 10_000 });

    const text = await scrape();
    const lint = promtool(['check', 'metrics'], text);
    expect(lint.out).toBe('');
    expect(lint.code).toBe(0);

    // Every metric of the dashboard has samples, the opt-in per-sender ones included (senders:
    // above), but for counters of what this run does not provoke (a lost connection, a failed send,
    // a full queue): they have no series until it happens, only their # TYPE line, which is enough
    // for a panel (it draws nothing then).
    const sampled = new Set(samplesOf(text).map((l) => /^[a-z_:]+/.exec(l)?.[0]));
    const declared = new Set([...text.matchAll(/^# TYPE (\S+) counter$/gm)].map((m) => m[1]));
    const notProvoked = ['intake_relay_events_resent_total', 'intake_relay_output_retries_total', 'intake_relay_output_errors_total', 'intake_relay_input_pauses_total'];
    const fromDashboard = [...new Set(dashboardExprs().flatMap((e) => metricNames(e.expr)))];
    expect(fromDashboard.length).toBeGreaterThan(20);
    expect(fromDashboard.filter((n) => !sampled.has(n) && !(notProvoked.includes(n) && declared.has(n)))).toEqual([]);
  });
});
