// The worker side of `workers: N` (workers.ts): a Daemon of its own over the configuration the main
// thread gave it, its inputs on the main thread's ports (SO_REUSEPORT), its logs sent to the main
// thread as lines, its metrics and reports answered on request. It ends when told to stop, after
// the daemon's ordered stop.

import { Writable } from 'node:stream';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../config/resolve.ts';
import { revive } from '../core/threads.ts';
import { createLogger } from '../telemetry/log.ts';
import { secretMask } from '../telemetry/secret-mask.ts';
import { Metrics } from '../telemetry/metrics.ts';
import { loopUtilization } from '../telemetry/utilization.ts';
import { Daemon } from './daemon.ts';
import { emptyReport } from './reload.ts';
import type { FromWorker, ToWorker, WorkerData } from './workers.ts';

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
  const daemon = new Daemon(config, createLogger(config.log_level, lines), new Metrics(false), {
    worker: {
      emulator: data.emulator,
      sightings: (sightings) => post({ kind: 'sightings', sightings }),
      forwarded: data.forwarded,
      // A chunk's bytes move to the main thread, not copied.
      forward: (m, transfer) => port.postMessage(m satisfies FromWorker, transfer.byteLength > 0 ? [transfer] : []),
      inputsStopped: () => post({ kind: 'inputs-stopped' }),
    },
  });
  // Its health each second (and once started), for the main thread's /readyz and /status.
  const utilization = loopUtilization();
  const state = (): void => {
    post({ kind: 'state', state: { utilization: utilization() ?? 0, health: daemon.health(), down: daemon.down(), listeners: daemon.listenerHealth() } });
  };
  const report = setInterval(state, 1_000);
  report.unref();
  // Tap viewers the main thread opened here: their lines go to it.
  const taps = new Map<number, Writable>();
  port.on('message', (m: ToWorker) => {
    if (m.kind === 'tap-open') {
      const out = new Writable({
        write(chunk: Buffer | string, _enc, cb) {
          post({ kind: 'tap-data', tap: m.tap, text: chunk.toString() });
          cb();
        },
      });
      out.once('close', () => taps.delete(m.tap));
      if (daemon.env.taps.open(m.query, out)) taps.set(m.tap, out);
      return;
    }
    if (m.kind === 'tap-close') {
      taps.get(m.tap)?.destroy();
      return;
    }
    if (m.kind === 'forwarded' || m.kind === 'forward-room' || m.kind === 'forward-reached') {
      daemon.forwardReply(m);
      return;
    }
    const reply = (value: unknown): void => post({ kind: 'reply', id: m.id, value });
    switch (m.kind) {
      case 'metrics':
        void daemon.metrics.registry.getMetricsAsJSON().then(reply, () => reply([]));
        return;
      case 'reload':
        secretMask.add(m.secrets);
        void daemon.reloadWorker(revive(m.config) as Config, m.forwarded, m.emulator).then(reply, (err: unknown) => {
          daemon.log.error({ err }, 'Reload failed in a worker.');
          reply({ ...emptyReport(), failed: [`worker ${data.intakeRelayWorker}: ${(err as Error).message}`] });
        });
        return;
      case 'stop':
        clearInterval(report);
        void daemon.stop().then((r) => {
          // What its tables saw since their last check (the inputs' last reads too) goes to the main thread's.
          daemon.env.senders.check();
          reply(r);
          port.close();
        });
        return;
    }
  });
  try {
    await daemon.start();
    state();
    post({ kind: 'started' });
  } catch (err) {
    post({ kind: 'failed', message: (err as Error).message, code: (err as { code?: string }).code });
    port.close();
  }
}
