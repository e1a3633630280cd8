// An intake's queue from its configuration: memory, or disk (opened, checked and repaired now,
// before anything listens), with the disk queue's errors, damage and recovery logged and counted.

import type { Logger } from 'pino';
import { RelayError } from '../core/errors.ts';
import type { ResolvedIntake } from '../config/resolve.ts';
import { DiskQueue, type DiskQueueOp } from '../core/disk-queue.ts';
import { BoundedQueue } from '../core/queue.ts';
import { type EventQueue } from '../core/event-queue.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { componentLog } from '../telemetry/component-log.ts';

/** What a disk queue's I/O error means for the operator, by what failed. */
const DISK_QUEUE_ERROR: Record<DiskQueueOp, (code: string) => string> = {
  write: (code) => (code === 'ENOSPC'
    ? 'Disk queue: the disk is full. The queue counts as full until space returns.'
    : 'Disk queue: cannot write. The queue counts as full until writing works again.'),
  read: () => 'Disk queue: cannot read queued events back; they stay on disk and the read is retried.',
  delete: () => 'Disk queue: cannot remove delivered segments; they take disk space until the removal, retried, works.',
  state: () => 'Disk queue: cannot save how far delivery got (settled.json); retried. After a crash before it is saved, events since the last save are sent again.',
};

export function openQueue(intake: ResolvedIntake, m: Metrics, log: Logger): { queue: EventQueue; dispose(): void } {
  const q = intake.queue;
  if (q.type === 'memory') return { queue: new BoundedQueue({ maxEvents: q.max_events, maxBytes: q.max_bytes, whenFull: q.when_full }), dispose: () => {} };
  const name = intake.name;
  const l = componentLog(log, { intake: name, path: q.path });
  let queue: DiskQueue;
  try {
    queue = new DiskQueue(
      { dir: q.path, maxBytes: q.max_bytes, whenFull: q.when_full, memoryEvents: q.memory_events, memoryBytes: q.memory_bytes, segmentBytes: q.segment_bytes, fsyncIntervalMs: q.fsync_interval_ms },
      {
        onError: (err, op) => {
          const code = err.code ?? 'EIO';
          m.diskQueueErrors.inc({ intake: name, code });
          l.error(`${op}:${code}`, err, { code, op }, DISK_QUEUE_ERROR[op](code));
        },
        onLost: (n) => {
          m.eventsDropped.inc({ intake: name, stage: 'queue', reason: 'corrupt' }, n);
          l.logger.error({ events: n }, 'Disk queue: events in a damaged part of a segment were skipped.');
        },
        onWrite: (n) => m.diskQueueWritten.inc({ intake: name }, n),
        onSync: (n) => m.diskQueueSynced.inc({ intake: name }, n),
      },
    );
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new RelayError('ERELAY_STATE', `Disk queue of intake "${name}": cannot use ${q.path}: ${e.code ?? e.message}. Check queue.path or data_dir and their permissions.`, { cause: err });
  }
  const r = queue.recovery;
  if (r.tornBytes > 0) l.logger.warn({ bytes: r.tornBytes }, 'Disk queue: an incomplete last write (a crash mid-write) was cut off.');
  if (r.damaged.length > 0) l.logger.error({ set_aside: r.damaged.map((d) => d.file), events: r.damaged.reduce((n, d) => n + d.events, 0) }, 'Disk queue: damaged parts were set aside; the rest will be delivered.');
  if (queue.recovered > 0) {
    m.diskQueueRecovered.inc({ intake: name }, queue.recovered);
    l.logger.info({ events: queue.recovered }, 'Disk queue: events not delivered before the last stop will be delivered now.');
  }
  const gauges = { bytes: m.diskQueueBytes.labels({ intake: name }), events: m.diskQueueEvents.labels({ intake: name }), age: m.diskQueueOldestAge.labels({ intake: name }) };
  const dispose = m.addProbe(() => {
    gauges.bytes.set(queue.diskBytes);
    gauges.events.set(queue.diskEvents);
    gauges.age.set(queue.oldestAgeMs() / 1000);
  });
  return { queue, dispose };
}
