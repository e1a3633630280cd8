// The telemetry components report through (core/telemetry.ts), bound to their labels: counters and
// gauges from the one metrics registry, and rate-limited logs from a child logger.

import type { Logger } from 'pino';
import type { CounterName, CounterReader, HttpOutputTelemetry, Instruments, OutputTelemetry, SenderSightings, InletTelemetry, SyslogInputTelemetry, RelpInputTelemetry } from '../core/telemetry.ts';
import type { InputInstruments } from '../core/component.ts';
import type { Registry } from 'prom-client';
import type { Metrics } from '../telemetry/metrics.ts';
import { componentLog } from './component-log.ts';
import { fileTelemetry } from './file-instruments.ts';
import { httpInputTelemetry } from './http-instruments.ts';
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

export function httpOutputTelemetry(m: Metrics, intake: string): HttpOutputTelemetry {
  const classes = {
    '2xx': m.httpRequests.labels({ intake, status_class: '2xx' }),
    '4xx': m.httpRequests.labels({ intake, status_class: '4xx' }),
    '5xx': m.httpRequests.labels({ intake, status_class: '5xx' }),
    other: m.httpRequests.labels({ intake, status_class: 'other' }),
    error: m.httpRequests.labels({ intake, status_class: 'error' }),
  };
  const body = m.httpBodyBytes.labels({ intake });
  const duration = m.httpRequestDuration.labels({ intake });
  return {
    request: (c) => classes[c].inc(),
    bodyBytes: (n) => body.inc(n),
    requestSeconds: (s) => duration.observe(s),
  };
}

/** The instruments of the components of intake `intake` (its output, its inputs). */
export function intakeInstruments(m: Metrics, intake: string): Instruments {
  return {
    httpOutput: () => httpOutputTelemetry(m, intake),
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

/**
 * A listening syslog input's telemetry. `owner` is its intake, or '' for a shared listener: what
 * happens before routing (repairs, oversized frames) is counted under the intake of a plain input
 * and under the listener for a shared one.
 */
export function syslogInputTelemetry(m: Metrics, log: Logger, owner: string, input: string, seen: SenderSightings): SyslogInputTelemetry {
  const labels = { intake: owner, input };
  const modified = {
    invalid_utf8: m.eventsModified.labels({ ...labels, reason: 'invalid_utf8' }),
    invalid_header: m.eventsModified.labels({ ...labels, reason: 'invalid_header' }),
    truncated: m.eventsModified.labels({ ...labels, reason: 'truncated' }),
    split: m.eventsModified.labels({ ...labels, reason: 'split' }),
  };
  const oversize = m.framingErrors.labels({ ...labels, reason: 'too_large' });
  const paused = m.inputPaused.labels(labels);
  const connections = m.connections.labels(labels);
  const probes: (() => void)[] = [];
  return {
    log: componentLog(log, owner ? labels : { input }),
    modified: (reason, events) => modified[reason].inc(events),
    senders: seen,
    tooLarge(events) {
      oversize.inc(events);
      if (owner) {
        m.eventsDropped.inc({ intake: owner, stage: 'input', reason: 'too_large' }, events);
        m.eventsReceived.inc(labels, events);
      } else {
        m.routeDropped.inc({ listener: input, reason: 'too_large' }, events);
      }
    },
    paused: () => paused.inc(),
    listening: () => connections.set(0),
    connection: (open) => (open ? connections.inc() : connections.dec()),
    rejected: (reason) => m.connectionsRejected.inc({ ...labels, reason }),
    healthCheck: () => m.proxyHealthChecks.inc(labels),
    receiveDropped: (n) => m.udpReceiveDrops.inc(labels, n),
    watchKernelDrops(read) {
      // One socket at a time (a source started again reads its new socket's count).
      for (const p of probes.splice(0)) p();
      const drops = m.udpKernelDrops.labels(labels);
      // At 0 from the start, so that increase() sees the first drops.
      drops.inc(0);
      let seen: number | undefined;
      probes.push(m.addProbe(() => {
        const now = read();
        if (now === undefined) return;
        // The first reading is the socket's own count since it was opened.
        if (now > (seen ?? 0)) drops.inc(now - (seen ?? 0));
        seen = now;
      }));
    },
    dispose: () => {
      for (const p of probes.splice(0)) p();
    },
  };
}

/** A RELP input's: a syslog input's, and its answers by code (both pre-created at 0) and protocol errors. */
export function relpInputTelemetry(m: Metrics, log: Logger, owner: string, input: string, seen: SenderSightings): RelpInputTelemetry {
  const labels = { intake: owner, input };
  const answers = { '200': m.relpAnswers.labels({ ...labels, code: '200' }), '500': m.relpAnswers.labels({ ...labels, code: '500' }) };
  answers['200'].inc(0);
  answers['500'].inc(0);
  const opens = m.relpOpens.labels(labels);
  opens.inc(0);
  const protocol = m.framingErrors.labels({ ...labels, reason: 'relp_protocol' });
  protocol.inc(0);
  return {
    ...syslogInputTelemetry(m, log, owner, input, seen),
    answered: (code, n) => answers[code].inc(n),
    opened: (n) => opens.inc(n),
    protocolError: () => protocol.inc(),
  };
}

/**
 * The telemetry of a source named `input`, of intake `owner` ('' for a shared listener). Its
 * senders go to `senders` by address (`by: 'address'`) or by each event's HOSTNAME.
 */
export function inputInstruments(m: Metrics, log: Logger, owner: string, input: string, senders: SenderTable, by: 'address' | 'hostname'): InputInstruments {
  const none = (): void => {};
  const seen: SenderSightings = by === 'address'
    ? { from: (from, events, bytes, at) => senders.seen(from, events, bytes, at), hosts: none }
    : { from: none, hosts: (events, at) => senders.seenHosts(events, at) };
  return {
    syslog: () => syslogInputTelemetry(m, log, owner, input, seen),
    relp: () => relpInputTelemetry(m, log, owner, input, seen),
    http: () => httpInputTelemetry(m, log, input, seen),
    file: () => fileTelemetry(m, log, owner, input, seen),
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
