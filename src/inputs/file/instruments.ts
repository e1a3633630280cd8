// The file input's telemetry (core/telemetry.ts) from the metrics registry, bound to its
// intake and input: the same metrics, names and labels the input updated itself before it had one.

import type { Logger } from 'pino';
import type { FileTelemetry, SenderSightings } from '../../core/telemetry.ts';
import type { Metrics } from '../../telemetry/metrics.ts';
import { componentLog } from '../../telemetry/component-log.ts';

export function fileTelemetry(m: Metrics, log: Logger, intake: string, input: string, seen: SenderSightings): FileTelemetry {
  const labels = { intake, input };
  const received = m.eventsReceived.labels(labels);
  const tooLarge = m.eventsDropped.labels({ intake, stage: 'input', reason: 'too_large' });
  return {
    // A file that keeps failing logs once a minute, as before this input had a telemetry of its own.
    log: componentLog(log, labels, 60_000),
    modified: (reason, events) => m.eventsModified.inc({ ...labels, reason }, events),
    tooLarge(events) {
      // A dropped line was received too: the books balance (received = sent + dropped + buffered).
      tooLarge.inc(events);
      received.inc(events);
    },
    senders: seen,
    rotated: (kind) => m.fileRotations.inc({ ...labels, kind }),
    error: (reason) => m.fileErrors.inc({ ...labels, reason }),
    watchFiles(read) {
      const tracked = m.filesTracked.labels(labels);
      const open = m.filesOpen.labels(labels);
      const unread = m.fileUnreadBytes.labels(labels);
      return m.addProbe(() => {
        const g = read();
        tracked.set(g.tracked);
        open.set(g.open);
        unread.set(g.unread);
      });
    },
  };
}
