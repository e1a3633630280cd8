// A reload, applied from its plan (reload-plan.ts): close what goes away or changed, let removed
// intakes drain in the background, change kept intakes in place or give them a new output, add new
// ones, open what is new and point kept listeners at the current intakes. What cannot start is
// reported and the rest of the new configuration is in force.

import type { Logger } from 'pino';
import type { Config, ResolvedIntake, ResolvedQueue } from '../config/resolve.ts';
import type { Routing, Target } from '../core/component.ts';
import type { Source } from '../core/contracts.ts';
import { BoundedQueue } from '../core/queue.ts';
import { inputOf, type ResolvedListener } from '../inputs/registry.ts';
import { FilterSet } from '../routing/filters.ts';
import type { Sender } from '../routing/sender.ts';
import type { PipelineEnv } from './env.ts';
import { Pipeline } from './pipeline.ts';
import { changed, planReload, queueInForce } from './reload-plan.ts';

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

/** What a reload works on: the daemon's state and the steps it shares with the start. */
/** A report of nothing changed (a reload that could not begin, or a thread that could not answer), to add to. */
export function emptyReport(): ReloadReport {
  return { added: [], removed: [], changed: [], restarted: [], notApplied: [], failed: [] };
}

export interface ReloadTarget {
  config: Config;
  pipelines: Pipeline[];
  shared: { readonly config: ResolvedListener; readonly source: Source; readonly sender: Sender }[];
  readonly env: PipelineEnv;
  readonly log: Logger;
  readonly drainingDisks: Map<string, Promise<unknown>>;
  background(work: Promise<unknown>): void;
  startEmulator(cfg: Config): Promise<void>;
  openListener(config: ResolvedListener): Promise<void>;
  routing(config: ResolvedListener): Routing;
  startStats(cfg: Config): void;
  retargetStats(): void;
  /** Intakes its listeners route to besides its pipelines (in a worker: those the main thread runs alone). */
  forwardSlots(): readonly { readonly name: string; readonly target: Target }[];
  /** A removed intake: resolves when its queue may close (the workers no longer route to it). */
  retire(p: Pipeline): Promise<void>;
}

/** A new intake waiting for its queue's directory: a memory stage takes its events meanwhile. */
class Staged {
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

/** A shared listener's routing among `slots` (as the daemon's routing(), before they are in force). */
function routingOf(l: ResolvedListener, slots: readonly { readonly name: string; readonly target: Target }[]): Routing {
  const index = (name: string): number => slots.findIndex((p) => p.name.toLowerCase() === name.toLowerCase());
  return { targets: slots.map((p) => p.target), router: inputOf(l).router(l, index) };
}

export async function applyReload(d: ReloadTarget, next: Config): Promise<ReloadReport> {
  const old = d.config;
  // Planned against what runs: an intake or a listener an earlier reload could not add is new again.
  const running = { ...old, intakes: d.pipelines.map((p) => p.intake), listeners: d.shared.map((s) => s.config) };
  const plan = planReload(running, next);
  const report: ReloadReport = { added: [], removed: [], changed: [], restarted: [], notApplied: [...plan.notApplied], failed: [] };
  for (const w of next.warnings) d.log.warn(w);
  await d.startEmulator(next);
  const deadline = (): AbortSignal => AbortSignal.timeout(next.shutdown_timeout_ms);

  /** A new intake, opened and started (after the drain of an earlier queue in its directory); or undefined, reported. */
  const add = async (n: ResolvedIntake): Promise<Pipeline | undefined> => {
    try {
      // Never two queues on one directory: wait for a removed intake's queue there to finish.
      if (n.queue.type === 'disk') await d.drainingDisks.get(n.queue.path);
      const np = new Pipeline(n, d.env);
      await np.runner.start();
      report.added.push(n.name);
      return np;
    } catch (err) {
      d.log.error({ intake: n.name, err }, 'Reload: cannot add this intake.');
      report.failed.push(n.name);
      return undefined;
    }
  };
  const handOver = async (s: Staged, to: Pipeline | undefined): Promise<void> => {
    const from = s.target.queue;
    const all = { maxEvents: Number.MAX_SAFE_INTEGER, maxBytes: Number.MAX_SAFE_INTEGER, lingerMs: 0 };
    while (from.pendingEvents > 0) {
      const b = await from.take(all, AbortSignal.timeout(1_000));
      if (!b) continue;
      from.release(b);
      if (!to) {
        d.env.metrics.eventsDropped.inc({ intake: s.intake.name, stage: 'queue', reason: 'shutdown' }, b.events.length);
        from.settle(b.seq, b.events.length);
        continue;
      }
      // Its senders were told to wait: the queue takes them all, whatever its when_full.
      to.queue.offer([...b.events], b.bytes, true, true);
      const end = to.queue.nextSeq;
      void to.queue.untilSafe(end).then(() => from.settle(b.seq, b.events.length));
    }
    from.close();
  };

  // 1. Close what goes away or changed: inputs of removed intakes, changed inputs and listeners.
  // Its state is saved before a replacement starts from it; what it has in flight (HTTP requests)
  // finishes in the background, its port already free.
  const close = async (s: Source): Promise<void> => {
    await s.stop().catch(() => {});
    await s.save?.().catch(() => {});
    const finishing = s.finish?.();
    if (finishing) d.background(finishing.catch(() => {}).then(() => s.dispose?.()));
    else s.dispose?.();
  };
  const removed = d.pipelines.filter((p) => plan.removed.includes(p.name));
  for (const p of removed) for (const s of p.sources.values()) await close(s);
  for (const k of plan.kept) {
    const p = d.pipelines.find((x) => x.name.toLowerCase() === k.name.toLowerCase()) as Pipeline;
    for (const label of [...k.inputs.restart, ...k.inputs.remove]) {
      const s = p.sources.get(label);
      if (s) await close(s);
      p.sources.delete(label);
    }
    report.restarted.push(...k.inputs.restart.map((l) => `${k.name}/${l}`));
  }
  const gone = new Set([...plan.listeners.restart, ...plan.listeners.remove]);
  for (const s of d.shared.filter((x) => gone.has(x.config.label))) await close(s.source);
  d.shared = d.shared.filter((x) => !gone.has(x.config.label));
  report.restarted.push(...plan.listeners.restart);

  // 2. Intakes: change in place, add; then point kept listeners at them, and only then let removed
  // intakes go (their queues drain in the background): what a listener routes is never offered to
  // a closed queue. A new intake on the disk queue directory of one removed now cannot open before
  // that queue finished: until then a memory stage holds its events (its senders wait), handed over
  // to its queue once open.
  const removedDisks = new Set(removed.flatMap((p) => (p.intake.queue.type === 'disk' ? [p.intake.queue.path] : [])));
  const slots: (Pipeline | Staged)[] = [];
  for (const n of next.intakes) {
    const k = plan.kept.find((x) => x.name.toLowerCase() === n.name.toLowerCase());
    if (!k) {
      if (n.queue.type === 'disk' && removedDisks.has(n.queue.path)) {
        slots.push(new Staged(n));
        continue;
      }
      const np = await add(n);
      if (np) slots.push(np);
      continue;
    }
    const p = d.pipelines.find((x) => x.name.toLowerCase() === k.name.toLowerCase()) as Pipeline;
    if (k.queue === 'limits') p.setLimits(n);
    if (k.output) await p.replaceOutput(n, (w) => d.background(w), next.shutdown_timeout_ms);
    // The queue as it runs: what only a restart applies stays as it was (and is reported again).
    p.update({ ...n, queue: queueInForce(p.intake.queue, n.queue) }, k.filters);
    if (changed(k)) report.changed.push(n.name);
    slots.push(p);
  }
  const kept = d.shared.filter((s) => next.listeners.some((l) => l.label === s.config.label));
  const retarget = (): void => {
    for (const s of kept) s.sender.retarget(routingOf(s.config, [...slots, ...d.forwardSlots()]));
    // In force as soon as they take events: health, stats and the tap's key list follow them.
    d.pipelines = slots.filter((s): s is Pipeline => s instanceof Pipeline);
  };
  retarget();
  for (const p of removed) {
    report.removed.push(p.name);
    d.env.metrics.configInfo.remove({ intake: p.name, output: p.sink.type });
    // Its queue closes once the workers no longer route to it; at once when a new intake waits for
    // its directory (this reload's: the workers reload after it). What a worker still forwards to
    // it then is counted as dropped (shutdown), and never answered as safe.
    const q0 = p.intake.queue;
    const claimed = q0.type === 'disk' && slots.some((x) => x instanceof Staged && x.intake.queue.type === 'disk' && x.intake.queue.path === q0.path);
    const drained = (claimed ? Promise.resolve() : d.retire(p)).then(() => p.drain(deadline())).then(({ kept, lost }) => {
      p.dispose();
      if (kept > 0) d.log.warn({ intake: p.name, events: kept, path: p.intake.queue.type === 'disk' ? p.intake.queue.path : undefined }, 'Removed intake: events it could not deliver stay in its disk queue until it is configured again.');
      if (lost > 0) d.log.error({ intake: p.name, events: lost }, 'Removed intake: events it could not deliver in time were lost (memory queue; counted as dropped, reason shutdown).');
    });
    d.background(drained);
    const q = p.intake.queue;
    if (q.type === 'disk') {
      const done = drained.catch(() => {}).finally(() => {
        if (d.drainingDisks.get(q.path) === done) d.drainingDisks.delete(q.path);
      });
      d.drainingDisks.set(q.path, done);
    }
  }
  for (let i = 0; i < slots.length; i++) {
    const s = slots[i] as Pipeline | Staged;
    if (s instanceof Pipeline) continue;
    const np = await add(s.intake);
    if (np) slots[i] = np;
    else slots.splice(i--, 1);
    // The held events go to the queue first, then the listeners route to it.
    await handOver(s, np);
    retarget();
  }
  d.pipelines = slots as Pipeline[];

  // 3. Open what is new, and point kept listeners at the current intakes.
  const started = async (what: string, start: () => Promise<void>): Promise<void> => {
    try {
      await start();
    } catch (err) {
      d.log.error({ input: what, err }, 'Reload: cannot start this input; the rest of the new configuration is in force.');
      report.failed.push(what);
    }
  };
  for (const p of d.pipelines) {
    for (const c of p.intake.inputs) {
      if (p.sources.has(c.label)) continue;
      await started(`${p.name}/${c.label}`, async () => {
        const s = p.input(c);
        await s.start();
        p.sources.set(c.label, s);
      });
    }
  }
  for (const l of next.listeners) {
    const i = d.shared.findIndex((s) => s.config.label === l.label);
    const k = d.shared[i];
    if (!k) {
      await started(l.label, () => d.openListener(l));
      continue;
    }
    // Kept, perhaps with new routes: in force from its next read, and the next reload plans from them.
    k.sender.retarget(d.routing(l));
    d.shared[i] = { ...k, config: l };
  }
  // The configuration in force; what a reload cannot change stays as it was.
  const inForce = (i: ResolvedIntake): ResolvedIntake => d.pipelines.find((p) => p.name.toLowerCase() === i.name.toLowerCase())?.intake ?? i;
  d.config = { ...next, intakes: next.intakes.map(inForce), metrics: old.metrics, emulator: old.emulator, dataDir: old.dataDir };
  if (plan.stats) d.startStats(next);
  else d.retargetStats();
  const level = report.failed.length > 0 ? 'error' : report.notApplied.length > 0 ? 'warn' : 'info';
  const { added, removed: gone2, changed: ch, restarted, notApplied, failed } = report;
  d.log[level](
    { added, removed: gone2, changed: ch, restarted, not_applied: notApplied, failed },
    report.notApplied.length > 0 ? 'Configuration reloaded; some settings need a restart to change.' : 'Configuration reloaded.',
  );
  return report;
}
