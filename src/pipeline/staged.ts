// A new intake whose disk queue directory is still a removed intake's, draining (a reload renamed
// it, or took it away and added it back): a memory stage takes its events meanwhile (its senders
// wait), handed over to its queue once that opens.

import type { ResolvedIntake, ResolvedQueue } from '../config/resolve.ts';
import type { Target } from '../core/component.ts';
import { BoundedQueue } from '../core/queue.ts';
import { FilterSet } from '../routing/filters.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { Pipeline } from './pipeline.ts';

export class Staged {
  readonly intake: ResolvedIntake;
  readonly target: Target;
  constructor(intake: ResolvedIntake) {
    this.intake = intake;
    const q = intake.queue as Extract<ResolvedQueue, { type: 'disk' }>;
    const queue = new BoundedQueue({ maxEvents: q.memory_events, maxBytes: Math.min(q.memory_bytes, q.max_bytes), whenFull: 'block' });
    this.target = { intake: intake.name, intakeKey: intake.intakeKey, queue, filters: new FilterSet(intake.filters) };
  }

  get name(): string {
    return this.intake.name;
  }
}

/**
 * What the memory stage of `s` holds goes to the queue of `to`, in order, each part settled once
 * safe there; with no queue to go to (the intake could not open), dropped and counted.
 */
export async function handOver(s: Staged, to: Pipeline | undefined, metrics: Metrics): Promise<void> {
  const from = s.target.queue;
  const all = { maxEvents: Number.MAX_SAFE_INTEGER, maxBytes: Number.MAX_SAFE_INTEGER, lingerMs: 0 };
  while (from.pendingEvents > 0) {
    const b = await from.take(all, AbortSignal.timeout(1_000));
    if (!b) continue;
    from.release(b);
    if (!to) {
      metrics.eventsDropped.inc({ intake: s.intake.name, stage: 'queue', reason: 'shutdown' }, b.events.length);
      from.settle(b.seq, b.events.length);
      continue;
    }
    // Its senders were told to wait: the queue takes them all, whatever its when_full.
    to.queue.offer([...b.events], b.bytes, 'wait');
    const end = to.queue.nextSeq;
    void to.queue.untilSafe(end).then(() => from.settle(b.seq, b.events.length));
  }
  from.close();
}
