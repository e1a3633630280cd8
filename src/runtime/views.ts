// What the operator sees of the process, merged once from every thread's handle: each intake's
// health (the worst thread's state, queued events summed), inputs down, HTTP listeners' budgets,
// readiness (/readyz), the metrics (every thread's added up), the tables of senders and the tap
// (one viewer per thread joined into one output). The operations server asks this.

import type { Writable } from 'node:stream';
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue, type Registry } from 'prom-client';
import type { Config } from '../config/resolve.ts';
import type { SenderTable, SenderTables } from '../pipeline/senders.ts';
import { joinedTap, MAX_VIEWERS, type TapQuery } from '../pipeline/tap.ts';
import type { Topology } from '../pipeline/topology.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { HealthSource, IntakeHealth, IntakeProgress, ListenerHealth } from '../telemetry/ops-server.ts';
import { SNAPSHOT_METRICS, snapshotOf, type Snapshot } from '../telemetry/snapshot.ts';
import { VERSION } from '../version.ts';
import type { BacklogWatch } from './backlog.ts';
import type { ThreadHandle } from './thread-handle.ts';

/** Output states from the best to the worst (an intake's state across threads is its worst thread's). */
const STATE_RANK: Record<string, number> = { connected: 0, starting: 1, stopped: 2, retrying: 3, key_rejected: 4 };

/** What the view is made from: the process's state, as it is when asked. */
export interface ViewSource {
  readonly phase: HealthSource['phase'];
  /** The main thread's handle first. */
  readonly threads: readonly ThreadHandle[];
  /** The main thread's topology: the intakes and inputs a query may name. */
  readonly topology: Topology;
  readonly config: Config;
  readonly metrics: Metrics;
  readonly senders: SenderTables;
}

export class OperatorView implements HealthSource {
  readonly #s: () => ViewSource;
  /** Rates and backlogs, from a snapshot every few seconds (sample()). */
  readonly #watch: BacklogWatch;
  #nextTap = 0;
  /** Views across threads open now: a stop ends them as a view in one thread ends. */
  readonly #joined = new Set<Writable>();

  constructor(source: () => ViewSource, watch: BacklogWatch) {
    this.#s = source;
    this.#watch = watch;
  }

  get phase(): HealthSource['phase'] {
    return this.#s().phase;
  }

  get readiness(): string {
    return this.#s().config.metrics.readiness;
  }

  /** Each intake across the threads: the worst thread's state and last error, amounts summed. */
  health(): IntakeHealth[] {
    const s = this.#s();
    const [main, ...workers] = s.threads;
    const own = [...(main?.health(s.config.metrics.stall_timeout_ms) ?? [])];
    const theirs = workers.map((w) => w.health(s.config.metrics.stall_timeout_ms));
    return own.map((h) => theirs.reduce((a, w) => {
      const b = w.find((x) => x.name === h.name);
      if (!b) return a;
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

  /** Inputs and listeners down in any thread, each once; a worker that stopped reporting. */
  down(): string[] {
    const out: string[] = [];
    for (const t of this.#s().threads) for (const d of t.down()) if (!out.includes(d)) out.push(d);
    return out;
  }

  /** Each HTTP listener's budget, summed over the threads; saturated when any thread's is. */
  listenerHealth(): ListenerHealth[] {
    const [main, ...workers] = this.#s().threads;
    return (main?.listenerHealth() ?? []).map((l) => workers.reduce((a, w) => {
      const b = w.listenerHealth().find((x) => x.name === l.name);
      return b ? { ...a, inflightBytes: a.inflightBytes + b.inflightBytes, budgetBytes: a.budgetBytes + b.budgetBytes, saturated: a.saturated || b.saturated } : a;
    }, l));
  }

  /**
   * Ready means taking events: running, every queue taking them, every input and listener up, no
   * HTTP listener out of memory budget. With readiness: delivering, no intake stalled either.
   */
  ready(): boolean {
    if (this.phase !== 'running' || this.down().length > 0) return false;
    const intakes = this.health();
    if (!intakes.every((i) => i.accepting) || !this.listenerHealth().every((l) => !l.saturated)) return false;
    return this.readiness !== 'delivering' || intakes.every((i) => !i.stalled);
  }

  /** The tables as of their last check (every second): a request does not walk them. */
  senders(): SenderTable[] {
    return this.#s().senders.all();
  }

  /** Every thread's metrics, added up (counters and most gauges summed; metrics.ts names the others). */
  async gather(): Promise<Registry> {
    const s = this.#s();
    if (s.threads.length <= 1) return s.metrics.registry;
    return AggregatorRegistry.aggregate(await Promise.all(s.threads.map((t) => t.metrics())));
  }

  /** The relay now, for a person watching it (/snapshot, `top`), with each intake's rates and backlog. */
  async snapshot(): Promise<Snapshot & { readonly intakes: readonly (Snapshot['intakes'][number] & Partial<IntakeProgress>)[] }> {
    const s = await this.#read();
    return { ...s, intakes: s.intakes.map((i) => ({ ...i, ...this.progress(i.name) })) };
  }

  /** Takes a snapshot for the rates and backlogs (every few seconds, from the relay). */
  async sample(): Promise<void> {
    this.#watch.sample(await this.#read());
  }

  /**
   * Every thread's metrics and the intakes' health, now. One thread: only the metrics a snapshot
   * uses (all of them, process metrics included, took milliseconds of the event loop every few
   * seconds); with workers, every thread's, added up.
   */
  async #read(): Promise<Snapshot> {
    const s = this.#s();
    const metrics = s.threads.length <= 1 ? await metricsNamed(s.metrics.registry, SNAPSHOT_METRICS) : await (await this.gather()).getMetricsAsJSON();
    return snapshotOf(metrics, this.health(), { at: Date.now(), version: VERSION, phase: this.phase });
  }

  /** An intake's events/s in and out over the last minute, and its backlog (null when none). */
  progress(intake: string): IntakeProgress {
    const r = this.#watch.rates(intake);
    return {
      ...(r ? { events_in_per_s: Math.round(r.in_per_s), events_out_per_s: Math.round(r.out_per_s) } : {}),
      backlog: this.#watch.backlog(intake) ?? null,
    };
  }

  /** A live view of events for `out`; or why not (an unknown intake or input, too many viewers). */
  tap(q: TapQuery, out: Writable): { readonly status: number; readonly error: string } | undefined {
    const s = this.#s();
    const intakes = s.topology.intakes();
    if (q.intake !== undefined && !intakes.some((p) => p.name.toLowerCase() === q.intake!.toLowerCase())) {
      return { status: 400, error: `No intake named "${q.intake}": the intakes are ${intakes.map((p) => `"${p.name}"`).join(', ')}.` };
    }
    if (q.input !== undefined) {
      const inputs = s.topology.inputs().map((i) => i.label);
      if (!inputs.includes(q.input)) return { status: 400, error: `No input or listener named "${q.input}": they are ${inputs.map((i) => `"${i}"`).join(', ')}.` };
    }
    const busy = { status: 429, error: `${MAX_VIEWERS} viewers already watch: try again when one has finished.` };
    const [main, ...workers] = s.threads;
    if (!main) return busy;
    if (workers.length === 0) return main.openTap(0, q, out) ? undefined : busy;
    // Every thread shows its share of the rate; their lines join in `out`, up to the limit.
    const view = joinedTap(q, out, s.threads.length, s.metrics);
    const id = this.#nextTap++;
    if (!main.openTap(id, view.query, view.local)) return busy;
    for (const w of workers) w.openTap(id, view.query, view.local);
    this.#joined.add(out);
    out.once('close', () => {
      this.#joined.delete(out);
      for (const w of workers) w.closeTap(id);
    });
    return undefined;
  }

  /** Ends the views across threads (a stop: each thread's own viewers end with its tap). */
  endTaps(): void {
    for (const out of this.#joined) out.end();
  }
}

/** The metrics of `registry` named in `names` (those it has), collected as getMetricsAsJSON() would. */
async function metricsNamed(registry: Registry, names: readonly string[]): Promise<MetricObjectWithValues<MetricValue<string>>[]> {
  const got = await Promise.all(names.map((n) => registry.getSingleMetric(n)?.get()));
  return got.filter((m) => m !== undefined);
}
