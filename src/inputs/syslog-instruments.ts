// The telemetry of the listening syslog inputs (UDP, TCP/TLS) and of RELP inputs (core/telemetry.ts),
// bound to their labels: counters and gauges from the one metrics registry, and rate-limited logs.

import type { Logger } from 'pino';
import type { RelpInputTelemetry, SenderSightings, SyslogInputTelemetry } from '../core/telemetry.ts';
import { componentLog } from '../telemetry/component-log.ts';
import type { Metrics } from '../telemetry/metrics.ts';

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
