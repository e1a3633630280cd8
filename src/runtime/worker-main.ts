// The worker side of `workers: N`: a topology of its own over the part of the configuration the
// main thread gave it (pipeline/worker-plan.ts), its inputs on the main thread's ports
// (SO_REUSEPORT), its logs sent to the main thread as lines, its state reported each second, its
// metrics, reloads and stop steps answered on request (worker-handle.ts is the other side). What its
// shared listeners route to an intake the main thread runs alone goes there (forward.ts).

import { Writable } from 'node:stream';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../config/resolve.ts';
import { ForwardTargets, type ForwardOut } from '../pipeline/forward.ts';
import type { PipelineEnv } from '../pipeline/env.ts';
import { emptyReport } from '../pipeline/reload-plan.ts';
import { SenderTables } from '../pipeline/senders.ts';
import { Taps } from '../pipeline/tap.ts';
import { Topology } from '../pipeline/topology.ts';
import { sharePorts } from '../platform/net.ts';
import { revive } from '../platform/threads.ts';
import { createLogger, setLogLevel } from '../telemetry/log.ts';
import { Metrics } from '../telemetry/metrics.ts';
import { secretMask } from '../telemetry/secret-mask.ts';
import { loopUtilization } from '../telemetry/utilization.ts';
import { Housekeeping } from './housekeeping.ts';
import type { Emulator, FromWorker, ToWorker, WorkerData } from './messages.ts';

/** Whether this thread is a worker of intake-relay (the single executable's bundle starts as one too). */
export function isRelayWorker(): boolean {
  return !isMainThread && typeof (workerData as Partial<WorkerData> | null)?.intakeRelayWorker === 'number';
}

export async function runWorker(): Promise<void> {
  const data = workerData as WorkerData;
  const port = parentPort!;
  const post = (m: FromWorker): void => port.postMessage(m);
  const lines = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n')) if (line) post({ kind: 'log', line });
      cb();
    },
  });
  const config = revive(data.config);
  secretMask.add(data.secrets);
  // Its inputs join the main thread's ports.
  sharePorts(true, true);
  const metrics = new Metrics(false);
  const log = createLogger(config.log_level, lines);
  const housekeeping = new Housekeeping(undefined);
  let emulator: Emulator = data.emulator;
  const env: PipelineEnv = {
    metrics, log, dataDir: config.dataDir, taps: new Taps(metrics, () => secretMask.secrets),
    senders: new SenderTables(metrics, log, (sightings) => post({ kind: 'sightings', sightings })),
    emulator: () => emulator,
    activity: () => housekeeping.activity(),
  };
  // A chunk's bytes move to the main thread, not copied.
  const forwards = new ForwardTargets((m: ForwardOut, transfer) => port.postMessage(m satisfies FromWorker, transfer.byteLength > 0 ? [transfer] : []));
  forwards.set(data.forwarded);
  const topology = new Topology(config, env, { external: () => forwards.slots() });
  // Its state each second (and once started), for the main thread's /readyz, /status and housekeeping.
  const utilization = loopUtilization();
  const state = (): void => {
    const stallMs = topology.config.metrics.stall_timeout_ms;
    post({ kind: 'state', state: { utilization: utilization() ?? 0, health: topology.health(stallMs), down: topology.down(), listeners: topology.listenerHealth(), idle: housekeeping.idle } });
  };
  const report = setInterval(state, 1_000);
  report.unref();
  // Tap viewers the main thread opened here: their lines go to it.
  const taps = new Map<number, Writable>();
  let delivered = topology.deliveredNow();
  port.on('message', (m: ToWorker) => {
    switch (m.kind) {
      case 'forwarded':
      case 'forward-room':
      case 'forward-reached':
        return forwards.reply(m);
      case 'tap-open': {
        const out = new Writable({
          write(chunk: Buffer | string, _enc, cb) {
            post({ kind: 'tap-data', tap: m.tap, text: chunk.toString() });
            cb();
          },
        });
        out.once('close', () => taps.delete(m.tap));
        if (env.taps.open(m.query, out)) taps.set(m.tap, out);
        return;
      }
      case 'tap-close':
        taps.get(m.tap)?.destroy();
        return;
    }
    const reply = (value: unknown): void => post({ kind: 'reply', id: m.id, value });
    switch (m.kind) {
      case 'metrics':
        void metrics.registry.getMetricsAsJSON().then(reply, () => reply([]));
        return;
      case 'reload': {
        secretMask.add(m.secrets);
        emulator = m.emulator;
        const gone = forwards.set(m.forwarded);
        const next = revive(m.config) as Config;
        setLogLevel(log, next.log_level);
        void topology.reload(next).then(reply, (err: unknown) => {
          log.error({ err }, 'Reload failed in a worker.');
          reply({ ...emptyReport(), failed: [`worker ${data.intakeRelayWorker}: ${(err as Error).message}`] });
        }).finally(() => {
          // No listener routes to them now; what they still have on the way is answered by the main thread.
          for (const q of gone) q.close();
        });
        return;
      }
      case 'stop-inputs':
        clearInterval(report);
        env.senders.stop();
        env.taps.close();
        delivered = topology.deliveredNow();
        void topology.stopInputs(m.timeoutMs).then(async () => {
          // What its listeners forwarded is in the main thread's queues before those close.
          await forwards.flushed();
          forwards.close();
          reply(undefined);
        });
        return;
      case 'drain':
        void topology.drain(AbortSignal.timeout(m.timeoutMs), delivered).then((r) => {
          // What its tables saw since their last check (the inputs' last reads too) goes to the main thread's.
          env.senders.check();
          reply(r);
          port.close();
        });
        return;
    }
  });
  try {
    await topology.start();
    env.senders.start();
    state();
    post({ kind: 'started' });
  } catch (err) {
    post({ kind: 'failed', message: (err as Error).message, code: (err as { code?: string }).code });
    await topology.stopInputs(0).catch(() => {});
    await topology.drain(AbortSignal.timeout(0), delivered).catch(() => {});
    port.close();
  }
}
