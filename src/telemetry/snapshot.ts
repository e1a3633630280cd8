// One reading of a running relay for a person watching it (`intake-relay top`, the backlog watch):
// per intake, per input and per thread, the counters and gauges it needs, all taken at one instant
// from the metrics (every thread's, added up) and the intakes' health. Counters are totals since the
// start; a reader makes rates from two snapshots and their `at`. Served as JSON on /snapshot so a
// client does not parse the Prometheus text. Names only: never a key.

import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import type { IntakeHealth } from './ops-server.ts';

export interface IntakeSnapshot {
  readonly name: string;
  readonly output: string;
  /** connected, starting, retrying, key_rejected, stopped. */
  readonly state: string;
  readonly stalled: boolean;
  /** Its queue takes events (false: full under when_full: block, inputs paused or refusing). */
  readonly accepting: boolean;
  /** Totals since the start. */
  readonly received: number;
  readonly sent: number;
  readonly resent: number;
  readonly filtered: number;
  /** Events that will never be delivered, by reason. */
  readonly dropped: Readonly<Record<string, number>>;
  readonly queued_events: number;
  readonly queued_bytes: number;
  /** The memory queue's max_events (null for a disk queue: it is bounded by bytes). */
  readonly max_events: number | null;
  readonly max_bytes: number | null;
  /** Written to the intake, not acknowledged yet. */
  readonly unacked_events: number;
  readonly oldest_age_seconds: number;
  readonly last_error: string | null;
}

export interface InputSnapshot {
  /** Its intake, or '' for a shared listener. */
  readonly intake: string;
  readonly input: string;
  /** Events it received, to any intake. */
  readonly received: number;
  /** Open connections (stream inputs; 0 for the others). */
  readonly connections: number;
  /** Datagrams the kernel dropped (UDP inputs; null for the others). */
  readonly kernel_drops: number | null;
  readonly silent_senders: number;
}

export interface Snapshot {
  /** When it was taken (ms since the epoch). */
  readonly at: number;
  readonly version: string;
  readonly phase: string;
  readonly intakes: readonly IntakeSnapshot[];
  readonly inputs: readonly InputSnapshot[];
  /** Each thread's share of the last second spent busy (0 to 1). */
  readonly threads: readonly { readonly thread: string; readonly utilization: number }[];
}

type Metric = MetricObjectWithValues<MetricValue<string>>;
type Labels = Readonly<Partial<Record<string, string | number>>>;

/**
 * The metrics a snapshot is made of, and no others: the relay reads just these every few seconds
 * (views.ts), not the whole registry (whose process metrics read /proc and walk histograms). The
 * readers below take only these names, so a snapshot cannot use one that is not read.
 */
export const SNAPSHOT_METRICS = [
  'intake_relay_events_received_total', 'intake_relay_events_sent_total', 'intake_relay_events_resent_total',
  'intake_relay_events_filtered_total', 'intake_relay_events_dropped_total',
  'intake_relay_queue_bytes', 'intake_relay_queue_max_events', 'intake_relay_queue_max_bytes',
  'intake_relay_queue_oldest_event_age_seconds', 'intake_relay_disk_queue_events', 'intake_relay_disk_queue_bytes',
  'intake_relay_senders', 'intake_relay_senders_silent', 'intake_relay_input_connections',
  'intake_relay_udp_kernel_drops_total', 'intake_relay_thread_utilization',
] as const;
type SnapshotMetric = (typeof SNAPSHOT_METRICS)[number];

/** The values of one metric, by name, with their labels (none when the metric is absent). */
function series(metrics: readonly Metric[], name: SnapshotMetric): readonly { readonly labels: Labels; readonly value: number }[] {
  return metrics.find((m) => m.name === name)?.values ?? [];
}

/** The sum of a metric's values whose labels match `where`. */
function sum(metrics: readonly Metric[], name: SnapshotMetric, where: Labels): number {
  let n = 0;
  for (const v of series(metrics, name)) if (Object.entries(where).every(([k, x]) => v.labels[k] === x)) n += v.value;
  return n;
}

/** The value of a gauge with these labels, or null when it has none. */
function gauge(metrics: readonly Metric[], name: SnapshotMetric, where: Labels): number | null {
  const v = series(metrics, name).find((s) => Object.entries(where).every(([k, x]) => s.labels[k] === x));
  return v ? v.value : null;
}

/** A snapshot from the metrics (every thread's, added up) and the intakes' health, taken `at`. */
export function snapshotOf(metrics: readonly Metric[], health: readonly IntakeHealth[], o: { readonly at: number; readonly version: string; readonly phase: string }): Snapshot {
  const intakes = health.map((h): IntakeSnapshot => {
    const intake = { intake: h.name };
    const dropped: Record<string, number> = {};
    for (const v of series(metrics, 'intake_relay_events_dropped_total')) {
      if (v.labels.intake !== h.name || v.value === 0) continue;
      const reason = String(v.labels.reason);
      dropped[reason] = (dropped[reason] ?? 0) + v.value;
    }
    const disk = gauge(metrics, 'intake_relay_disk_queue_events', intake) !== null;
    return {
      name: h.name,
      output: h.output,
      state: h.state,
      stalled: h.stalled,
      accepting: h.accepting,
      received: sum(metrics, 'intake_relay_events_received_total', intake),
      sent: sum(metrics, 'intake_relay_events_sent_total', intake),
      resent: sum(metrics, 'intake_relay_events_resent_total', intake),
      filtered: sum(metrics, 'intake_relay_events_filtered_total', intake),
      dropped,
      queued_events: h.queuedEvents,
      queued_bytes: disk ? sum(metrics, 'intake_relay_disk_queue_bytes', intake) : sum(metrics, 'intake_relay_queue_bytes', intake),
      max_events: disk ? null : gauge(metrics, 'intake_relay_queue_max_events', intake),
      max_bytes: gauge(metrics, 'intake_relay_queue_max_bytes', intake),
      unacked_events: h.unackedEvents,
      oldest_age_seconds: gauge(metrics, 'intake_relay_queue_oldest_event_age_seconds', intake) ?? 0,
      last_error: h.lastError ?? null,
    };
  });
  // Each input once, with its owner: its intake, or '' for a shared listener (whose events are
  // counted under the intakes it routed them to).
  const rows = new Map<string, { readonly intake: string; readonly input: string }>();
  for (const name of ['intake_relay_senders', 'intake_relay_input_connections'] as const) {
    for (const v of series(metrics, name)) {
      const row = { intake: String(v.labels.intake ?? ''), input: String(v.labels.input ?? '') };
      if (row.input) rows.set(`${row.intake}\0${row.input}`, row);
    }
  }
  const own = (intake: string, input: string): boolean => rows.has(`${intake}\0${input}`);
  const inputs = [...rows.values()].map(({ intake, input }): InputSnapshot => {
    const where = { intake, input };
    let received = 0;
    for (const v of series(metrics, 'intake_relay_events_received_total')) {
      if (v.labels.input !== input) continue;
      if (intake ? v.labels.intake === intake : !own(String(v.labels.intake), input)) received += v.value;
    }
    const udp = series(metrics, 'intake_relay_udp_kernel_drops_total').some((v) => v.labels.input === input && v.labels.intake === intake);
    return {
      intake,
      input,
      received,
      connections: sum(metrics, 'intake_relay_input_connections', where),
      kernel_drops: udp ? sum(metrics, 'intake_relay_udp_kernel_drops_total', where) : null,
      silent_senders: sum(metrics, 'intake_relay_senders_silent', where),
    };
  });
  const threads = series(metrics, 'intake_relay_thread_utilization').map((v) => ({ thread: String(v.labels.thread), utilization: v.value }));
  return { at: o.at, version: o.version, phase: o.phase, intakes, inputs, threads };
}
