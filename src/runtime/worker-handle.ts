// A worker thread (`workers: N`), as the main thread holds it: a ThreadHandle that asks it by
// message (its side is worker-main.ts), and keeps its last report (each second) for the operator
// views. Its log lines are written by the main thread's logger, tagged with its number.

import type { Writable } from 'node:stream';
import type { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Config } from '../config/resolve.ts';
import type { ForwardedIntake, ForwardIn, ForwardOut } from '../pipeline/forward.ts';
import { emptyReport, type ReloadReport } from '../pipeline/reload-plan.ts';
import type { Sighting } from '../pipeline/senders.ts';
import type { StopReport } from '../pipeline/stop-report.ts';
import type { TapQuery } from '../pipeline/tap.ts';
import { startThread } from '../platform/threads.ts';
import type { IntakeHealth, ListenerHealth } from '../telemetry/ops-server.ts';
import { secretMask } from '../telemetry/secret-mask.ts';
import type { Ask, Emulator, FromWorker, ToWorker, WorkerData, WorkerState } from './messages.ts';
import type { MetricsJson, ThreadHandle } from './thread-handle.ts';

/** A worker that has not reported its state for this long is taken as down (/readyz). */
const STALE_MS = 5_000;
/** Past the shutdown timeout, how long a worker's drain may take before it is ended from outside. */
const DRAIN_GRACE_MS = 5_000;

/** What the main thread does with what a worker tells it besides its answers. */
export interface WorkerEvents {
  /** Its senders seen in the last second, for the main thread's tables. */
  sightings(s: readonly Sighting[]): void;
  /** Events (or a wait) for an intake the main thread runs alone. */
  forward(worker: number, m: ForwardOut): void;
  /** A new report came (housekeeping looks at every thread's idleness). */
  reported(state: WorkerState): void;
  /** It failed while running: the process must end (its queue's events and counters are gone). */
  failed(err: Error): void;
}

export class WorkerHandle implements ThreadHandle {
  readonly name: string;
  readonly worker: Worker;
  readonly #index: number;
  /** Its last report; undefined before the first, and once it has ended. */
  #state: WorkerState | undefined;
  #stateAt = 0;
  readonly #pending = new Map<number, (value: unknown) => void>();
  #next = 0;
  #exited = false;
  readonly #exit: Promise<number>;
  readonly #taps = new Map<number, Writable>();
  /** Started, and not stopping: a failure from now on is fatal. */
  #running = false;

  constructor(data: WorkerData, log: Logger, events: WorkerEvents) {
    this.#index = data.intakeRelayWorker;
    this.name = String(data.intakeRelayWorker);
    const w = startThread(import.meta.url, './worker-entry', { workerData: data, name: `intake-relay-worker-${data.intakeRelayWorker}`, stdout: false, stderr: false });
    this.worker = w;
    const wlog = log.child({ worker: data.intakeRelayWorker });
    this.#exit = new Promise((resolve) => w.once('exit', resolve));
    w.on('message', (m: FromWorker) => {
      switch (m.kind) {
        case 'log':
          return relog(wlog, m.line);
        case 'reply':
          this.#pending.get(m.id)?.(m.value);
          this.#pending.delete(m.id);
          return;
        case 'state':
          this.#state = m.state;
          this.#stateAt = performance.now();
          return events.reported(m.state);
        case 'sightings':
          return events.sightings(m.sightings);
        case 'tap-data':
          this.#taps.get(m.tap)?.write(m.text);
          return;
        case 'forward':
        case 'forward-wait':
          return events.forward(this.#index, m);
      }
    });
    const fail = (err: Error): void => {
      if (this.#running) events.failed(Object.assign(new Error(`worker ${this.#index} failed: ${err.message}`), { cause: err }));
    };
    w.on('error', fail);
    w.once('exit', (code) => {
      this.#exited = true;
      this.#state = undefined;
      for (const resolve of this.#pending.values()) resolve(undefined);
      this.#pending.clear();
      if (code !== 0) fail(new Error(`worker ${this.#index} ended with code ${code}`));
    });
  }

  /** Resolves once the worker listens, or rejects with why it could not start. */
  started(): Promise<void> {
    return new Promise((resolve, reject) => {
      const onMessage = (m: FromWorker): void => {
        if (m.kind === 'started') done(), (this.#running = true), resolve();
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

  /** What became of what it forwarded. */
  tell(m: ForwardIn): void {
    this.#post(m);
  }

  #post(m: ToWorker): void {
    if (!this.#exited) this.worker.postMessage(m);
  }

  /** Asks; resolves with the answer, or undefined if the worker has ended. */
  #ask<T>(m: Ask): Promise<T | undefined> {
    if (this.#exited) return Promise.resolve(undefined);
    const id = this.#next++;
    return new Promise((resolve) => {
      this.#pending.set(id, resolve as (v: unknown) => void);
      this.worker.postMessage({ ...m, id } satisfies ToWorker);
    });
  }

  health(): readonly IntakeHealth[] {
    return this.#state?.health ?? [];
  }

  /** Its inputs down; itself when it has not reported for a while (its event loop is stuck). */
  down(): readonly string[] {
    const stuck = this.#state !== undefined && performance.now() - this.#stateAt > STALE_MS;
    return [...(this.#state?.down ?? []), ...(stuck ? [`worker ${this.#index}`] : [])];
  }

  listenerHealth(): readonly ListenerHealth[] {
    return this.#state?.listeners ?? [];
  }

  async metrics(): Promise<MetricsJson> {
    return (await this.#ask<MetricsJson>({ kind: 'metrics' })) ?? [];
  }

  async reload(config: Config, forwarded: readonly ForwardedIntake[], emulator: Emulator): Promise<ReloadReport> {
    const r = await this.#ask<ReloadReport>({ kind: 'reload', config, emulator, secrets: secretMask.secrets, forwarded });
    return r ?? { ...emptyReport(), failed: [`worker ${this.#index}: it has ended`] };
  }

  async stopInputs(timeoutMs: number): Promise<void> {
    this.#running = false;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.#ask({ kind: 'stop-inputs', timeoutMs }), new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  }

  /**
   * Its queues drained and outputs closed, then it ends. One not ended within the shutdown timeout
   * and a grace is ended from outside: what it held as of its last report is lost, counted so.
   */
  async drain(timeoutMs: number): Promise<StopReport> {
    this.#running = false;
    let cut: StopReport | undefined;
    const timer = setTimeout(() => {
      cut = heldBy(this.#state);
      void this.worker.terminate();
    }, timeoutMs + DRAIN_GRACE_MS);
    const r = await this.#ask<StopReport>({ kind: 'drain', timeoutMs });
    await this.#exit;
    clearTimeout(timer);
    return r ?? cut ?? heldBy(undefined);
  }

  openTap(id: number, query: TapQuery, out: Writable): boolean {
    this.#taps.set(id, out);
    this.#post({ kind: 'tap-open', tap: id, query });
    return true;
  }

  /** Memory is near memory_bytes: the worker collects its heap (memory-guard.ts); resolves once it has, or has ended. */
  async collect(): Promise<void> {
    await this.#ask<boolean>({ kind: 'collect' });
  }

  closeTap(id: number): void {
    this.#taps.delete(id);
    this.#post({ kind: 'tap-close', tap: id });
  }

  idle(): boolean {
    return this.#state?.idle ?? true;
  }

  utilization(): number | undefined {
    return this.#state?.utilization;
  }
}

/**
 * Starts `n` workers, one after the other, each over `config`; rejects (having ended those
 * started) if one cannot start.
 */
export async function startWorkers(n: number, config: Config, forwarded: readonly ForwardedIntake[], emulator: Emulator, log: Logger, events: WorkerEvents): Promise<WorkerHandle[]> {
  const started: WorkerHandle[] = [];
  try {
    for (let i = 1; i <= n; i++) {
      const w = new WorkerHandle({ intakeRelayWorker: i, config, emulator, secrets: secretMask.secrets, forwarded }, log, events);
      started.push(w);
      await w.started();
    }
  } catch (err) {
    await Promise.all(started.map((w) => w.worker.terminate()));
    throw err;
  }
  return started;
}

/** What a worker ended from outside held, as of its last report: lost. */
function heldBy(state: WorkerState | undefined): StopReport {
  const perIntake = Object.fromEntries((state?.health ?? []).map((h) => [h.name, { delivered: 0, kept: 0, lost: h.queuedEvents + h.unackedEvents }]));
  return { delivered: 0, kept: 0, lost: Object.values(perIntake).reduce((n, s) => n + s.lost, 0), perIntake };
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
