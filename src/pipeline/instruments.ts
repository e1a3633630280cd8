// The telemetry components report through (core/telemetry.ts), bound to their labels: counters and
// gauges from the one metrics registry, and rate-limited logs from a child logger.

import type { Logger } from 'pino';
import type { CounterName, CounterReader, OutputTelemetry, SenderSightings, InletTelemetry } from '../core/telemetry.ts';
import type { Registry } from 'prom-client';
import type { Metrics } from '../telemetry/metrics.ts';
import { componentLog } from '../telemetry/component-log.ts';
import type { SenderTable } from './senders.ts';

export function outputTelemetry(m: Metrics, log: Logger, intake: string, output: string): OutputTelemetry {
  const labels = { intake, output };
  const sent = m.eventsSent.labels(labels);
  const bytes = m.bytesSent.labels(labels);
  const resent = m.eventsResent.labels(labels);
  const retries = m.outputRetries.labels(labels);
  const connected = m.outputConnected.labels(labels);
  const connects = m.outputReconnects.labels(labels);
  const resumedConnects = m.outputTlsResumed.labels(labels);
  const keyRejected = m.outputKeyRejected.labels(labels);
  const lastDelivery = m.lastDelivery.labels(labels);
  const duration = m.sendDuration.labels(labels);
  const batchEvents = m.batchEvents.labels(labels);
  const limit = m.concurrencyLimit.labels(labels);
  const inFlight = m.inFlight.labels(labels);
  return {
    log: componentLog(log, labels),
    acknowledged(events, at) {
      sent.inc(events);
      lastDelivery.set(at / 1000);
    },
    wrote: (n) => bytes.inc(n),
    resent: (n) => resent.inc(n),
    error: (code) => m.outputErrors.inc({ intake, output, code }),
    retried: () => retries.inc(),
    dropped: (reason, events) => m.eventsDropped.inc({ intake, stage: 'output', reason }, events),
    cut: (events) => m.eventsModified.inc({ intake, reason: 'intake_limit' }, events),
    connected: (up) => connected.set(up ? 1 : 0),
    reconnected(resumed) {
      connects.inc();
      if (resumed) resumedConnects.inc();
    },
    keyRejected: (on) => keyRejected.set(on ? 1 : 0),
    sendSeconds: (s) => duration.observe(s),
    batchEvents: (n) => batchEvents.observe(n),
    concurrency: (n) => limit.set(n),
    inFlight: (n) => inFlight.set(n),
    suspended: () => m.outputSuspended.inc(labels),
    resumed: () => m.outputResumed.inc(labels),
    suspendedFor: (s) => m.outputSuspendedSeconds.inc(labels, s),
  };
}



/** The counting of a source's Inlet: per intake its events reach, labelled with the source's name. */
export function inletTelemetry(m: Metrics, input: string): InletTelemetry {
  const counters = (intake: string) => ({ received: m.eventsReceived.labels({ intake, input }), bytes: m.bytesReceived.labels({ intake, input }) });
  const perIntake = new Map<string, ReturnType<typeof counters>>();
  const of = (intake: string): ReturnType<typeof counters> => {
    let c = perIntake.get(intake);
    if (!c) perIntake.set(intake, (c = counters(intake)));
    return c;
  };
  return {
    received(intake, events, bytes) {
      const c = of(intake);
      c.received.inc(events);
      c.bytes.inc(bytes);
    },
    dropped: (intake, reason, events) => m.eventsDropped.inc({ intake, stage: 'input', reason }, events),
    filtered: (intake, rule) => m.eventsFiltered.inc({ intake, rule }),
    unrouted: (reason, events) => m.routeDropped.inc({ listener: input, reason }, events),
  };
}

const COUNTERS: Record<CounterName, string> = {
  events_sent: 'intake_relay_events_sent_total',
  events_dropped: 'intake_relay_events_dropped_total',
  events_received: 'intake_relay_events_received_total',
  bytes_sent: 'intake_relay_bytes_sent_total',
  output_suspended: 'intake_relay_output_suspended_total',
  output_resumed: 'intake_relay_output_resumed_total',
  output_suspended_seconds: 'intake_relay_output_suspended_seconds_total',
};

/** The counters the forwarder statistics read, from `registry` (with workers: every thread's, added up). */
export function counterReader(registry: () => Promise<Registry>): CounterReader {
  return {
    async read() {
      const all = await (await registry()).getMetricsAsJSON();
      return {
        total(counter, want) {
          let sum = 0;
          for (const v of all.find((m) => m.name === COUNTERS[counter])?.values ?? []) {
            if (Object.entries(want).every(([k, x]) => String((v.labels as Record<string, unknown>)[k]) === x)) sum += v.value;
          }
          return sum;
        },
      };
    },
  };
}

/** Where an input's senders are counted: by address (`by: 'address'`) or by each event's HOSTNAME. */
export function senderSightings(senders: SenderTable, by: 'address' | 'hostname'): SenderSightings {
  const none = (): void => {};
  return by === 'address'
    ? { from: (from, events, bytes, at) => senders.seen(from, events, bytes, at), hosts: none }
    : { from: none, hosts: (events, at) => senders.seenHosts(events, at) };
}
