// What a stop did with the events it had: delivered while it drained, kept in disk queues for the
// next start, lost from memory queues (counted as dropped, reason shutdown). Each thread reports
// its own; the process adds them up and says it in its last log line.

export interface IntakeStop {
  readonly delivered: number;
  readonly kept: number;
  readonly lost: number;
}

export interface StopReport extends IntakeStop {
  readonly perIntake: Readonly<Record<string, IntakeStop>>;
}

export const NOTHING: StopReport = { delivered: 0, kept: 0, lost: 0, perIntake: {} };

/** Several threads' (or intakes') reports as one. */
export function addStops(reports: readonly StopReport[]): StopReport {
  const perIntake: Record<string, IntakeStop> = {};
  let delivered = 0;
  let kept = 0;
  let lost = 0;
  for (const r of reports) {
    delivered += r.delivered;
    kept += r.kept;
    lost += r.lost;
    for (const [name, s] of Object.entries(r.perIntake)) {
      const a = perIntake[name];
      perIntake[name] = a ? { delivered: a.delivered + s.delivered, kept: a.kept + s.kept, lost: a.lost + s.lost } : s;
    }
  }
  return { delivered, kept, lost, perIntake };
}

/** The process's last line: what it delivered, kept and lost, each counted. */
export function stopLine(r: StopReport): { readonly level: 'info' | 'warn' | 'error'; readonly fields: Record<string, unknown>; readonly message: string } {
  const fields = { delivered: r.delivered, kept: r.kept, lost: r.lost, per_intake: r.perIntake };
  if (r.lost > 0) {
    return { level: 'error', fields, message: `Stopped: ${r.lost} events could not be delivered before the shutdown timeout and are lost (memory queues; counted as dropped, reason shutdown); ${r.kept} kept in disk queues for the next start; ${r.delivered} delivered while stopping.` };
  }
  if (r.kept > 0) {
    return { level: 'warn', fields, message: `Stopped: ${r.kept} events kept in disk queues for the next start (not delivered before the shutdown timeout); ${r.delivered} delivered while stopping; none lost.` };
  }
  return { level: 'info', fields, message: `Stopped: every queued event was delivered (${r.delivered} while stopping).` };
}
