// Runs a relay (runtime/relay.ts) in-process from YAML text, captures its logs, reads its metrics.

import { Writable } from 'node:stream';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../src/config/load.ts';
import { Relay } from '../../src/runtime/relay.ts';
import { createLogger } from '../../src/telemetry/log.ts';
import { Metrics } from '../../src/telemetry/metrics.ts';
import type { Registry } from 'prom-client';
import type { StopReport } from '../../src/pipeline/stop-report.ts';

export const FIXTURES = new URL('../fixtures/', import.meta.url).pathname;
export const TLS = `${FIXTURES}tls/`;
export const TEST_KEY = 'AbCdEfGh0123456789IjKlMnOpQrStUv';

export interface RunningRelay {
  readonly daemon: Relay;
  readonly logs: Record<string, unknown>[];
  readonly logText: () => string;
  port(intake: string, input: string): number;
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  stop(): Promise<StopReport>;
}

export async function startRelay(yaml: string, env: NodeJS.ProcessEnv = {}): Promise<RunningRelay> {
  const dir = mkdtempSync(join(tmpdir(), 'relay-test-'));
  const file = join(dir, 'config.yaml');
  writeFileSync(file, yaml);
  const config = parseConfig(yaml, file, env);
  const logs: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      const s = chunk.toString();
      raw.push(s);
      for (const line of s.split('\n')) if (line) logs.push(JSON.parse(line) as Record<string, unknown>);
      cb();
    },
  });
  const daemon = new Relay(config, createLogger(config.log_level, sink), new Metrics(false));
  await daemon.start();
  return {
    daemon,
    logs,
    logText: () => raw.join(''),
    port(intake, input) {
      const p = daemon.topology.inputPort(intake, input);
      if (p === undefined) throw new Error(`no input ${intake}/${input}`);
      return p;
    },
    // With workers, every thread's metrics added up, as /metrics shows them.
    metric: async (name, labels) => registryValue(await daemon.view.gather(), name, labels),
    stop: () => daemon.stop(),
  };
}

/** The text of a logged error: pino writes an `err` object as { type, message, stack, ... }. */
export function errText(line: Record<string, unknown> | undefined): string {
  const err = line?.err;
  return typeof err === 'object' && err !== null && 'message' in err ? String(err.message) : String(err);
}

/** Sum of a metric's values over the series matching `labels`. */
export function metricValue(metrics: Metrics, name: string, labels: Record<string, string> = {}): Promise<number> {
  return registryValue(metrics.registry, name, labels);
}

async function registryValue(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = registry.getSingleMetric(name);
  if (!m) throw new Error(`no metric ${name}`);
  const { values } = await m.get();
  let sum = 0;
  for (const v of values) {
    if (Object.entries(labels).every(([k, want]) => String((v.labels as Record<string, unknown>)[k]) === want)) sum += v.value;
  }
  return sum;
}

/**
 * The books of one intake: received = sent + dropped + queued + unacknowledged, where received
 * includes what a disk queue held at start. Every delivery test checks it.
 */
export async function books(relay: RunningRelay, intake: string) {
  const received = (await relay.metric('intake_relay_events_received_total', { intake })) + (await relay.metric('intake_relay_disk_queue_recovered_events_total', { intake }));
  const sent = await relay.metric('intake_relay_events_sent_total', { intake });
  const dropped = await relay.metric('intake_relay_events_dropped_total', { intake });
  const queued = await relay.metric('intake_relay_queue_events', { intake });
  const unacked = await relay.metric('intake_relay_output_unacked_events', { intake });
  return { received, sent, dropped, queued, unacked, balanced: received === sent + dropped + queued + unacked };
}
