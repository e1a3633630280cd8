// Builds one pipeline per intake and the shared listeners from a frozen configuration, starts them
// outputs first, and stops them in order under one deadline: sources stop taking in, queues drain
// into the outputs, outputs close, sources save their state (checkpoints), and what could
// not be delivered is reported. A reload (SIGHUP) plans its changes (reload-plan.ts), then applies
// them: only what changed is closed and opened again, and no queued event is lost.

import type { Writable } from 'node:stream';
import type { Logger } from 'pino';
import type { Config } from '../config/resolve.ts';
import type { Routing, Target } from '../core/component.ts';
import type { Source } from '../core/contracts.ts';
import { IntakeEmulator, maskKey } from '../emulator/intake-emulator.ts';
import { holdConfiguredCheckpoints } from '../inputs/file/definition.ts';
import { inputOf, type ResolvedListener } from '../inputs/registry.ts';
import { Sender } from '../routing/sender.ts';
import { Metrics } from '../telemetry/metrics.ts';
import { loopUtilization } from '../telemetry/utilization.ts';
import { buildCommit, VERSION } from '../version.ts';
import { OpsServer, type HealthSource, type IntakeHealth, type ListenerHealth } from '../telemetry/ops-server.ts';
import type { PipelineEnv } from './env.ts';
import { Pipeline } from './pipeline.ts';
import { applyReload, emptyReport, type ReloadReport, type ReloadTarget } from './reload.ts';
import { SenderTables, type SenderTable, type Sighting } from './senders.ts';
import { createSourceWithSender } from './sources.ts';
import { joinedTap, MAX_VIEWERS, Taps, type TapQuery } from './tap.ts';
import { StatsSource } from './stats.ts';
import { aggregate, heldPorts, shareBounds, threadsFor, workerConfig, workerCount, workerForwards, Workers, type WorkerData } from './workers.ts';
import { sharePorts, workersHold } from '../core/net.ts';
import { releaseExecutablePages } from '../core/native-addon.ts';
import { StateLockedError, StateLocks } from '../core/state-lock.ts';
import { stateDirs } from './state-dirs.ts';
import { secretMask, secretsOf } from '../telemetry/secret-mask.ts';
import { ForwardQueue, ForwardReceiver, type ForwardedIntake, type ForwardIn, type ForwardOut } from './forward.ts';
import { FilterSet } from '../routing/filters.ts';
import type { EventQueue } from '../core/queue.ts';
import { addStops, stopLine, type IntakeStop, type StopReport } from './stop-report.ts';
import type { Registry } from 'prom-client';

export type { ReloadReport, StopReport };

let built: string | undefined;
/** The commit, found once per process (a checkout asks git). */
function commit(): string {
  return (built ??= buildCommit());
}

/** A listener shared by the intakes, and the sender a reload points at the new intakes and routes. */
export interface Shared {
  readonly config: ResolvedListener;
  readonly source: Source;
  readonly sender: Sender;
}


export interface DaemonOptions {
  /**
   * This daemon runs in a worker thread of another (workers.ts), with that one's emulator; the
   * senders its inputs see go to that one's tables; what its shared listeners route to an intake
   * the main thread runs alone (`forwarded`) goes there (`forward`); at a stop, it says when its
   * inputs are closed and that is done (`inputsStopped`).
   */
  readonly worker?: {
    readonly emulator: WorkerData['emulator'];
    readonly sightings: (s: Sighting[]) => void;
    readonly forwarded: readonly ForwardedIntake[];
    readonly forward: (m: ForwardOut, transfer: ArrayBuffer) => void;
    readonly inputsStopped: () => void;
  };
}

/** In a worker: an intake the main thread runs alone, as its listeners route to it. */
interface Forward {
  readonly queue: ForwardQueue;
  readonly target: Target;
}

export class Daemon implements HealthSource, ReloadTarget {
  config: Config;
  readonly metrics: Metrics;
  readonly log: Logger;
  pipelines: Pipeline[] = [];
  shared: Shared[] = [];
  /** Removed intakes' queues draining, and what a reload let go finishing, in the background. */
  readonly #retiring = new Set<Promise<unknown>>();
  /** Disk queues of removed intakes still draining, by directory: a queue re-added there waits for them. */
  readonly drainingDisks = new Map<string, Promise<unknown>>();
  #reloading: Promise<unknown> = Promise.resolve();
  #emulator: IntakeEmulator | undefined;
  /** In a worker: the main thread's emulator (it may start one at a reload: reloadWorker gives it). */
  #workerEmulator: WorkerData['emulator'];
  #ops: OpsServer | undefined;
  #stats: StatsSource | undefined;
  #phase: HealthSource['phase'] = 'starting';
  #stopping: Promise<StopReport> | undefined;
  readonly #startedAt = Date.now();
  readonly env: PipelineEnv;
  /** Threads that run the network inputs, this one included (workers: N); 1 in a worker. */
  readonly threads: number;
  readonly #worker: DaemonOptions['worker'];
  #workers: Workers | undefined;
  /**
   * What ends the process when a worker fails while running (main.ts's handler of unexpected
   * errors: exit 70, the service manager restarts). Tests replace it.
   */
  onFatal: (err: Error) => void = (err) =>
    setImmediate(() => {
      throw err;
    });
  /** Tap views open across the threads: where each one's lines from the workers go. */
  readonly #tapViews = new Map<number, { readonly out: Writable; readonly remote: (text: string) => void }>();
  #nextTap = 0;
  /** The state directories it writes in, locked against a second relay (the main thread's). */
  readonly #locks: StateLocks;
  /** In a worker: the intakes the main thread runs alone, by name (lower case), and every stream by number. */
  readonly #forwards = new Map<string, Forward>();
  readonly #streams = new Map<number, ForwardQueue>();
  /** In the main thread: what each worker forwards, taken into the queues. */
  readonly #receivers = new Map<number, ForwardReceiver>();
  /** In the main thread: intakes a reload removed, still taking what workers forward until they have reloaded too. */
  readonly #leaving = new Map<string, Pipeline>();
  #workersReloaded: Promise<void> = Promise.resolve();

  constructor(config: Config, log: Logger, metrics = new Metrics(), options: DaemonOptions = {}) {
    this.#worker = options.worker;
    // Threads only where something can run in a worker (file inputs and disk queues cannot).
    this.threads = options.worker ? 1 : threadsFor(config);
    // Every thread's inputs share their ports; each thread holds its share of the bounds.
    sharePorts(this.threads > 1 || options.worker !== undefined, options.worker !== undefined);
    this.config = shareBounds(config, this.threads);
    this.log = log;
    this.metrics = metrics;
    this.#locks = new StateLocks(config.file ?? '', (m) => log.warn(m));
    if (options.worker) this.#setForwards(options.worker.forwarded);
    metrics.buildInfo.set({ version: VERSION, commit: commit(), node: process.version }, 1);
    // Every key of every configuration this process ran (a worker: as the main thread gave it).
    if (!options.worker) secretMask.add(secretsOf(config));
    const taps = new Taps(metrics, () => secretMask.secrets);
    const worker = options.worker;
    this.#workerEmulator = worker?.emulator;
    this.env = {
      metrics, log, dataDir: config.dataDir, senders: new SenderTables(metrics, log, worker?.sightings), taps,
      emulator: () => (worker ? this.#workerEmulator : this.#emulator && { port: this.#emulator.port, caPem: this.#emulator.caPem }),
    };
    // Each thread's utilization: the main thread's since the last scrape (at least half a second),
    // the workers' as they reported it (a worker reports to the main thread instead).
    const utilization = loopUtilization(500);
    if (!options.worker) metrics.addProbe(() => {
      const u = utilization();
      if (u !== undefined) metrics.threadUtilization.set({ thread: 'main' }, u);
      for (const r of this.#workers?.reports() ?? []) metrics.threadUtilization.set({ thread: String(r.worker) }, r.state.utilization);
    });
    metrics.addProbe(() => {
      const now = Date.now();
      for (const h of this.health()) {
        metrics.outputStalled.set({ intake: h.name }, h.stalled ? 1 : 0);
        metrics.outputSinceDelivery.set({ intake: h.name }, Math.round((now - (h.lastDeliveryAt || this.#startedAt)) / 1000));
      }
    });
  }

  get phase(): HealthSource['phase'] {
    return this.#phase;
  }
  get emulatorPort(): number | undefined {
    return this.#emulator?.port;
  }
  get opsPort(): number | undefined {
    return this.#ops?.port;
  }
  /** Listening port of a shared listener, by label. */
  listenerPort(label: string): number | undefined {
    return this.shared.find((s) => s.config.label === label)?.source.port;
  }
  /** Listening port of an intake's input (port 0 resolved), for tests and messages. */
  inputPort(intake: string, label: string): number | undefined {
    return this.pipelines.find((p) => p.name === intake)?.sources.get(label)?.port;
  }

  async start(): Promise<void> {
    const cfg = this.config;
    // First: a second relay on the same state stops here, before it opens a port or a file.
    if (!this.#worker) this.#locks.hold(stateDirs(cfg));
    for (const w of cfg.warnings) this.log.warn(w);
    try {
      await this.startEmulator(cfg);
      // Every configured file input's checkpoints are its own, whichever input starts first.
      holdConfiguredCheckpoints(cfg.dataDir, cfg.intakes);
      for (const intake of cfg.intakes) this.pipelines.push(new Pipeline(intake, this.env));
      for (const p of this.pipelines) await p.runner.start();
      for (const p of this.pipelines) {
        for (const c of p.intake.inputs) {
          const source = p.input(c);
          p.sources.set(c.label, source);
          await source.start();
        }
      }
      for (const l of cfg.listeners) await this.openListener(l);
      await this.#startWorkers();
      this.env.senders.start();
      if (cfg.metrics.enabled) {
        this.#ops = new OpsServer({ contentType: this.metrics.registry.contentType, scrape: async () => (await this.gather()).metrics() }, this, { tap: cfg.metrics.tap });
        await this.#ops.start(cfg.metrics.address, cfg.metrics.port);
      }
      this.startStats(cfg);
    } catch (err) {
      await this.stop();
      throw err;
    }
    this.#phase = 'running';
    this.metrics.reloadSuccessful.set(1);
    this.metrics.reloadSuccessTime.set(Date.now() / 1000);
    // A worker's start is the main thread's to tell (with the number of threads).
    if (this.#worker) return;
    this.log.info(
      {
        intakes: this.pipelines.map((p) => ({ name: p.name, inputs: [...p.sources.values()].map((s) => `${s.label} ${s.where}`), output: p.outputWhere })),
        listeners: this.shared.map((s) => `${s.config.label} on port ${s.source.port}`),
        ...(this.#workers ? { workers: this.#workers.count + 1 } : {}),
        metrics: this.#ops ? `http://${cfg.metrics.address}:${this.#ops.port}/metrics` : 'disabled',
      },
      'intake-relay started.',
    );
    // What start-up alone used of the executable's pages (Node's bootstrap, the configuration's
    // loading) is let go: 37 of the single executable's 59 MiB at rest otherwise.
    setImmediate(releaseExecutablePages);
  }

  /** The worker threads (workers: N > 1), once every input of this thread listens (they join its ports). */
  async #startWorkers(): Promise<void> {
    if (this.#worker) return;
    const asked = workerCount(this.config.workers);
    if (this.threads <= 1) {
      if (asked > 1) this.log.warn({ workers: asked }, 'workers: no network input can run in a worker (file inputs, and the inputs of intakes with a disk queue, have a single owner): the main thread runs everything.');
      return;
    }
    const plan = this.#workerConfig();
    const emulator = this.#emulator && { port: this.#emulator.port, caPem: this.#emulator.caPem };
    this.#workers = await Workers.start(this.threads - 1, plan, this.#forwarded(), emulator, this.log, {
      sightings: (s) => this.env.senders.sighted(s),
      tapData: (tap, text) => this.#tapViews.get(tap)?.remote(text),
      forward: (worker, m) => this.#receiver(worker).handle(m),
    }, (err) => this.onFatal(err));
    workersHold(heldPorts(plan));
    this.env.senders.lagMs = 2_000;
  }

  #workerConfig(): Config {
    return workerConfig(this.config, (intake, label) => this.inputPort(intake, label), (label) => this.listenerPort(label));
  }

  /** The intakes the workers' listeners reach through this thread: those it runs, with a disk queue. */
  #forwarded(): ForwardedIntake[] {
    return workerForwards({ ...this.config, intakes: this.pipelines.map((p) => p.intake) });
  }

  /** Where worker `worker`'s forwarded events go: this thread's queues, as the intakes are now. */
  #receiver(worker: number): ForwardReceiver {
    let r = this.#receivers.get(worker);
    if (!r) {
      r = new ForwardReceiver(
        (name) => this.#queueOf(name),
        (m) => this.#workers?.tell(worker, m),
        (intake, n) => this.metrics.eventsDropped.inc({ intake, stage: 'queue', reason: 'shutdown' }, n),
      );
      this.#receivers.set(worker, r);
    }
    return r;
  }

  /** The queue of the intake named `name` (any case), or of one a reload is removing while the workers catch up. */
  #queueOf(name: string): EventQueue | undefined {
    const lower = name.toLowerCase();
    return (this.pipelines.find((p) => p.name.toLowerCase() === lower) ?? this.#leaving.get(lower))?.queue;
  }

  /**
   * A removed intake: its queue keeps taking what workers forward until they have reloaded too
   * (they route to it until then); the promise says when it may drain.
   */
  retire(p: Pipeline): Promise<void> {
    if (!this.#workers || this.#worker) return Promise.resolve();
    const lower = p.name.toLowerCase();
    this.#leaving.set(lower, p);
    return this.#workersReloaded.then(() => {
      if (this.#leaving.get(lower) === p) this.#leaving.delete(lower);
    });
  }

  /** In a worker: the intakes the main thread runs alone, as a reload (or the start) gives them. */
  #setForwards(list: readonly ForwardedIntake[]): ForwardQueue[] {
    const post = this.#worker?.forward;
    if (!post) return [];
    const keep = new Set<string>();
    for (const f of list) {
      const key = f.name.toLowerCase();
      keep.add(key);
      const had = this.#forwards.get(key);
      if (had) {
        had.queue.update(f);
        had.target.intake = f.name;
        had.target.intakeKey = f.intakeKey;
        had.target.filters = new FilterSet(f.filters);
        continue;
      }
      const queue = new ForwardQueue(f, post);
      this.#streams.set(queue.stream, queue);
      this.#forwards.set(key, { queue, target: { intake: f.name, intakeKey: f.intakeKey, queue, filters: new FilterSet(f.filters) } });
    }
    // Those gone: closed by the caller once no listener routes to them; their streams stay for the answers still due.
    const gone: ForwardQueue[] = [];
    for (const [key, f] of this.#forwards) {
      if (keep.has(key)) continue;
      this.#forwards.delete(key);
      gone.push(f.queue);
    }
    return gone;
  }

  /** In a worker: the main thread's answer about a stream it forwarded. */
  forwardReply(m: ForwardIn): void {
    this.#streams.get(m.stream)?.reply(m);
  }

  /** Intakes this thread's listeners route to besides its own: in a worker, those the main thread runs alone. */
  forwardSlots(): { readonly name: string; readonly target: Target }[] {
    return [...this.#forwards.values()].map((f) => ({ name: f.target.intake, target: f.target }));
  }

  /** The worker threads (none without workers), for diagnostics. */
  workerThreads(): readonly import('node:worker_threads').Worker[] {
    return this.#workers?.threads() ?? [];
  }

  /** This thread's metrics, with the workers' added (counters and most gauges summed; metrics.ts names the others). */
  async gather(): Promise<Registry> {
    if (!this.#workers) return this.metrics.registry;
    const [own, others] = await Promise.all([this.metrics.registry.getMetricsAsJSON(), this.#workers.metrics()]);
    return aggregate(own, others);
  }

  async startEmulator(cfg: Config): Promise<void> {
    if (this.#worker) return;
    if (this.#emulator || !cfg.intakes.some((i) => i.toEmulator)) return;
    this.#emulator = new IntakeEmulator({
      port: cfg.emulator.port,
      onMessage: (m) =>
        m.problems.length === 0
          ? this.log.info({ emulator: true, message: maskKey(m.raw) }, 'Emulator received a valid message.')
          : this.log.warn({ emulator: true, message: maskKey(m.raw), problems: m.problems }, 'Emulator received a message the intake would refuse.'),
      onProtocolError: (msg) => this.log.error({ emulator: true }, msg),
    });
    await this.#emulator.start();
    this.log.warn(
      { intakes: cfg.intakes.filter((i) => i.toEmulator).map((i) => i.name), emulator: `127.0.0.1:${this.#emulator.port}` },
      'No intake key set: forwarding to the local intake emulator. Set the key (e.g. INTAKE_KEY) to forward to the platform.',
    );
  }

  /** Where a shared listener's events go now: the intakes, and its router among them, if it routes. */
  routing(l: ResolvedListener): Routing {
    const slots = [...this.pipelines.map((p) => ({ name: p.name, target: p.target })), ...this.forwardSlots()];
    const index = (name: string): number => slots.findIndex((p) => p.name.toLowerCase() === name.toLowerCase());
    return { targets: slots.map((p) => p.target), router: inputOf(l).router(l, index) };
  }

  /** A shared listener, opened. */
  async openListener(config: ResolvedListener): Promise<void> {
    const { source, sender } = createSourceWithSender(config, this.routing(config), '', config.senders, this.env);
    await source.start();
    this.shared.push({ config, source, sender });
  }

  /** Forwarder statistics to the intake `stats.intake` names, if set. */
  startStats(cfg: Config): void {
    this.#stats?.stop();
    this.#stats = cfg.stats ? new StatsSource(cfg.stats, () => this.pipelines, this.metrics) : undefined;
    this.retargetStats();
    this.#stats?.start();
  }

  /** The statistics go to the pipeline of their intake (a reload may have replaced it). */
  retargetStats(): void {
    this.#stats?.retarget(this.pipelines);
  }

  background(work: Promise<unknown>): void {
    const w = work.catch((err: unknown) => this.log.error({ err }, 'Reload: background work failed.')).finally(() => this.#retiring.delete(w));
    this.#retiring.add(w);
  }

  /**
   * Applies a new configuration (already validated) to the running daemon, one reload at a time.
   * What a reload cannot change (metrics server, emulator, data_dir, a queue's type or path) stays
   * as it was until a restart, and is reported.
   */
  reload(next: Config): Promise<ReloadReport> {
    const run = this.#reloading.catch(() => {}).then(async () => {
      if (this.#phase !== 'running') return emptyReport();
      // Its keys are masked from now on, in every thread (the workers get the list with their reload).
      if (!this.#worker) secretMask.add(secretsOf(next));
      try {
        // New state directories (a disk queue added) are locked first, or nothing changes.
        this.#locks.hold(stateDirs(next));
      } catch (err) {
        this.#reloaded(false);
        const why = err instanceof StateLockedError ? err.message : `cannot lock a state directory: ${(err as Error).message}`;
        this.log.error({ problems: [why] }, 'Reload refused: the new configuration is invalid; the running one stays.');
        return { ...emptyReport(), failed: [why] };
      }
      try {
        // The new configuration's file inputs keep their checkpoints (one rebuilt by this reload
        // too); those of inputs it removes may be taken over by an input moved or renamed.
        holdConfiguredCheckpoints(this.config.dataDir, next.intakes);
        // Intakes this reload removes take what the workers forward until the workers have reloaded.
        let reloaded = (): void => {};
        this.#workersReloaded = new Promise<void>((resolve) => (reloaded = resolve));
        let theirs: ReloadReport[] = [];
        let report: ReloadReport;
        try {
          report = await applyReload(this, shareBounds(next, this.threads));
          // Then the workers, on the ports this thread now listens on.
          const plan = this.#workerConfig();
          // The emulator this reload may have started (an intake without a key added) is theirs too.
          const emulator = this.#emulator && { port: this.#emulator.port, caPem: this.#emulator.caPem };
          theirs = this.#workers ? await this.#workers.reload(plan, this.#forwarded(), emulator) : [];
          if (this.#workers) workersHold(heldPorts(plan));
        } finally {
          reloaded();
        }
        for (const r of theirs) report.failed.push(...r.failed.filter((f) => !report.failed.includes(f)));
        if (threadsFor(next) !== this.threads) {
          report.notApplied.push(`workers: ${this.threads} thread${this.threads > 1 ? 's' : ''} until a restart`);
        }
        this.#reloaded(report.failed.length === 0);
        return report;
      } catch (err) {
        this.#reloaded(false);
        throw err;
      } finally {
        // Whatever the reload got to: the tables follow the inputs that run now.
        this.#syncSenders();
      }
    });
    this.#reloading = run;
    return run;
  }

  /**
   * In a worker: a reload from the main thread, with the intakes it runs alone and the emulator it
   * runs now (started by that reload, maybe).
   */
  async reloadWorker(next: Config, forwarded: readonly ForwardedIntake[], emulator: WorkerData['emulator']): Promise<ReloadReport> {
    this.#workerEmulator = emulator;
    const gone = this.#setForwards(forwarded);
    try {
      return await this.reload(next);
    } finally {
      // No listener routes to them now; what they still have on the way is answered by the main thread.
      for (const q of gone) q.close();
    }
  }

  /** A reload that could not even begin: the new file is invalid (the running configuration stays). */
  reloadRefused(): void {
    this.#reloaded(false);
  }

  #reloaded(whole: boolean): void {
    this.metrics.reloadSuccessful.set(whole ? 1 : 0);
    if (whole) this.metrics.reloadSuccessTime.set(Date.now() / 1000);
  }

  /** After a reload: the tables of senders take their new settings; those of inputs gone go. */
  #syncSenders(): void {
    const live: [string, string][] = [];
    const tables = this.env.senders;
    for (const p of this.pipelines) {
      for (const label of p.sources.keys()) {
        tables.table(p.name, label, p.intake.senders);
        live.push([p.name, label]);
      }
    }
    for (const l of this.config.listeners) {
      if (!this.shared.some((s) => s.config.label === l.label)) continue;
      tables.table('', l.label, l.senders);
      live.push(['', l.label]);
    }
    tables.retain(live);
  }

  /** A live view of events for `out`; or why not (an unknown intake or input, too many viewers). */
  tap(q: TapQuery, out: Writable): { readonly status: number; readonly error: string } | undefined {
    if (q.intake !== undefined && !this.pipelines.some((p) => p.name.toLowerCase() === q.intake!.toLowerCase())) {
      return { status: 400, error: `No intake named "${q.intake}": the intakes are ${this.pipelines.map((p) => `"${p.name}"`).join(', ')}.` };
    }
    if (q.input !== undefined) {
      const inputs = [...this.pipelines.flatMap((p) => [...p.sources.keys()]), ...this.shared.map((s) => s.config.label)];
      if (!inputs.includes(q.input)) return { status: 400, error: `No input or listener named "${q.input}": they are ${inputs.map((i) => `"${i}"`).join(', ')}.` };
    }
    const workers = this.#workers;
    if (!workers) {
      if (!this.env.taps.open(q, out)) return { status: 429, error: `${MAX_VIEWERS} viewers already watch: try again when one has finished.` };
      return undefined;
    }
    // Every thread shows its share of the rate; their lines join in `out`, up to the limit.
    const view = joinedTap(q, out, this.threads, this.metrics);
    if (!this.env.taps.open(view.query, view.local)) return { status: 429, error: `${MAX_VIEWERS} viewers already watch: try again when one has finished.` };
    const tap = this.#nextTap++;
    this.#tapViews.set(tap, { out, remote: view.remote });
    workers.openTap(tap, view.query);
    out.once('close', () => {
      this.#tapViews.delete(tap);
      workers.closeTap(tap);
    });
    return undefined;
  }

  /** The tables as of their last check (every second): a request does not walk them. */
  senders(): SenderTable[] {
    return this.env.senders.all();
  }

  listenerHealth(): ListenerHealth[] {
    const own = this.shared.flatMap((s) => s.source.health?.() ?? []);
    const states = this.#workers?.reports().map((r) => r.state) ?? [];
    return own.map((l) => states.reduce((a, w) => {
      const b = w.listeners.find((x) => x.name === l.name);
      return b ? { ...a, inflightBytes: a.inflightBytes + b.inflightBytes, budgetBytes: a.budgetBytes + b.budgetBytes, saturated: a.saturated || b.saturated } : a;
    }, l));
  }

  get readiness(): string {
    return this.config.metrics.readiness;
  }

  /**
   * Ready means taking events: running, every queue taking them, every input and listener up, no
   * HTTP listener out of memory budget. With readiness: delivering, no intake stalled either.
   */
  ready(): boolean {
    if (this.#phase !== 'running' || this.down().length > 0) return false;
    const intakes = this.health();
    if (!intakes.every((i) => i.accepting) || !this.listenerHealth().every((l) => !l.saturated)) return false;
    return this.config.metrics.readiness !== 'delivering' || intakes.every((i) => !i.stalled);
  }

  down(): string[] {
    const running = new Set(this.shared.map((s) => s.config.label));
    const out = this.config.listeners.filter((l) => !running.has(l.label)).map((l) => l.label);
    for (const p of this.pipelines) for (const c of p.intake.inputs) if (!p.sources.has(c.label)) out.push(`${p.name}/${c.label}`);
    for (const { state } of this.#workers?.reports() ?? []) for (const d of state.down) if (!out.includes(d)) out.push(d);
    // A worker that has not reported for a while (its event loop is stuck) takes no events either.
    for (const w of this.#workers?.silent() ?? []) out.push(`worker ${w}`);
    return out;
  }

  /** Each intake's health across the threads (the workers' as of their last report). */
  health(): IntakeHealth[] {
    const own = this.#health();
    const states = this.#workers?.reports().map((r) => r.state) ?? [];
    if (states.length === 0) return own;
    return own.map((h) => states.reduce((a, w) => {
      const b = w.health.find((x) => x.name === h.name);
      if (!b) return a;
      // The state and last error of the thread that is worst off.
      const worse = (STATE_RANK[b.state] ?? 0) > (STATE_RANK[a.state] ?? 0);
      return {
        ...a,
        state: worse ? b.state : a.state,
        lastError: worse ? b.lastError : a.lastError ?? b.lastError,
        queuedEvents: a.queuedEvents + b.queuedEvents,
        unackedEvents: a.unackedEvents + b.unackedEvents,
        lastDeliveryAt: Math.max(a.lastDeliveryAt, b.lastDeliveryAt),
        stalled: a.stalled || b.stalled,
        accepting: a.accepting && b.accepting,
      };
    }, h));
  }

  #health(): IntakeHealth[] {
    const now = Date.now();
    const stallMs = this.config.metrics.stall_timeout_ms;
    return this.pipelines.map((p) => {
      const queued = p.queue.pendingEvents;
      const backlog = queued + p.sink.unacknowledged;
      const since = p.runner.lastAckAt || this.#startedAt;
      return {
        name: p.name,
        output: p.sink.type,
        state: p.runner.state,
        queuedEvents: queued,
        unackedEvents: p.sink.unacknowledged,
        lastDeliveryAt: p.runner.lastAckAt,
        lastError: p.runner.lastError?.message,
        stalled: p.runner.state === 'key_rejected' || (backlog > 0 && now - since > stallMs),
        accepting: !(p.queue.full && p.intake.queue.when_full === 'block') && !p.queue.closed,
      };
    });
  }

  /** Ordered, idempotent shutdown within config.shutdown_timeout_ms. */
  stop(): Promise<StopReport> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<StopReport> {
    const wasRunning = this.#phase === 'running';
    this.#phase = 'draining';
    const timeoutMs = this.config.shutdown_timeout_ms;
    const deadline = AbortSignal.timeout(timeoutMs);
    // What each intake delivers from here on is the stop's to report.
    const deliveredAtStop = new Map(this.pipelines.map((p) => [p, p.delivered]));
    this.#stats?.stop();
    this.env.senders.stop();
    this.env.taps.close();
    // Views across threads end as a view in one thread does (their workers' viewers close with them).
    for (const v of this.#tapViews.values()) v.out.end();
    if (wasRunning) this.log.info({ timeout_ms: timeoutMs }, 'Stopping: inputs closed, draining queues.');
    const sources = [...this.pipelines.flatMap((p) => [...p.sources.values()]), ...this.shared.map((s) => s.source)];
    // The workers stop in the same order, at the same time, each its own inputs, queues and outputs.
    const workers = this.#workers?.stop(timeoutMs + 5_000);
    await Promise.all(sources.map((s) => s.stop().catch(() => {})));
    // What sources still have in flight (HTTP requests reading their bodies or waiting for delivery)
    // finishes first, within half the timeout, while the queues are open and the outputs deliver.
    await Promise.all(sources.map((s) => s.finish?.(timeoutMs / 2).catch(() => {})));
    await this.#reloading.catch(() => {});
    // A reload under way when the stop began may have started inputs since: stopped the same way.
    const late = [...this.pipelines.flatMap((p) => [...p.sources.values()]), ...this.shared.map((s) => s.source)].filter((s) => !sources.includes(s));
    if (late.length > 0) {
      await Promise.all(late.map((s) => s.stop().catch(() => {})));
      await Promise.all(late.map((s) => s.finish?.(timeoutMs / 2).catch(() => {})));
      sources.push(...late);
    }
    if (this.#worker) {
      // What its listeners forwarded is in the main thread's queues before those close.
      await Promise.all([...this.#forwards.values()].map((f) => f.queue.flushed()));
      for (const f of this.#forwards.values()) f.queue.close();
      this.#worker.inputsStopped();
    }
    // The workers' inputs are closed and what they forwarded taken, before this thread's queues close.
    await this.#workers?.inputsStopped(timeoutMs / 2);
    const own = await Promise.all(
      this.pipelines.map(async (p): Promise<[string, IntakeStop]> => {
        const before = deliveredAtStop.get(p) ?? 0;
        const { kept, lost } = await p.drain(deadline);
        return [p.name, { delivered: p.delivered - before, kept, lost }];
      }),
    );
    // File inputs save checkpoints covering what was delivered.
    await Promise.all(sources.map((s) => s.save?.().catch(() => {})));
    const theirs = await workers;
    if (this.#workers) workersHold([]);
    const report = addStops([
      ...own.map(([name, s]) => ({ ...s, perIntake: { [name]: s } })),
      ...(theirs ? [theirs] : []),
    ]);
    await Promise.all([...this.#retiring]);
    await this.#ops?.stop();
    await this.#emulator?.stop();
    this.#locks.releaseAll();
    this.#phase = 'stopped';
    // A worker's stop is the main thread's to tell, with the sum of all.
    if (wasRunning && !this.#worker) {
      const line = stopLine(report);
      this.log[line.level](line.fields, line.message);
    }
    return report;
  }
}

/** Output states from the best to the worst (an intake's state across threads is its worst thread's). */
const STATE_RANK: Record<string, number> = { connected: 0, starting: 1, stopped: 2, retrying: 3, key_rejected: 4 };


