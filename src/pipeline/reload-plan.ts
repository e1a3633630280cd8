// What a reload changes, worked out from the configuration in force and the new one, before
// anything is touched: a pure function, unit-tested on its own. Intakes are matched by name (any
// case), inputs by label within their intake, listeners by label; a component whose configuration
// is unchanged is kept with its connections, one that changed is closed and opened again.

import type { Config, ResolvedIntake, ResolvedQueue } from '../config/resolve.ts';
import type { ResolvedListener } from '../inputs/registry.ts';

/** Kept, restarted (changed), added and removed members of a set of components, by label. */
export interface Diff {
  readonly keep: readonly string[];
  readonly restart: readonly string[];
  readonly add: readonly string[];
  readonly remove: readonly string[];
}

export interface IntakeChange {
  readonly name: string;
  readonly next: ResolvedIntake;
  readonly filters: boolean;
  /** same; limits: new limits applied in place; restart: only a restart can apply it (reported). */
  readonly queue: 'same' | 'limits' | 'restart';
  /** A new output (key, endpoint, TLS, batching changed) takes over the queue. */
  readonly output: boolean;
  readonly inputs: Diff;
}

export interface ReloadPlan {
  /** Intakes that go: their inputs stop at once, their queues drain in the background. */
  readonly removed: readonly string[];
  readonly added: readonly ResolvedIntake[];
  /** Intakes in both configurations, changed or not. */
  readonly kept: readonly IntakeChange[];
  readonly listeners: Diff;
  /** The forwarder statistics are set up again. */
  readonly stats: boolean;
  /** What only a restart applies; these stay as they are. */
  readonly notApplied: readonly string[];
}

export interface ReloadReport {
  readonly added: string[];
  readonly removed: string[];
  readonly changed: string[];
  /** Inputs and listeners closed and opened again (their configuration changed). */
  readonly restarted: string[];
  /** Settings a reload cannot change (a restart applies them). */
  readonly notApplied: string[];
  /** Inputs or listeners that could not start. */
  readonly failed: string[];
}

/** A report of nothing changed (a reload that could not begin, or a thread that could not answer), to add to. */
export function emptyReport(): ReloadReport {
  return { added: [], removed: [], changed: [], restarted: [], notApplied: [], failed: [] };
}

const json = (v: unknown): string => JSON.stringify(v);
/** What a new output (runner + sink) is needed for. */
// The emulator's output takes its window from the intake's share of memory_bytes, not from i.output.
const outputKey = (i: ResolvedIntake): string => json([i.intakeKey, i.output, i.batch, i.toEmulator, i.toEmulator ? i.memory : null]);

export function planReload(old: Config, next: Config): ReloadPlan {
  const notApplied: string[] = [];
  for (const k of ['metrics', 'emulator', 'dataDir'] as const) if (json(old[k]) !== json(next[k])) notApplied.push(k === 'dataDir' ? 'data_dir' : k);
  const before = new Map(old.intakes.map((i) => [i.name.toLowerCase(), i]));
  const after = new Set(next.intakes.map((i) => i.name.toLowerCase()));
  const kept: IntakeChange[] = [];
  const added: ResolvedIntake[] = [];
  for (const n of next.intakes) {
    const o = before.get(n.name.toLowerCase());
    if (!o) {
      added.push(n);
      continue;
    }
    const queue = queueChange(o, n, notApplied);
    kept.push({
      name: n.name,
      next: n,
      filters: json(o.filters) !== json(n.filters),
      queue,
      output: outputKey(o) !== outputKey(n),
      inputs: diff(o.inputs, n.inputs),
    });
  }
  return {
    removed: old.intakes.filter((i) => !after.has(i.name.toLowerCase())).map((i) => i.name),
    added,
    kept,
    listeners: diff<ResolvedListener>(old.listeners, next.listeners),
    stats: json(old.stats) !== json(next.stats),
    notApplied,
  };
}

/** Whether an intake changed at all (filters, queue limits, output, or its inputs). */
export function changed(c: IntakeChange): boolean {
  return c.filters || c.queue === 'limits' || c.output;
}

/**
 * The queue settings in force after a reload: the new ones, less what only a restart applies (a
 * queue's type or path; a disk queue's memory stage, segments and fsync). Kept on the intake, so
 * that the next reload still reports the difference and the workers follow the queue that runs.
 */
export function queueInForce(o: ResolvedQueue, n: ResolvedQueue): ResolvedQueue {
  if (o.type !== n.type || (o.type === 'disk' && n.type === 'disk' && o.path !== n.path)) return o;
  if (o.type === 'disk' && n.type === 'disk') {
    return { ...n, memory_events: o.memory_events, memory_bytes: o.memory_bytes, segment_bytes: o.segment_bytes, fsync_interval_ms: o.fsync_interval_ms };
  }
  return n;
}

function queueChange(o: ResolvedIntake, n: ResolvedIntake, notApplied: string[]): IntakeChange['queue'] {
  const [a, b] = [o.queue, n.queue];
  if (json(a) === json(b)) return 'same';
  if (a.type === 'memory' && b.type === 'memory') return 'limits';
  if (a.type === 'disk' && b.type === 'disk' && a.path === b.path) {
    if (a.memory_events !== b.memory_events || a.memory_bytes !== b.memory_bytes || a.segment_bytes !== b.segment_bytes || a.fsync_interval_ms !== b.fsync_interval_ms) {
      notApplied.push(`intakes.${n.name}.queue (memory stage, segments, fsync)`);
    }
    return 'limits';
  }
  notApplied.push(`intakes.${n.name}.queue (type or path)`);
  return 'restart';
}

/**
 * A component's settings that need it opened again: all but its table of senders' and, for a
 * shared listener, its routes and default, which are changed in place (its sender is pointed at
 * the new routes between two reads: its connections stay).
 */
const restartKey = (c: object): string => json({ ...c, senders: undefined, routes: undefined, default: undefined });

function diff<C extends { readonly label: string }>(old: readonly C[], next: readonly C[]): Diff {
  const was = new Map(old.map((c) => [c.label, restartKey(c)]));
  const is = new Set(next.map((c) => c.label));
  const d = { keep: [] as string[], restart: [] as string[], add: [] as string[], remove: [] as string[] };
  for (const c of next) {
    const w = was.get(c.label);
    if (w === undefined) d.add.push(c.label);
    else if (w === restartKey(c)) d.keep.push(c.label);
    else d.restart.push(c.label);
  }
  for (const c of old) if (!is.has(c.label)) d.remove.push(c.label);
  return d;
}
