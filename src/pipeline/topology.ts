// One thread's running topology: its intakes (a pipeline each, by lower-case name) and its shared
// listeners (by label), started outputs first, stopped in two steps under one deadline (inputs,
// then queues drained and outputs closed), reloaded from a pure plan (reload-plan.ts) in a few
// steps, and seen through its health. The main thread runs one over the whole configuration; each
// worker one over its part (runtime/). Nothing outside writes into it.

import type { Logger } from 'pino';
import type { Config, ResolvedIntake } from '../config/resolve.ts';
import type { Routing, Target } from '../core/component.ts';
import type { Source } from '../core/contracts.ts';
import type { EventQueue } from '../core/event-queue.ts';
import { inputOf, type ResolvedListener } from '../inputs/registry.ts';
import type { Inlet } from '../routing/inlet.ts';
import type { IntakeHealth, ListenerHealth } from '../telemetry/ops-server.ts';
import type { PipelineEnv } from './env.ts';
import { Pipeline } from './pipeline.ts';
import { changed, emptyReport, planReload, queueInForce, type ReloadPlan, type ReloadReport } from './reload-plan.ts';
import { createSourceWithInlet } from './sources.ts';
import { handOver, Staged } from './staged.ts';
import type { IntakeStop } from './stop-report.ts';
import { addStops, type StopReport } from './stop-report.ts';

/** An intake a listener can route to: a pipeline of this thread, or one the main thread runs (forward.ts). */
export interface Slot {
  readonly name: string;
  readonly target: Target;
}

interface Listener {
  readonly config: ResolvedListener;
  readonly source: Source;
  readonly inlet: Inlet;
}

export interface TopologyOptions {
  /** In a worker: the intakes the main thread runs alone, which its listeners route to as well. */
  readonly external?: () => readonly Slot[];
  /**
   * A removed intake's queue closes once this resolves: in the main thread with workers, once they
   * have reloaded too (they route to it until then, through forward.ts).
   */
  readonly retire?: () => Promise<void>;
}

export class Topology {
  #config: Config;
  readonly #env: PipelineEnv;
  readonly #log: Logger;
  readonly #o: TopologyOptions;
  readonly #intakes = new Map<string, Pipeline>();
  /** Removed by a reload, still taking what workers forward until they have reloaded. */
  readonly #leaving = new Map<string, Pipeline>();
  readonly #listeners = new Map<string, Listener>();
  /** Removed intakes draining, inputs a reload let go finishing: awaited by the stop. */
  readonly #background = new Set<Promise<unknown>>();
  /** Disk queues of removed intakes still draining, by directory: one re-added there waits for them. */
  readonly #drainingDisks = new Map<string, Promise<unknown>>();
  #reloading: Promise<unknown> = Promise.resolve();
  #stopping = false;
  /** The sources the stop stopped (their state is saved once the queues drained). */
  #stopped: Source[] = [];
  readonly #startedAt = Date.now();

  constructor(config: Config, env: PipelineEnv, options: TopologyOptions = {}) {
    this.#config = config;
    this.#env = env;
    this.#log = env.log;
    this.#o = options;
  }

  /** The configuration in force (what a reload could not change stays as it was). */
  get config(): Config {
    return this.#config;
  }

  intakes(): Pipeline[] {
    return [...this.#intakes.values()];
  }

  /** A shared listener's source, by label. */
  listener(label: string): Source | undefined {
    return this.#listeners.get(label)?.source;
  }

  /** Listening port of an intake's input (port 0 resolved). */
  inputPort(intake: string, label: string): number | undefined {
    return this.#intakes.get(intake.toLowerCase())?.sources.get(label)?.port;
  }

  listenerPort(label: string): number | undefined {
    return this.#listeners.get(label)?.source.port;
  }

  /** Disk queues of removed intakes still draining. */
  get drainingDisks(): number {
    return this.#drainingDisks.size;
  }

  /** The queue of the intake named `name` (any case), or of one a reload is removing while the workers catch up. */
  queueOf(name: string): EventQueue | undefined {
    const lower = name.toLowerCase();
    return (this.#intakes.get(lower) ?? this.#leaving.get(lower))?.queue;
  }

  /** Where a shared listener's events go now: this thread's intakes and those it reaches elsewhere. */
  routing(l: ResolvedListener): Routing {
    return routingOf(l, [...this.intakes(), ...(this.#o.external?.() ?? [])]);
  }

  /** Opens every queue and output, then every input and listener. Throws what could not start (the caller stops). */
  async start(): Promise<void> {
    for (const intake of this.#config.intakes) this.#intakes.set(intake.name.toLowerCase(), new Pipeline(intake, this.#env));
    for (const p of this.#intakes.values()) await p.runner.start();
    for (const p of this.#intakes.values()) {
      for (const c of p.intake.inputs) {
        const source = p.input(c);
        p.sources.set(c.label, source);
        await source.start();
      }
    }
    for (const l of this.#config.listeners) await this.#openListener(l);
  }

  async #openListener(config: ResolvedListener): Promise<void> {
    const { source, inlet } = createSourceWithInlet(config, this.routing(config), '', config.senders, this.#env);
    await source.start();
    this.#listeners.set(config.label, { config, source, inlet });
  }

  #sources(): Source[] {
    return [...[...this.#intakes.values()].flatMap((p) => [...p.sources.values()]), ...[...this.#listeners.values()].map((l) => l.source)];
  }

  /**
   * The stop's first step: no input takes more. What inputs have in flight (HTTP requests reading
   * their bodies or waiting for delivery) finishes within half the timeout, while the queues are
   * open; inputs a reload under way starts meanwhile are stopped the same way.
   */
  async stopInputs(timeoutMs: number): Promise<void> {
    this.#stopping = true;
    const sources = this.#sources();
    await Promise.all(sources.map((s) => s.stop().catch(() => {})));
    await Promise.all(sources.map((s) => s.finish?.(timeoutMs / 2).catch(() => {})));
    await this.#reloading.catch(() => {});
    const late = this.#sources().filter((s) => !sources.includes(s));
    await Promise.all(late.map((s) => s.stop().catch(() => {})));
    await Promise.all(late.map((s) => s.finish?.(timeoutMs / 2).catch(() => {})));
    this.#stopped = [...sources, ...late];
  }

  /**
   * The stop's second step (after every thread's inputs stopped): the queues are delivered until
   * `deadline`, the outputs close, inputs save their state (file checkpoints); what each intake
   * delivered while stopping, kept on disk or lost.
   */
  async drain(deadline: AbortSignal, deliveredAtStop: ReadonlyMap<Pipeline, number>): Promise<StopReport> {
    const own = await Promise.all(
      this.intakes().map(async (p): Promise<[string, IntakeStop]> => {
        const before = deliveredAtStop.get(p) ?? 0;
        const { kept, lost } = await p.drain(deadline);
        return [p.name, { delivered: p.delivered - before, kept, lost }];
      }),
    );
    await Promise.all(this.#stopped.map((s) => s.save?.().catch(() => {})));
    await Promise.all([...this.#background]);
    return addStops(own.map(([name, s]) => ({ ...s, perIntake: { [name]: s } })));
  }

  /** Each intake's delivered count now: what a stop reports is counted from here. */
  deliveredNow(): Map<Pipeline, number> {
    return new Map(this.intakes().map((p) => [p, p.delivered]));
  }

  /** Each intake's health: its output's state, what waits, whether it is stalled or refuses events. */
  health(stallMs: number): IntakeHealth[] {
    const now = Date.now();
    return this.intakes().map((p) => p.health(now, stallMs, this.#startedAt));
  }

  /** Inputs and listeners configured but not running (a reload could not start them). */
  down(): string[] {
    const out = this.#config.listeners.filter((l) => !this.#listeners.has(l.label)).map((l) => l.label);
    for (const p of this.#intakes.values()) for (const c of p.intake.inputs) if (!p.sources.has(c.label)) out.push(`${p.name}/${c.label}`);
    return out;
  }

  listenerHealth(): ListenerHealth[] {
    return [...this.#listeners.values()].flatMap((l) => l.source.health?.() ?? []);
  }

  /** The (intake, input) of every running source, for the tables of senders: '' for a shared listener. */
  inputs(): { readonly intake: string; readonly label: string; readonly senders: Config['listeners'][number]['senders'] }[] {
    return [
      ...this.intakes().flatMap((p) => [...p.sources.keys()].map((label) => ({ intake: p.name, label, senders: p.intake.senders }))),
      ...[...this.#listeners.values()].map((l) => ({ intake: '', label: l.config.label, senders: l.config.senders })),
    ];
  }

  /**
   * Applies a new configuration (already validated), one reload at a time: only what changed is
   * closed and opened again, and no queued event is lost. What a reload cannot change (the metrics
   * server, the emulator, data_dir, a queue's type or path) stays as it was, and is reported.
   */
  reload(next: Config): Promise<ReloadReport> {
    const run = this.#reloading.catch(() => {}).then(() => (this.#stopping ? emptyReport() : this.#apply(next)));
    this.#reloading = run;
    return run;
  }

  async #apply(next: Config): Promise<ReloadReport> {
    const old = this.#config;
    // Planned against what runs: an intake or a listener an earlier reload could not add is new again.
    const plan = planReload({ ...old, intakes: this.intakes().map((p) => p.intake), listeners: [...this.#listeners.values()].map((l) => l.config) }, next);
    const report: ReloadReport = { ...emptyReport(), notApplied: [...plan.notApplied] };
    const removed = await this.#closeChanged(plan, report);
    const slots = await this.#place(plan, next, removed, report);
    this.#retarget(slots);
    this.#retire(removed, slots, report, next.shutdown_timeout_ms);
    await this.#openStaged(slots, report);
    await this.#openNew(next, report);
    // The configuration in force; what a reload cannot change stays as it was.
    const inForce = (i: ResolvedIntake): ResolvedIntake => this.#intakes.get(i.name.toLowerCase())?.intake ?? i;
    this.#config = { ...next, intakes: next.intakes.map(inForce), metrics: old.metrics, emulator: old.emulator, dataDir: old.dataDir };
    const level = report.failed.length > 0 ? 'error' : report.notApplied.length > 0 ? 'warn' : 'info';
    const { added, removed: gone, changed: ch, restarted, notApplied, failed } = report;
    this.#log[level](
      { added, removed: gone, changed: ch, restarted, not_applied: notApplied, failed },
      notApplied.length > 0 ? 'Configuration reloaded; some settings need a restart to change.' : 'Configuration reloaded.',
    );
    return report;
  }

  /**
   * Step 1: closes what goes away or changed: inputs of removed intakes, changed inputs and
   * listeners. Its state is saved before a replacement starts from it; what it has in flight (HTTP
   * requests) finishes in the background, its port already free. Returns the removed intakes.
   */
  async #closeChanged(plan: ReloadPlan, report: ReloadReport): Promise<Pipeline[]> {
    const removed = plan.removed.map((n) => this.#intakes.get(n.toLowerCase()) as Pipeline);
    for (const p of removed) for (const s of p.sources.values()) await this.#close(s);
    for (const k of plan.kept) {
      const p = this.#intakes.get(k.name.toLowerCase()) as Pipeline;
      for (const label of [...k.inputs.restart, ...k.inputs.remove]) {
        const s = p.sources.get(label);
        if (s) await this.#close(s);
        p.sources.delete(label);
      }
      report.restarted.push(...k.inputs.restart.map((l) => `${k.name}/${l}`));
      // Inputs added to or removed from an intake that stays: named as intake/input.
      report.added.push(...k.inputs.add.map((l) => `${k.name}/${l}`));
      report.removed.push(...k.inputs.remove.map((l) => `${k.name}/${l}`));
    }
    report.added.push(...plan.listeners.add);
    report.removed.push(...plan.listeners.remove);
    for (const label of [...plan.listeners.restart, ...plan.listeners.remove]) {
      const l = this.#listeners.get(label);
      if (l) await this.#close(l.source);
      this.#listeners.delete(label);
    }
    report.restarted.push(...plan.listeners.restart);
    return removed;
  }

  async #close(s: Source): Promise<void> {
    await s.stop().catch(() => {});
    await s.save?.().catch(() => {});
    const finishing = s.finish?.();
    if (finishing) this.#inBackground(finishing.catch(() => {}).then(() => s.dispose?.()));
    else s.dispose?.();
  }

  #inBackground(work: Promise<unknown>): void {
    const w = work.catch((err: unknown) => this.#log.error({ err }, 'Reload: background work failed.')).finally(() => this.#background.delete(w));
    this.#background.add(w);
  }

  /**
   * Step 2: the intakes of the new configuration, in its order: kept ones changed in place (or
   * given a new output), new ones opened. A new intake on the disk queue directory of one removed
   * now cannot open before that queue finished: until then a memory stage holds its events.
   */
  async #place(plan: ReloadPlan, next: Config, removed: readonly Pipeline[], report: ReloadReport): Promise<(Pipeline | Staged)[]> {
    const removedDisks = new Set(removed.flatMap((p) => (p.intake.queue.type === 'disk' ? [p.intake.queue.path] : [])));
    const slots: (Pipeline | Staged)[] = [];
    for (const n of next.intakes) {
      const k = plan.kept.find((x) => x.name.toLowerCase() === n.name.toLowerCase());
      if (k) {
        const p = this.#intakes.get(k.name.toLowerCase()) as Pipeline;
        if (k.queue === 'limits') p.setLimits(n);
        if (k.output) await p.replaceOutput(n, (w) => this.#inBackground(w), next.shutdown_timeout_ms);
        // The queue as it runs: what only a restart applies stays as it was (and is reported again).
        p.update({ ...n, queue: queueInForce(p.intake.queue, n.queue) }, k.filters);
        if (changed(k)) report.changed.push(n.name);
        slots.push(p);
      } else if (n.queue.type === 'disk' && removedDisks.has(n.queue.path)) {
        slots.push(new Staged(n));
      } else {
        const p = await this.#add(n, report);
        if (p) slots.push(p);
      }
    }
    return slots;
  }

  /** A new intake, opened and started (after the drain of an earlier queue in its directory); or undefined, reported. */
  async #add(n: ResolvedIntake, report: ReloadReport): Promise<Pipeline | undefined> {
    try {
      // Never two queues on one directory: wait for a removed intake's queue there to finish.
      if (n.queue.type === 'disk') await this.#drainingDisks.get(n.queue.path);
      const p = new Pipeline(n, this.#env);
      await p.runner.start();
      report.added.push(n.name);
      return p;
    } catch (err) {
      this.#log.error({ intake: n.name, err }, 'Reload: cannot add this intake.');
      report.failed.push(n.name);
      return undefined;
    }
  }

  /**
   * Step 3: kept listeners are pointed at the new intakes (new routes come with step 5), which are
   * in force from then on: health, statistics and the tap's key list follow them.
   */
  #retarget(slots: readonly (Pipeline | Staged)[]): void {
    // Those removed or restarted are closed already (step 1): every listener here is kept.
    const external = this.#o.external?.() ?? [];
    for (const l of this.#listeners.values()) l.inlet.retarget(routingOf(l.config, [...slots, ...external]));
    this.#intakes.clear();
    for (const s of slots) if (s instanceof Pipeline) this.#intakes.set(s.name.toLowerCase(), s);
  }

  /**
   * Step 4: removed intakes drain in the background, only now (what a listener routes is never
   * offered to a closed queue): once the workers no longer route to them, or at once when a new
   * intake waits for the directory (this reload's: the workers reload after it; what a worker still
   * forwards then is counted as dropped, reason shutdown, and never answered as safe).
   */
  #retire(removed: readonly Pipeline[], slots: readonly (Pipeline | Staged)[], report: ReloadReport, timeoutMs: number): void {
    for (const p of removed) {
      report.removed.push(p.name);
      this.#env.metrics.configInfo.remove({ intake: p.name, output: p.sink.type });
      const q = p.intake.queue;
      const claimed = q.type === 'disk' && slots.some((s) => s instanceof Staged && s.intake.queue.type === 'disk' && s.intake.queue.path === q.path);
      const lower = p.name.toLowerCase();
      this.#leaving.set(lower, p);
      const after = claimed || !this.#o.retire ? Promise.resolve() : this.#o.retire();
      const drained = after.then(() => {
        if (this.#leaving.get(lower) === p) this.#leaving.delete(lower);
        return p.drain(AbortSignal.timeout(timeoutMs));
      }).then(({ kept, lost }) => {
        p.dispose();
        if (kept > 0) this.#log.warn({ intake: p.name, events: kept, path: q.type === 'disk' ? q.path : undefined }, 'Removed intake: events it could not deliver stay in its disk queue until it is configured again.');
        if (lost > 0) this.#log.error({ intake: p.name, events: lost }, 'Removed intake: events it could not deliver in time were lost (memory queue; counted as dropped, reason shutdown).');
      });
      this.#inBackground(drained);
      if (q.type === 'disk') {
        const done = drained.catch(() => {}).finally(() => {
          if (this.#drainingDisks.get(q.path) === done) this.#drainingDisks.delete(q.path);
        });
        this.#drainingDisks.set(q.path, done);
      }
    }
  }

  /** Step 5: a staged intake's queue opens once the old one in its directory drained; what its memory stage held goes first. */
  async #openStaged(slots: (Pipeline | Staged)[], report: ReloadReport): Promise<void> {
    for (let i = 0; i < slots.length; i++) {
      const s = slots[i] as Pipeline | Staged;
      if (s instanceof Pipeline) continue;
      const p = await this.#add(s.intake, report);
      if (p) slots[i] = p;
      else slots.splice(i--, 1);
      await handOver(s, p, this.#env.metrics);
      this.#retarget(slots);
    }
  }

  /** Step 6: opens new inputs and listeners, and gives kept listeners their new routes (between two reads: connections stay). */
  async #openNew(next: Config, report: ReloadReport): Promise<void> {
    const started = async (what: string, start: () => Promise<void>): Promise<void> => {
      try {
        await start();
      } catch (err) {
        this.#log.error({ input: what, err }, 'Reload: cannot start this input; the rest of the new configuration is in force.');
        report.failed.push(what);
      }
    };
    for (const p of this.#intakes.values()) {
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
      const k = this.#listeners.get(l.label);
      if (!k) {
        await started(l.label, () => this.#openListener(l));
        continue;
      }
      k.inlet.retarget(this.routing(l));
      this.#listeners.set(l.label, { ...k, config: l });
    }
  }
}

/** A shared listener's routing among `slots`: their targets, and its router finding an intake by name (any case). */
function routingOf(l: ResolvedListener, slots: readonly Slot[]): Routing {
  const index = (name: string): number => slots.findIndex((p) => p.name.toLowerCase() === name.toLowerCase());
  return { targets: slots.map((p) => p.target), router: inputOf(l).router(l, index) };
}
