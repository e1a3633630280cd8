// One handle for every thread that runs a topology: the main thread's own (LocalThread) and each
// worker's (worker-handle.ts, a proxy that asks it by message). The process (relay.ts) holds a list
// of them and never asks which kind it has: every operator view is merged from them once
// (views.ts), and start, reload and stop go through them in the same order.

import type { Writable } from 'node:stream';
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import type { Config } from '../config/resolve.ts';
import type { ForwardedIntake } from '../pipeline/forward.ts';
import type { Pipeline } from '../pipeline/pipeline.ts';
import type { ReloadReport } from '../pipeline/reload-plan.ts';
import type { StopReport } from '../pipeline/stop-report.ts';
import type { TapQuery, Taps } from '../pipeline/tap.ts';
import type { Topology } from '../pipeline/topology.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { IntakeHealth, ListenerHealth } from '../telemetry/ops-server.ts';
import type { Emulator } from './messages.ts';

export type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];

export interface ThreadHandle {
  /** Its name in metrics and logs: 'main', or the worker's number. */
  readonly name: string;
  health(stallMs: number): readonly IntakeHealth[];
  /** Its inputs and listeners configured but not running (a worker that stopped reporting: itself). */
  down(): readonly string[];
  listenerHealth(): readonly ListenerHealth[];
  metrics(): Promise<MetricsJson>;
  /** Applies its part of a new configuration, with the intakes the main thread runs alone and the emulator. */
  reload(config: Config, forwarded: readonly ForwardedIntake[], emulator: Emulator): Promise<ReloadReport>;
  /** The stop's first step: its inputs take no more (a worker's forwarded events are in the main thread's queues). */
  stopInputs(timeoutMs: number): Promise<void>;
  /** The stop's second step: its queues drained, its outputs closed; what it delivered, kept and lost. */
  drain(timeoutMs: number): Promise<StopReport>;
  /** A tap viewer of `query` writing to `out`; false when that thread has MAX_VIEWERS already. */
  openTap(id: number, query: TapQuery, out: Writable): boolean;
  closeTap(id: number): void;
  /** Every output of it is idle (housekeeping.ts). */
  idle(): boolean;
  /** Its event loop's utilization lately (0 to 1); undefined before there is a figure. */
  utilization(): number | undefined;
}

/** The main thread's own topology, as a handle. */
export class LocalThread implements ThreadHandle {
  readonly name = 'main';
  readonly topology: Topology;
  readonly #metrics: Metrics;
  readonly #taps: Taps;
  readonly #idle: () => boolean;
  readonly #utilization: () => number | undefined;
  #deliveredAtStop: ReadonlyMap<Pipeline, number> = new Map();

  constructor(topology: Topology, metrics: Metrics, taps: Taps, idle: () => boolean, utilization: () => number | undefined) {
    this.topology = topology;
    this.#metrics = metrics;
    this.#taps = taps;
    this.#idle = idle;
    this.#utilization = utilization;
  }

  health(stallMs: number): readonly IntakeHealth[] {
    return this.topology.health(stallMs);
  }
  down(): readonly string[] {
    return this.topology.down();
  }
  listenerHealth(): readonly ListenerHealth[] {
    return this.topology.listenerHealth();
  }
  metrics(): Promise<MetricsJson> {
    return this.#metrics.registry.getMetricsAsJSON();
  }
  reload(config: Config): Promise<ReloadReport> {
    return this.topology.reload(config);
  }
  stopInputs(timeoutMs: number): Promise<void> {
    // What each intake delivers from here on is the stop's to report.
    this.#deliveredAtStop = this.topology.deliveredNow();
    return this.topology.stopInputs(timeoutMs);
  }
  drain(timeoutMs: number): Promise<StopReport> {
    return this.topology.drain(AbortSignal.timeout(timeoutMs), this.#deliveredAtStop);
  }
  openTap(_id: number, query: TapQuery, out: Writable): boolean {
    return this.#taps.open(query, out);
  }
  closeTap(): void {
    // Its viewer ends when `out` closes.
  }
  idle(): boolean {
    return this.#idle();
  }
  utilization(): number | undefined {
    return this.#utilization();
  }
}
