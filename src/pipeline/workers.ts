// Workers (`workers: N`, N > 1): the main thread and N - 1 worker threads each run the network
// inputs (UDP, TCP, TLS, RELP, HTTP) on the same ports (SO_REUSEPORT: the kernel spreads
// connections and datagrams over the threads' sockets), and each thread deframes, parses, routes,
// filters, queues and delivers what it received through its own output connection per intake.
// Nothing crosses threads per event: a worker is a Daemon of its own (same code, same order of
// start, reload and stop), given the part of the configuration that can run in several copies.
// What must have a single owner stays in the main thread alone: file inputs (checkpoints), disk
// queues (one writer per directory), the forwarder statistics, the emulator, the operations
// server, which adds the workers' metrics to its own.
//
// Shared listeners run in every thread whatever their routes lead to, so that a reload never moves
// one under its connections: what a worker's listener routes to an intake with a disk queue goes
// to the main thread, a read at a time (forward.ts). An intake's own network inputs run in every
// thread when its queue is in memory, in the main thread alone when it is on disk; a reload cannot
// change a queue's type, so it never moves those either.
//
// Own outputs rather than one shared output in the main thread: a shared output would copy every
// event's bytes between threads and put every event through one thread's queue, formatter and TLS
// connection, which is where one core ran out before (README, "Sizing a collector"). The cost is a
// connection to the intake per thread and per intake, and a memory queue per thread, so each
// thread's memory queue gets its share of the intake's bounds (the bounds stay the intake's).

import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { startThread } from '../core/threads.ts';
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { Config, ResolvedIntake } from '../config/resolve.ts';
import { inputOf, type ResolvedInput, type ResolvedListener } from '../inputs/registry.ts';
import { emptyReport, type ReloadReport } from './reload.ts';
import type { Sighting } from './senders.ts';
import type { TapQuery } from './tap.ts';
import type { IntakeHealth, ListenerHealth } from '../telemetry/ops-server.ts';
import { portKey } from '../core/net.ts';
import { addStops, type StopReport } from './stop-report.ts';
import { secretMask } from '../telemetry/secret-mask.ts';
import { forwardedIntakes, type ForwardedIntake, type ForwardIn, type ForwardOut } from './forward.ts';

/** A worker that has not reported its health for this long is taken as down (/readyz). */
const STALE_MS = 5_000;

/** `workers: auto` uses the cores the process may use, up to this many. */
export const AUTO_WORKERS_MAX = 8;

/** How many threads run the network inputs (1: the main thread alone, as without workers). */
export function workerCount(setting: Config['workers']): number {
  return setting === 'auto' ? Math.min(availableParallelism(), AUTO_WORKERS_MAX) : setting;
}

type Port = (intake: string, label: string) => number | undefined;
type ListenerPort = (label: string) => number | undefined;

function listens(c: ResolvedInput | ResolvedListener): boolean {
  return inputOf(c).listening(c as never) !== undefined;
}

/** Shared listeners run in every thread (with workers): any that listens. */
function sharedListeners(cfg: Config): boolean {
  return cfg.listeners.some(listens);
}

/**
 * The intakes that run in the workers too: those with a memory queue that have a network input,
 * and, when there are shared listeners (each worker routes to any intake), every memory-queued one.
 */
function inWorkers(cfg: Config, i: ResolvedIntake): boolean {
  return i.queue.type === 'memory' && (sharedListeners(cfg) || i.inputs.some(listens));
}

/** The intakes a worker's shared listeners reach through the main thread (forward.ts). */
export function workerForwards(cfg: Config): ForwardedIntake[] {
  return sharedListeners(cfg) ? forwardedIntakes(cfg.intakes) : [];
}

/**
 * Each thread's memory queue holds its share of the intake's bounds, and each thread's HTTP
 * listener its share of max_inflight_bytes, so that the configured bounds hold for all of them.
 */
export function shareBounds(cfg: Config, threads: number): Config {
  if (threads <= 1) return cfg;
  const share = (n: number): number => Math.max(1, Math.floor(n / threads));
  const listeners = sharedListeners(cfg);
  return {
    ...cfg,
    intakes: cfg.intakes.map((i) =>
      inWorkers(cfg, i) && i.queue.type === 'memory' ? { ...i, queue: { ...i.queue, max_events: share(i.queue.max_events), max_bytes: share(i.queue.max_bytes) } } : i,
    ),
    listeners: cfg.listeners.map((l) => (listeners && 'max_inflight_bytes' in l ? { ...l, max_inflight_bytes: share(l.max_inflight_bytes) } : l)),
  };
}

/** Whether any part of `cfg` runs in workers (with workers: N > 1). */
export function runsInWorkers(cfg: Config): boolean {
  const plan = workerConfig(cfg, () => undefined, () => undefined);
  return plan.intakes.length > 0 || plan.listeners.length > 0;
}

/** The threads `cfg` runs its network inputs on: its `workers`, or 1 where nothing can run in a worker. */
export function threadsFor(cfg: Config): number {
  const n = workerCount(cfg.workers);
  return n > 1 && runsInWorkers(cfg) ? n : 1;
}

/**
 * What a worker runs: the network inputs of the intakes that run in workers, on the ports the
 * main thread listens on; no operations server, statistics or warnings (the main thread has them).
 * Its `intakes` are empty when nothing can run in a worker.
 */
export function workerConfig(cfg: Config, port: Port, listenerPort: ListenerPort): Config {
  // Only network inputs (which have a port) get here.
  const onPort = <T extends ResolvedInput | ResolvedListener>(c: T, p: number | undefined): T => ({ ...c, port: p ?? (c as { port: number }).port });
  const listeners = sharedListeners(cfg) ? cfg.listeners.filter(listens).map((l) => onPort(l, listenerPort(l.label))) : [];
  const intakes = cfg.intakes
    .filter((i) => inWorkers(cfg, i))
    .map((i) => ({ ...i, inputs: i.inputs.filter(listens).map((c) => onPort(c, port(i.name, c.label))) }));
  const work = intakes.some((i) => i.inputs.length > 0) || listeners.length > 0;
  return { ...cfg, intakes: work ? intakes : [], listeners: work ? listeners : [], stats: undefined, warnings: [], metrics: { ...cfg.metrics, enabled: false } };
}

/** The ports a worker configuration listens on, as portKey() writes them ("tcp 514"). */
export function heldPorts(cfg: Config): string[] {
  const all = [...cfg.intakes.flatMap((i) => i.inputs), ...cfg.listeners];
  return all.flatMap((c) => {
    const l = inputOf(c).listening(c as never);
    return l ? [portKey(l.proto, l.port)] : [];
  });
}

/** What a worker is given at its start. */
export interface WorkerData {
  readonly intakeRelayWorker: number;
  readonly config: Config;
  readonly emulator: { readonly port: number; readonly caPem: string } | undefined;
  /** Every secret the main thread masks (the keys of intakes a worker does not run too). */
  readonly secrets: readonly string[];
  /** The intakes its shared listeners reach through the main thread. */
  readonly forwarded: readonly ForwardedIntake[];
}

export type ToWorker =
  | { readonly kind: 'metrics'; readonly id: number }
  | { readonly kind: 'reload'; readonly id: number; readonly config: Config; readonly emulator: WorkerData['emulator']; readonly secrets: readonly string[]; readonly forwarded: readonly ForwardedIntake[] }
  | ForwardIn
  | { readonly kind: 'stop'; readonly id: number }
  | { readonly kind: 'tap-open'; readonly tap: number; readonly query: TapQuery }
  | { readonly kind: 'tap-close'; readonly tap: number };

/** What a worker tells the main thread every second: its intakes' health, its inputs down, its HTTP listeners' budgets. */
export interface WorkerState {
  /** Its event loop's utilization over the last second (0 to 1). */
  readonly utilization: number;
  readonly health: readonly IntakeHealth[];
  readonly down: readonly string[];
  readonly listeners: readonly ListenerHealth[];
}

export type FromWorker =
  | { readonly kind: 'started' }
  | { readonly kind: 'failed'; readonly message: string; readonly code: string | undefined }
  | { readonly kind: 'log'; readonly line: string }
  | { readonly kind: 'reply'; readonly id: number; readonly value: unknown }
  | { readonly kind: 'state'; readonly state: WorkerState }
  | { readonly kind: 'sightings'; readonly sightings: Sighting[] }
  | { readonly kind: 'tap-data'; readonly tap: number; readonly text: string }
  /** At a stop: its inputs are closed and the main thread has taken every chunk it forwarded. */
  | { readonly kind: 'inputs-stopped' }
  | ForwardOut;

/** What the main thread does with what workers tell it. */
export interface WorkerEvents {
  /** A worker's senders seen in the last second, for the main thread's tables. */
  sightings(s: readonly Sighting[]): void;
  /** Lines of a tap viewer's view (tap-open's number). */
  tapData(tap: number, text: string): void;
  /** Events (or a wait) for an intake the main thread runs alone, from worker `worker`. */
  forward(worker: number, m: ForwardOut): void;
}


/** A worker thread: the compiled or source module beside this one, or, in the single executable, its own bundle. */
function spawnWorker(data: WorkerData): Worker {
  return startThread(import.meta.url, './worker-entry', { workerData: data, name: `intake-relay-worker-${data.intakeRelayWorker}`, stdout: false, stderr: false });
}

class WorkerThread {
  readonly worker: Worker;
  /** Its last report (every second); undefined before the first, and once it has ended. */
  state: WorkerState | undefined;
  /** When that report came. */
  stateAt = 0;
  readonly index: number;
  readonly #pending = new Map<number, (value: unknown) => void>();
  #next = 0;
  #exited = false;
  /** At a stop: its inputs are closed and what it forwarded taken (or it has ended). */
  inputsStopped = false;
  readonly #onInputsStopped: (() => void)[] = [];
  readonly exited: Promise<number>;

  constructor(data: WorkerData, log: Logger, events: WorkerEvents, onFailure: (err: Error) => void) {
    const w = spawnWorker(data);
    this.worker = w;
    this.index = data.intakeRelayWorker;
    const wlog = log.child({ worker: data.intakeRelayWorker });
    this.exited = new Promise((resolve) => w.once('exit', resolve));
    w.on('message', (m: FromWorker) => {
      switch (m.kind) {
        case 'log':
          return relog(wlog, m.line);
        case 'reply':
          this.#pending.get(m.id)?.(m.value);
          this.#pending.delete(m.id);
          return;
        case 'state':
          this.state = m.state;
          this.stateAt = Date.now();
          return;
        case 'sightings':
          return events.sightings(m.sightings);
        case 'tap-data':
          return events.tapData(m.tap, m.text);
        case 'inputs-stopped':
          this.inputsStopped = true;
          for (const r of this.#onInputsStopped.splice(0)) r();
          return;
        case 'forward':
        case 'forward-wait':
          return events.forward(this.index, m);
      }
    });
    w.on('error', (err) => onFailure(err));
    w.once('exit', (code) => {
      this.#exited = true;
      this.state = undefined;
      this.inputsStopped = true;
      for (const r of this.#onInputsStopped.splice(0)) r();
      for (const resolve of this.#pending.values()) resolve(undefined);
      this.#pending.clear();
      if (code !== 0) onFailure(new Error(`worker ${data.intakeRelayWorker} ended with code ${code}`));
    });
  }

  /** Resolves once the worker listens, or rejects with why it could not start. */
  started(): Promise<void> {
    return new Promise((resolve, reject) => {
      const onMessage = (m: FromWorker): void => {
        if (m.kind === 'started') done(), resolve();
        else if (m.kind === 'failed') done(), reject(Object.assign(new Error(m.message), { code: m.code }));
      };
      const onExit = (code: number): void => (done(), reject(new Error(`a worker ended (code ${code}) before it started`)));
      const onError = (err: Error): void => (done(), reject(err));
      const done = (): void => {
        this.worker.off('message', onMessage);
        this.worker.off('exit', onExit);
        this.worker.off('error', onError);
      };
      this.worker.on('message', onMessage);
      this.worker.once('exit', onExit);
      this.worker.once('error', onError);
    });
  }

  tell(m: ToWorker): void {
    if (!this.#exited) this.worker.postMessage(m);
  }

  /** Resolves once its inputs are stopped at a stop (or it has ended). */
  untilInputsStopped(): Promise<void> {
    if (this.inputsStopped) return Promise.resolve();
    return new Promise((resolve) => this.#onInputsStopped.push(resolve));
  }

  /** Asks; resolves with the answer, or undefined if the worker has ended. */
  ask<T>(m: { readonly kind: 'metrics' } | Omit<Extract<ToWorker, { kind: 'reload' }>, 'id'> | { readonly kind: 'stop' }): Promise<T | undefined> {
    if (this.#exited) return Promise.resolve(undefined);
    const id = this.#next++;
    return new Promise((resolve) => {
      this.#pending.set(id, resolve as (v: unknown) => void);
      this.worker.postMessage({ ...m, id } satisfies ToWorker);
    });
  }
}

/** A worker's log line, written by the main thread's logger (one stream, one redaction), tagged with the worker. */
function relog(log: Logger, line: string): void {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return;
  }
  const { level, msg, time: _time, service: _service, ...rest } = o;
  const fn = typeof level === 'string' && level in log ? (log[level as 'info'] as Logger['info']).bind(log) : log.info.bind(log);
  fn(rest, typeof msg === 'string' ? msg : '');
}

/** The worker threads of a daemon (the main thread is the first of `workers`). */
export class Workers {
  readonly #threads: WorkerThread[] = [];
  #stopping = false;
  /** Every worker started: a failure from now on is fatal (before, start() fails with it). */
  #running = false;

  readonly #onFatal: (err: Error) => void;

  private constructor(onFatal: (err: Error) => void) {
    this.#onFatal = onFatal;
  }

  get count(): number {
    return this.#threads.length;
  }

  /** Starts `n` workers running `config`; rejects (having stopped those started) if one cannot start. */
  static async start(n: number, config: Config, forwarded: readonly ForwardedIntake[], emulator: WorkerData['emulator'], log: Logger, events: WorkerEvents, onFatal: (err: Error) => void): Promise<Workers> {
    const w = new Workers(onFatal);
    try {
      for (let i = 1; i <= n; i++) {
        const t = new WorkerThread({ intakeRelayWorker: i, config, emulator, secrets: secretMask.secrets, forwarded }, log, events, (err) => w.#failed(i, err));
        w.#threads.push(t);
        await t.started();
      }
      w.#running = true;
    } catch (err) {
      await w.stop();
      throw err;
    }
    return w;
  }

  /**
   * A worker that fails while running has lost what its queues held, and its counters with it: as
   * with an unexpected error in the main thread, the process must end so that the service manager
   * restarts it (`onFatal`), rather than run on with the books wrong.
   */
  #failed(i: number, err: Error): void {
    if (this.#stopping || !this.#running) return;
    this.#onFatal(Object.assign(new Error(`worker ${i} failed: ${err.message}`), { cause: err }));
  }

  /** The threads, for diagnostics (their threadId). */
  threads(): Worker[] {
    return this.#threads.map((t) => t.worker);
  }

  /** Each worker's number and its last report (each second). */
  reports(): { readonly worker: number; readonly state: WorkerState }[] {
    return this.#threads.flatMap((t) => (t.state ? [{ worker: t.index, state: t.state }] : []));
  }

  /** Workers whose last report is older than STALE_MS (their event loop is stuck), by number. */
  silent(now = Date.now()): number[] {
    return this.#threads.filter((t) => t.state !== undefined && now - t.stateAt > STALE_MS).map((t) => t.index);
  }

  /** Opens a tap viewer in every worker (their lines come back through WorkerEvents.tapData). */
  openTap(tap: number, query: TapQuery): void {
    for (const t of this.#threads) t.tell({ kind: 'tap-open', tap, query });
  }

  closeTap(tap: number): void {
    for (const t of this.#threads) t.tell({ kind: 'tap-close', tap });
  }

  /** Every worker's metrics, for the operations server to add to the main thread's. */
  async metrics(): Promise<MetricObjectWithValues<MetricValue<string>>[][]> {
    const all = await Promise.all(this.#threads.map((t) => t.ask<MetricObjectWithValues<MetricValue<string>>[]>({ kind: 'metrics' })));
    return all.filter((m) => m !== undefined);
  }

  /** Tells worker `worker` (its number) what became of what it forwarded. */
  tell(worker: number, m: ForwardIn): void {
    this.#threads.find((t) => t.index === worker)?.tell(m);
  }

  /** Applies a new worker configuration in every worker, with the emulator the main thread runs now; their reports. */
  async reload(config: Config, forwarded: readonly ForwardedIntake[], emulator: WorkerData['emulator']): Promise<ReloadReport[]> {
    const reports = await Promise.all(this.#threads.map((t) => t.ask<ReloadReport>({ kind: 'reload', config, emulator, secrets: secretMask.secrets, forwarded })));
    return reports.map((r, i) => r ?? { ...emptyReport(), failed: [`worker ${i + 1}: it has ended`] });
  }

  /**
   * At a stop (after stop()): resolves once every worker's inputs are closed and the main thread
   * has taken what they forwarded, or after `timeoutMs`: the main thread's queues close after that.
   */
  async inputsStopped(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(this.#threads.map((t) => t.untilInputsStopped())),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
    ]);
    clearTimeout(timer);
  }

  /**
   * Stops every worker (each in the daemon's order: inputs, queues drained, outputs closed); what
   * they could not deliver. A worker not ended within `timeoutMs` is ended from outside (what it
   * held is lost, as at a kill).
   */
  async stop(timeoutMs = 60_000): Promise<StopReport> {
    this.#stopping = true;
    const reports = await Promise.all(
      this.#threads.map(async (t) => {
        let cut: StopReport | undefined;
        const timer = setTimeout(() => {
          // What it held as of its last report is lost with it: counted so, as a memory queue's at a stop.
          cut = heldBy(t.state);
          void t.worker.terminate();
        }, timeoutMs);
        const r = await t.ask<StopReport>({ kind: 'stop' });
        await t.exited;
        clearTimeout(timer);
        return r ?? cut;
      }),
    );
    return addStops(reports.filter((r) => r !== undefined));
  }
}

/** What a worker ended from outside held, as of its last report: lost. */
function heldBy(state: WorkerState | undefined): StopReport {
  const perIntake = Object.fromEntries((state?.health ?? []).map((h) => [h.name, { delivered: 0, kept: 0, lost: h.queuedEvents + h.unackedEvents }]));
  return { delivered: 0, kept: 0, lost: Object.values(perIntake).reduce((n, s) => n + s.lost, 0), perIntake };
}

/** The main thread's metrics and the workers', as one registry (counters and most gauges summed; see metrics.ts). */
export function aggregate(own: MetricObjectWithValues<MetricValue<string>>[], workers: readonly MetricObjectWithValues<MetricValue<string>>[][]): Registry {
  return AggregatorRegistry.aggregate([own, ...workers]);
}
