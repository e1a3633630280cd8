// What runs where with workers (`workers: N`, N > 1), as a pure plan from the configuration: the
// main thread and N - 1 worker threads each run the network inputs (UDP, TCP, TLS, RELP, HTTP) on
// the same ports (SO_REUSEPORT: the kernel spreads connections and datagrams over the threads'
// sockets), and each thread deframes, parses, routes, filters, queues and delivers what it received
// through its own output connection per intake. Nothing crosses threads per event: a worker runs a
// topology of its own (the same code as the main thread's), over the part of the configuration that
// can run in several copies (runtime/ starts them and talks to them).
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
// connection, which is where one core ran out before (docs/guides/collectors.md, "Sizing a collector"). The cost is a
// connection to the intake per thread and per intake, and a memory queue per thread, so each
// thread's memory queue gets its share of the intake's bounds (the bounds stay the intake's).

import type { Config, ResolvedIntake } from '../config/resolve.ts';
import { inputOf, type ResolvedInput, type ResolvedListener } from '../inputs/registry.ts';
import { portKey } from '../platform/net.ts';
import { forwardedIntakes, type ForwardedIntake } from './forward.ts';

import { workerCount } from '../core/config-values.ts';

export { AUTO_WORKERS_MAX, workerCount } from '../core/config-values.ts';

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
