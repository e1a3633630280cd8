// The HTTP input's telemetry (core/telemetry.ts) from the metrics registry, bound to its
// listener: the same metrics, names and labels the input updated itself before it had one.

import type { Logger } from 'pino';
import type { HttpInputTelemetry, SenderSightings } from '../../core/telemetry.ts';
import { REASONS } from './error.ts';
import type { Metrics } from '../../telemetry/metrics.ts';
import { componentLog } from '../../telemetry/component-log.ts';

export function httpInputTelemetry(m: Metrics, log: Logger, listener: string, seen: SenderSightings): HttpInputTelemetry {
  // Every reason at 0 from the start, so that rate() alerts have a series before the first refusal.
  for (const reason of REASONS) m.httpInputRefused.inc({ listener, reason }, 0);
  return {
    log: componentLog(log, { listener }),
    refused: (reason) => m.httpInputRefused.inc({ listener, reason }),
    rejected: (reason) => m.connectionsRejected.inc({ intake: '', input: listener, reason }),
    healthCheck: () => m.proxyHealthChecks.inc({ intake: '', input: listener }),
    answered: (status) => m.httpInputRequests.inc({ listener, status: String(status) }),
    inflightBytes(read) {
      const dispose = m.addProbe(() => m.httpInputInflightBytes.set({ listener }, read()));
      return () => {
        dispose();
        // The listener is gone (stopped, or replaced by a reload): its series goes with it.
        m.httpInputInflightBytes.remove({ listener });
      };
    },
    modified: (intake, reason, events) => m.eventsModified.inc({ intake, input: listener, reason }, events),
    senders: seen,
  };
}
