// The process: what a relay runs once whatever its threads. It locks its state directories, masks
// its keys, starts the local intake emulator when an intake has no key, the main thread's topology
// and, with `workers`, the worker threads (each a ThreadHandle), the tables of senders, the
// operations server (through one merged view), the forwarder statistics, and keeps the process's
// memory (housekeeping). It starts them in that order, reloads the threads one after the other (the
// workers on the main thread's ports), and stops them in two steps under one deadline (every
// thread's inputs, then every thread's queues), then says what the stop did in one last line.

import type { Logger } from 'pino';
import type { Config } from '../config/resolve.ts';
import { IntakeEmulator, maskKey } from '../emulator/intake-emulator.ts';
import type { PipelineEnv } from '../pipeline/env.ts';
import { ForwardReceiver } from '../pipeline/forward.ts';
import { emptyReport, type ReloadReport } from '../pipeline/reload-plan.ts';
import { SenderTables } from '../pipeline/senders.ts';
import { stateDirs } from '../pipeline/state-dirs.ts';
import { StatsSource } from '../pipeline/stats.ts';
import { addStops, stopLine, type StopReport } from '../pipeline/stop-report.ts';
import { Taps } from '../pipeline/tap.ts';
import { Topology } from '../pipeline/topology.ts';
import { heldPorts, shareBounds, threadsFor, workerConfig, workerCount, workerForwards } from '../pipeline/worker-plan.ts';
import { sharePorts, workersHold } from '../platform/net.ts';
import { StateLockedError, StateLocks } from '../platform/state-lock.ts';
import { Metrics } from '../telemetry/metrics.ts';
import { setLogLevel } from '../telemetry/log.ts';
import { OpsServer } from '../telemetry/ops-server.ts';
import { BacklogWatch } from './backlog.ts';
import { holdInputState } from '../inputs/registry.ts';
import { secretMask, secretsOf } from '../telemetry/secret-mask.ts';
import { loopUtilization } from '../telemetry/utilization.ts';
import { buildCommit, VERSION } from '../version.ts';
import { Housekeeping } from './housekeeping.ts';
import { MemoryGuard, rssAnon } from './memory-guard.ts';
import { majorGc } from '../platform/v8-gc.ts';
import { releaseFreeMemory } from '../platform/native-addon.ts';
import type { Emulator } from './messages.ts';
import { LocalThread, type ThreadHandle } from './thread-handle.ts';
import { OperatorView } from './views.ts';
import { startWorkers, type WorkerHandle } from './worker-handle.ts';

export type { ReloadReport, StopReport };

let built: string | undefined;
/** The commit, found once per process (a checkout asks git). */
function commit(): string {
  return (built ??= buildCommit());
}

type Phase = 'starting' | 'running' | 'draining' | 'stopped';

/** Bytes as MiB with one decimal, for the log. */
const mib = (n: number): number => Math.round((n / 1048576) * 10) / 10;

/** How often the backlog watch takes a snapshot. */
const SAMPLE_INTERVAL_MS = 2_000;

export class Relay {
  readonly metrics: Metrics;
  /** What the operator sees (the operations server's source): every thread merged. */
  readonly view: OperatorView;
  /** The main thread's topology. */
  readonly topology: Topology;
  /**
   * What ends the process when a worker fails while running (main.ts's handler of unexpected
   * errors: exit 70, the service manager restarts). Tests replace it.
   */
  onFatal: (err: Error) => void = (err) =>
    setImmediate(() => {
      throw err;
    });
  readonly #log: Logger;
  readonly #env: PipelineEnv;
  readonly #local: LocalThread;
  #workers: WorkerHandle[] = [];
  /** Threads that run the network inputs, the main thread included (workers: N). */
  readonly #threads: number;
  readonly #locks: StateLocks;
  readonly #housekeeping: Housekeeping;
  readonly #guard: MemoryGuard | undefined;
  /** What each worker forwards to the intakes this thread runs alone. */
  readonly #receivers = new Map<number, ForwardReceiver>();
  #workersReloaded: Promise<void> = Promise.resolve();
  #emulator: IntakeEmulator | undefined;
  #ops: OpsServer | undefined;
  #stats: StatsSource | undefined;
  /** Rates and backlogs: a snapshot every SAMPLE_INTERVAL_MS. */
  #sampler: NodeJS.Timeout | undefined;
  #phase: Phase = 'starting';
  #stopping: Promise<StopReport> | undefined;
  #reloading: Promise<unknown> = Promise.resolve();

  constructor(config: Config, log: Logger, metrics = new Metrics()) {
    this.#log = log;
    this.metrics = metrics;
    // Threads only where something can run in a worker (file inputs and disk queues cannot).
    this.#threads = threadsFor(config);
    // Every thread's inputs share their ports; each thread holds its share of the bounds.
    sharePorts(this.#threads > 1, false);
    this.#locks = new StateLocks(config.file ?? '', (m) => log.warn(m));
    // Every key of every configuration this process ran is masked, in every thread.
    secretMask.add(secretsOf(config));
    metrics.buildInfo.set({ version: VERSION, commit: commit(), node: process.version }, 1);
    this.#housekeeping = new Housekeeping(() => this.#workers.every((w) => w.idle()));
    const gc = majorGc();
    this.#guard = gc && new MemoryGuard({
      budgetBytes: () => this.topology.config.memory_bytes,
      busy: () => !this.#housekeeping.idle || !this.#workers.every((w) => w.idle()),
      collect: () => {
        gc();
        return this.#workers.length > 0 ? Promise.all(this.#workers.map((w) => w.collect())) : undefined;
      },
      trim: releaseFreeMemory,
      collected: (before, after) => {
        metrics.memoryCollections.inc();
        log.debug({ anonymous_mib: mib(before), after_mib: mib(after), memory_mib: mib(this.topology.config.memory_bytes) }, 'Anonymous memory near memory_bytes: heaps collected (a worker slower than 250 ms may still be at it), free memory given back.');
      },
    });
    this.#env = {
      metrics, log, dataDir: config.dataDir, senders: new SenderTables(metrics, log), taps: new Taps(metrics, () => secretMask.secrets),
      emulator: () => this.#emulatorInfo(),
      activity: () => this.#housekeeping.activity(),
    };
    this.topology = new Topology(shareBounds(config, this.#threads), this.#env, { retire: () => this.#workersReloaded });
    const utilization = loopUtilization(500);
    let last: number | undefined;
    this.#local = new LocalThread(this.topology, metrics, this.#env.taps, () => this.#housekeeping.idle, () => last);
    this.view = new OperatorView(() => ({
      phase: this.#phase, threads: [this.#local, ...this.#workers], topology: this.topology, config: this.topology.config, metrics, senders: this.#env.senders,
    }), new BacklogWatch(log));
    // Each thread's utilization (the main thread's since the last scrape, at least half a second;
    // the workers' as they reported it), and the intakes' stall gauges.
    const anon = rssAnon();
    metrics.addProbe(() => {
      const a = anon();
      if (a !== undefined) metrics.memoryAnonymous.set(a);
      metrics.memoryBudget.set(this.topology.config.memory_bytes);
      last = utilization() ?? last;
      for (const t of [this.#local, ...this.#workers]) {
        const u = t.utilization();
        if (u !== undefined) metrics.threadUtilization.set({ thread: t.name }, u);
      }
      const now = Date.now();
      for (const h of this.view.health()) {
        metrics.outputStalled.set({ intake: h.name }, h.stalled ? 1 : 0);
        metrics.outputSinceDelivery.set({ intake: h.name }, Math.round((now - (h.lastDeliveryAt || this.#startedAt)) / 1000));
      }
    });
  }

  readonly #startedAt = Date.now();

  get phase(): Phase {
    return this.#phase;
  }
  get emulatorPort(): number | undefined {
    return this.#emulator?.port;
  }
  get opsPort(): number | undefined {
    return this.#ops?.port;
  }
  /** The worker threads (none without workers), for diagnostics. */
  workerThreads(): readonly import('node:worker_threads').Worker[] {
    return this.#workers.map((w) => w.worker);
  }

  #emulatorInfo(): Emulator {
    return this.#emulator && { port: this.#emulator.port, caPem: this.#emulator.caPem };
  }

  async start(): Promise<void> {
    const cfg = this.topology.config;
    // First: a second relay on the same state stops here, before it opens a port or a file.
    this.#locks.hold(stateDirs(cfg));
    for (const w of cfg.warnings) this.#log.warn(w);
    try {
      await this.#startEmulator(cfg);
      // The state each configured input owns (file checkpoints) is its own, whichever starts first.
      holdInputState(cfg.dataDir, cfg.intakes);
      await this.topology.start();
      await this.#startWorkers(cfg);
      this.#env.senders.start();
      if (cfg.metrics.enabled) {
        this.#ops = new OpsServer({ contentType: this.metrics.registry.contentType, scrape: async () => (await this.view.gather()).metrics() }, this.view, { tap: cfg.metrics.tap });
        await this.#ops.start(cfg.metrics.address, cfg.metrics.port);
      }
      this.#startStats(cfg);
      this.#sampler = setInterval(() => void this.view.sample().catch((err: unknown) => this.#log.warn({ err }, 'Backlog watch: a snapshot failed.')), SAMPLE_INTERVAL_MS);
      this.#sampler.unref();
    } catch (err) {
      await this.stop();
      throw err;
    }
    this.#phase = 'running';
    this.#housekeeping.started();
    // A stop that came while it started has stopped the guard already.
    if (!this.#stopping && this.#guard?.start() !== true) this.#log.info(this.#guard ? 'Memory guard off: RssAnon cannot be read here (not Linux).' : 'Memory guard off: Node.js was started without --expose-gc (the launchers give it).');
    this.#reloaded(true);
    this.#log.info(
      {
        intakes: this.topology.intakes().map((p) => ({ name: p.name, inputs: [...p.sources.values()].map((s) => `${s.label} ${s.where}`), output: p.outputWhere })),
        listeners: this.topology.inputs().filter((i) => i.intake === '').map((i) => `${i.label} on port ${this.topology.listenerPort(i.label)}`),
        ...(this.#workers.length > 0 ? { workers: this.#workers.length + 1 } : {}),
        metrics: this.#ops ? `http://${cfg.metrics.address}:${this.#ops.port}/metrics` : 'disabled',
      },
      'intake-relay started.',
    );
  }

  /** The worker threads (workers: N > 1), once every input of this thread listens (they join its ports). */
  async #startWorkers(cfg: Config): Promise<void> {
    const asked = workerCount(cfg.workers);
    if (this.#threads <= 1) {
      if (asked > 1) this.#log.warn({ workers: asked }, 'workers: no network input can run in a worker (file inputs, and the inputs of intakes with a disk queue, have a single owner): the main thread runs everything.');
      return;
    }
    const plan = this.#workerPlan();
    this.#workers = await startWorkers(this.#threads - 1, plan, this.#forwarded(), this.#emulatorInfo(), this.#log, {
      sightings: (s) => this.#env.senders.sighted(s),
      forward: (worker, m) => this.#receiver(worker).handle(m),
      reported: (state) => (state.idle ? this.#housekeeping.check() : this.#housekeeping.othersBusy()),
      failed: (err) => this.onFatal(err),
    });
    workersHold(heldPorts(plan));
    this.#env.senders.lagMs = 2_000;
  }

  /** What the workers run: the network inputs, on the ports this thread listens on. */
  #workerPlan(): Config {
    return workerConfig(this.topology.config, (intake, label) => this.topology.inputPort(intake, label), (label) => this.topology.listenerPort(label));
  }

  /** The intakes the workers' listeners reach through this thread: those it runs, with a disk queue. */
  #forwarded(): ReturnType<typeof workerForwards> {
    return workerForwards({ ...this.topology.config, intakes: this.topology.intakes().map((p) => p.intake) });
  }

  /** Where worker `worker`'s forwarded events go: this thread's queues, as the intakes are now. */
  #receiver(worker: number): ForwardReceiver {
    let r = this.#receivers.get(worker);
    if (!r) {
      r = new ForwardReceiver(
        (name) => this.topology.queueOf(name),
        (m) => this.#workers.find((w) => w.name === String(worker))?.tell(m),
        (intake, n) => this.metrics.eventsDropped.inc({ intake, stage: 'queue', reason: 'shutdown' }, n),
      );
      this.#receivers.set(worker, r);
    }
    return r;
  }

  async #startEmulator(cfg: Config): Promise<void> {
    if (this.#emulator || !cfg.intakes.some((i) => i.toEmulator)) return;
    this.#emulator = new IntakeEmulator({
      port: cfg.emulator.port,
      onMessage: (m) =>
        m.problems.length === 0
          ? this.#log.info({ emulator: true, message: maskKey(m.raw) }, 'Emulator received a valid message.')
          : this.#log.warn({ emulator: true, message: maskKey(m.raw), problems: m.problems }, 'Emulator received a message the intake would refuse.'),
      onProtocolError: (msg) => this.#log.error({ emulator: true }, msg),
    });
    await this.#emulator.start();
    this.#log.warn(
      { intakes: cfg.intakes.filter((i) => i.toEmulator).map((i) => i.name), emulator: `127.0.0.1:${this.#emulator.port}` },
      'No intake key set: forwarding to the local intake emulator. Set the key (e.g. INTAKE_KEY) to forward to the platform.',
    );
  }

  /** Forwarder statistics to the intake `stats.intake` names, if set, from the main thread's intakes. */
  #startStats(cfg: Config): void {
    this.#stats?.stop();
    const listeners = (): { config: Config['listeners'][number]; port: number }[] =>
      this.topology.config.listeners.flatMap((config) => {
        const port = this.topology.listenerPort(config.label);
        return port === undefined ? [] : [{ config, port }];
      });
    this.#stats = cfg.stats ? new StatsSource(cfg.stats, () => this.topology.intakes(), listeners, this.metrics, () => this.view.gather()) : undefined;
    this.#stats?.retarget(this.topology.intakes());
    this.#stats?.start();
  }

  /**
   * Applies a new configuration (already validated), one reload at a time: the main thread's
   * topology, then every worker's, on the ports the main thread listens on now. New state
   * directories are locked first, or nothing changes.
   */
  reload(next: Config): Promise<ReloadReport> {
    const run = this.#reloading.catch(() => {}).then(() => (this.#phase === 'running' ? this.#reload(next) : emptyReport()));
    this.#reloading = run;
    return run;
  }

  async #reload(next: Config): Promise<ReloadReport> {
    // Its keys are masked from now on, in every thread (the workers get the list with their reload).
    secretMask.add(secretsOf(next));
    try {
      this.#locks.hold(stateDirs(next));
    } catch (err) {
      this.#reloaded(false);
      const why = err instanceof StateLockedError ? err.message : `cannot lock a state directory: ${(err as Error).message}`;
      this.#log.error({ problems: [why] }, 'Reload refused: the new configuration is invalid; the running one stays.');
      return { ...emptyReport(), failed: [why] };
    }
    const oldStats = JSON.stringify(this.topology.config.stats);
    let reloaded = (): void => {};
    // Intakes this reload removes take what the workers forward until the workers have reloaded.
    this.#workersReloaded = new Promise<void>((resolve) => (reloaded = resolve));
    try {
      // The new configuration's file inputs keep their checkpoints (one rebuilt by this reload
      // too); those of inputs it removes may be taken over by an input moved or renamed.
      holdInputState(this.topology.config.dataDir, next.intakes);
      // Before the reload's own lines, so that they are written at the new level.
      if (next.log_level !== this.topology.config.log_level) setLogLevel(this.#log, next.log_level);
      for (const w of next.warnings) this.#log.warn(w);
      await this.#startEmulator(next);
      const report = await this.topology.reload(shareBounds(next, this.#threads));
      const plan = this.#workerPlan();
      const forwarded = this.#forwarded();
      const theirs = await Promise.all(this.#workers.map((w) => w.reload(plan, forwarded, this.#emulatorInfo())));
      if (this.#workers.length > 0) workersHold(heldPorts(plan));
      for (const r of theirs) report.failed.push(...r.failed.filter((f) => !report.failed.includes(f)));
      if (threadsFor(next) !== this.#threads) report.notApplied.push(`workers: ${this.#threads} thread${this.#threads > 1 ? 's' : ''} until a restart`);
      if (JSON.stringify(next.stats) !== oldStats) this.#startStats(next);
      else this.#stats?.retarget(this.topology.intakes());
      this.#reloaded(report.failed.length === 0);
      return report;
    } catch (err) {
      this.#reloaded(false);
      throw err;
    } finally {
      reloaded();
      // Whatever the reload got to: the tables follow the inputs that run now.
      this.#env.senders.follow(this.topology.inputs());
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

  /** Ordered, idempotent shutdown within shutdown_timeout_ms. */
  stop(): Promise<StopReport> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<StopReport> {
    const wasRunning = this.#phase === 'running';
    this.#phase = 'draining';
    this.#housekeeping.stop();
    this.#guard?.stop();
    const timeoutMs = this.topology.config.shutdown_timeout_ms;
    // Still taking events for shutdown_delay_ms (not ready meanwhile): the last lines of an
    // application stopped at the same time, a load balancer that has not seen this one go yet.
    const delayMs = this.topology.config.shutdown_delay_ms;
    if (wasRunning && delayMs > 0) {
      this.#log.info({ delay_ms: delayMs }, 'Stopping soon: inputs still take events until shutdown_delay_ms has passed.');
      await new Promise((r) => setTimeout(r, delayMs));
    }
    this.#stats?.stop();
    clearInterval(this.#sampler);
    this.#env.senders.stop();
    this.#env.taps.close();
    this.view.endTaps();
    if (wasRunning) this.#log.info({ timeout_ms: timeoutMs }, 'Stopping: inputs closed, draining queues.');
    const threads: ThreadHandle[] = [this.#local, ...this.#workers];
    // Every thread's inputs first (a worker's forwarded events are then in this thread's queues),
    // then every thread's queues, under the same deadline.
    await Promise.all(threads.map((t) => t.stopInputs(timeoutMs)));
    await this.#reloading.catch(() => {});
    const report = addStops(await Promise.all(threads.map((t) => t.drain(timeoutMs))));
    if (this.#workers.length > 0) workersHold([]);
    await this.#ops?.stop();
    await this.#emulator?.stop();
    this.#locks.releaseAll();
    this.#phase = 'stopped';
    if (wasRunning) {
      const line = stopLine(report);
      this.#log[line.level](line.fields, line.message);
    }
    return report;
  }
}
