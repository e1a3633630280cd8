// A reload, applied from its plan (reload-plan.ts): close what goes away or changed, let removed
// intakes drain in the background, change kept intakes in place or give them a new output, add new
// ones, open what is new and point kept listeners at the current intakes. What cannot start is
// reported and the rest of the new configuration is in force.

import type { Logger } from 'pino';
import type { Config } from '../config/resolve.ts';
import type { Routing } from '../core/component.ts';
import type { Source } from '../core/contracts.ts';
import type { ResolvedListener } from '../inputs/registry.ts';
import type { Sender } from '../routing/sender.ts';
import type { PipelineEnv } from './env.ts';
import { Pipeline } from './pipeline.ts';
import { changed, planReload } from './reload-plan.ts';

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

  // 2. Intakes: let go (their queues drain in the background), change in place, add.
  for (const p of removed) {
    report.removed.push(p.name);
    d.env.metrics.configInfo.remove({ intake: p.name, output: p.sink.type });
    const drained = p.drain(deadline()).then(() => p.dispose());
    d.background(drained);
    const q = p.intake.queue;
    if (q.type === 'disk') {
      const done = drained.catch(() => {}).finally(() => {
        if (d.drainingDisks.get(q.path) === done) d.drainingDisks.delete(q.path);
      });
      d.drainingDisks.set(q.path, done);
    }
  }
  const pipelines: Pipeline[] = [];
  for (const n of next.intakes) {
    const k = plan.kept.find((x) => x.name.toLowerCase() === n.name.toLowerCase());
    if (!k) {
      try {
        // Never two queues on one directory: wait for a removed intake's queue there to finish.
        if (n.queue.type === 'disk') await d.drainingDisks.get(n.queue.path);
        const np = new Pipeline(n, d.env);
        await np.runner.start();
        pipelines.push(np);
        report.added.push(n.name);
      } catch (err) {
        d.log.error({ intake: n.name, err }, 'Reload: cannot add this intake.');
        report.failed.push(n.name);
      }
      continue;
    }
    const p = d.pipelines.find((x) => x.name.toLowerCase() === k.name.toLowerCase()) as Pipeline;
    if (k.queue === 'limits') p.setLimits(n);
    if (k.output) await p.replaceOutput(n, (w) => d.background(w), next.shutdown_timeout_ms);
    p.update(n, k.filters);
    if (changed(k)) report.changed.push(n.name);
    pipelines.push(p);
  }
  d.pipelines = pipelines;

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
    const kept = d.shared.find((s) => s.config.label === l.label);
    if (kept) kept.sender.retarget(d.routing(l));
    else await started(l.label, () => d.openListener(l));
  }
  // The configuration in force; what a reload cannot change stays as it was.
  d.config = { ...next, metrics: old.metrics, emulator: old.emulator, dataDir: old.dataDir };
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
