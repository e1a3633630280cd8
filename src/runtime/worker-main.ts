// The worker side of `workers: N`: a topology of its own over the part of the configuration the
// main thread gave it (pipeline/worker-plan.ts), its inputs on the main thread's ports
// (SO_REUSEPORT), its logs sent to the main thread as lines, its state reported each second, its
// metrics, reloads and stop steps answered on request (worker-handle.ts is the other side). What its
// shared listeners route to an intake the main thread runs alone goes there (forward.ts).

import { Writable } from 'node:stream';
import { isMainThread, parentPort, workerData, type MessagePort } from 'node:worker_threads';
import type { Config } from '../config/resolve.ts';
import { ForwardTargets, type ForwardOut } from '../pipeline/forward.ts';
import type { PipelineEnv } from '../pipeline/env.ts';
import { emptyReport } from '../pipeline/reload-plan.ts';
import { SenderTables } from '../pipeline/senders.ts';
import { Taps } from '../pipeline/tap.ts';
import { Topology } from '../pipeline/topology.ts';
import type { Pipeline } from '../pipeline/pipeline.ts';
import { sharePorts } from '../platform/net.ts';
import { revive } from '../platform/threads.ts';
import { createLogger, setLogLevel, type Logger } from '../telemetry/log.ts';
import { Metrics } from '../telemetry/metrics.ts';
import { secretMask } from '../telemetry/secret-mask.ts';
import { loopUtilization } from '../telemetry/utilization.ts';
import { Housekeeping } from './housekeeping.ts';
import { majorGc } from '../platform/v8-gc.ts';
import type { Emulator, FromWorker, ToWorker, WorkerData } from './messages.ts';

/** A full collection when the main thread's memory guard asks (memory-guard.ts); none without --expose-gc. */
const collectNow = majorGc();

/** Whether this thread is a worker of intake-relay (the single executable's bundle starts as one too). */
export function isRelayWorker(): boolean {
  return !isMainThread && typeof (workerData as Partial<WorkerData> | null)?.intakeRelayWorker === 'number';
}

export async function runWorker(): Promise<void> {
  await new WorkerThread(workerData as WorkerData, parentPort!).run();
}

/** One worker: its topology, and the answers to what the main thread asks of it. */
class WorkerThread {
  readonly #data: WorkerData;
  readonly #port: MessagePort;
  readonly #log: Logger;
  readonly #metrics = new Metrics(false);
  readonly #housekeeping = new Housekeeping(undefined);
  readonly #env: PipelineEnv;
  readonly #forwards: ForwardTargets;
  readonly #topology: Topology;
  /** Its state each second (and once started), for the main thread's /readyz, /status and housekeeping. */
  readonly #report: NodeJS.Timeout;
  readonly #utilization = loopUtilization();
  /** Tap viewers the main thread opened here: their lines go to it. */
  readonly #taps = new Map<number, Writable>();
  #emulator: Emulator;
  /** What each intake had delivered when its inputs stopped (the drain reports what came after). */
  #delivered: ReadonlyMap<Pipeline, number>;

  constructor(data: WorkerData, port: MessagePort) {
    this.#data = data;
    this.#port = port;
    const lines = new Writable({
      write: (chunk: Buffer, _enc, cb) => {
        for (const line of chunk.toString().split('\n')) if (line) this.#post({ kind: 'log', line });
        cb();
      },
    });
    const config = revive(data.config);
    secretMask.add(data.secrets);
    // Its inputs join the main thread's ports.
    sharePorts(true, true);
    const metrics = this.#metrics;
    const log = (this.#log = createLogger(config.log_level, lines));
    this.#emulator = data.emulator;
    this.#env = {
      metrics, log, dataDir: config.dataDir, taps: new Taps(metrics, () => secretMask.secrets),
      senders: new SenderTables(metrics, log, (sightings) => this.#post({ kind: 'sightings', sightings })),
      emulator: () => this.#emulator,
      activity: () => this.#housekeeping.activity(),
    };
    // A chunk's bytes move to the main thread, not copied.
    this.#forwards = new ForwardTargets((m: ForwardOut, transfer) => port.postMessage(m satisfies FromWorker, transfer.byteLength > 0 ? [transfer] : []));
    this.#forwards.set(data.forwarded);
    this.#topology = new Topology(config, this.#env, { external: () => this.#forwards.slots() });
    this.#report = setInterval(() => this.#state(), 1_000);
    this.#report.unref();
    this.#delivered = this.#topology.deliveredNow();
  }

  #post(m: FromWorker): void {
    this.#port.postMessage(m);
  }

  #state(): void {
    const t = this.#topology;
    const health = t.health(t.config.metrics.stall_timeout_ms);
    this.#post({ kind: 'state', state: { utilization: this.#utilization() ?? 0, health, down: t.down(), listeners: t.listenerHealth(), idle: this.#housekeeping.idle } });
  }

  async run(): Promise<void> {
    this.#port.on('message', (m: ToWorker) => this.#answer(m));
    const topology = this.#topology;
    try {
      await topology.start();
      this.#env.senders.start();
      this.#housekeeping.started();
      this.#state();
      this.#post({ kind: 'started' });
    } catch (err) {
      this.#post({ kind: 'failed', message: (err as Error).message, code: (err as { code?: string }).code });
      await topology.stopInputs(0).catch(() => {});
      await topology.drain(AbortSignal.timeout(0), this.#delivered).catch(() => {});
      this.#port.close();
    }
  }

  #answer(m: ToWorker): void {
    switch (m.kind) {
      case 'forwarded':
      case 'forward-room':
      case 'forward-reached':
        return this.#forwards.reply(m);
      case 'tap-open':
        return this.#openTap(m.tap, m.query);
      case 'tap-close':
        this.#taps.get(m.tap)?.destroy();
        return;
    }
    const reply = (value: unknown): void => this.#post({ kind: 'reply', id: m.id, value });
    switch (m.kind) {
      case 'metrics':
        void this.#metrics.registry.getMetricsAsJSON().then(reply, () => reply([]));
        return;
      case 'reload':
        return this.#reload(m, reply);
      case 'stop-inputs':
        return this.#stopInputs(m.timeoutMs, reply);
      case 'collect':
        collectNow?.();
        return reply(true);
      case 'drain':
        void this.#topology.drain(AbortSignal.timeout(m.timeoutMs), this.#delivered).then((r) => {
          // What its tables saw since their last check (the inputs' last reads too) goes to the main thread's.
          this.#env.senders.check();
          reply(r);
          this.#port.close();
        });
        return;
    }
  }

  #openTap(tap: number, query: Extract<ToWorker, { kind: 'tap-open' }>['query']): void {
    const out = new Writable({
      write: (chunk: Buffer | string, _enc, cb) => {
        this.#post({ kind: 'tap-data', tap, text: chunk.toString() });
        cb();
      },
    });
    out.once('close', () => this.#taps.delete(tap));
    if (this.#env.taps.open(query, out)) this.#taps.set(tap, out);
  }

  #reload(m: Extract<ToWorker, { kind: 'reload' }>, reply: (value: unknown) => void): void {
    secretMask.add(m.secrets);
    this.#emulator = m.emulator;
    const gone = this.#forwards.set(m.forwarded);
    const next = revive(m.config) as Config;
    setLogLevel(this.#log, next.log_level);
    void this.#topology.reload(next).then(reply, (err: unknown) => {
      this.#log.error({ err }, 'Reload failed in a worker.');
      reply({ ...emptyReport(), failed: [`worker ${this.#data.intakeRelayWorker}: ${(err as Error).message}`] });
    }).finally(() => {
      // No listener routes to them now; what they still have on the way is answered by the main thread.
      for (const q of gone) q.close();
    });
  }

  #stopInputs(timeoutMs: number, reply: (value: unknown) => void): void {
    clearInterval(this.#report);
    this.#housekeeping.stop();
    this.#env.senders.stop();
    this.#env.taps.close();
    this.#delivered = this.#topology.deliveredNow();
    void this.#topology.stopInputs(timeoutMs).then(async () => {
      // What its listeners forwarded is in the main thread's queues before those close.
      await this.#forwards.flushed();
      this.#forwards.close();
      reply(undefined);
    });
  }
}
