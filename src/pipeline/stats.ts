// The forwarder statistics as the daemon runs them: reports about the current pipelines, sent
// through a sender to the pipeline of the intake `stats.intake` names (a reload may replace it).

import type { Config } from '../config/resolve.ts';

type ResolvedListener = Config['listeners'][number];
import { ForwarderStats, forwarderName, type StatsView } from '../inputs/forwarder-stats.ts';
import { outputOf } from '../outputs/registry.ts';
import { inputOf } from '../inputs/registry.ts';
import { Inlet } from '../routing/inlet.ts';
import type { Registry } from 'prom-client';
import type { Metrics } from '../telemetry/metrics.ts';
import { counterReader, inletTelemetry } from './instruments.ts';
import type { Pipeline } from './pipeline.ts';

export class StatsSource {
  readonly #intake: string;
  readonly #inlet: Inlet;
  readonly #stats: ForwarderStats;

  /** `listeners`: the shared listeners running now, with their configuration and port; `registry`: every thread's metrics, added up. */
  constructor(
    cfg: NonNullable<Config['stats']>,
    pipelines: () => readonly Pipeline[],
    listeners: () => readonly { readonly config: ResolvedListener; readonly port: number }[],
    metrics: Metrics,
    registry: () => Promise<Registry>,
  ) {
    this.#intake = cfg.intake.toLowerCase();
    this.#inlet = new Inlet({ targets: [] }, { mode: 'drop', unfiltered: true }, inletTelemetry(metrics, 'stats'));
    const statsIntake = this.#intake;
    const view: StatsView = {
      intakes: () => pipelines().map((p) => ({
        name: p.name,
        queue: p.queue,
        omfwd: p.intake.toEmulator ? undefined : outputOf(p.intake.output).omfwdRecord?.(p.intake.output),
        stats: p.name.toLowerCase() === statsIntake,
        // The inputs running now, in the order they started, named input-<intake> as the forwarder names its one input.
        inputs: [...p.sources.values()].flatMap((s) => {
          const c = p.intake.inputs.find((x) => x.label === s.label);
          const name = `input-${forwarderName(p.name)}`;
          return c ? [{ intake: p.name, label: s.label, record: (n: number) => inputOf(c).impstats(name, 'address' in c ? c.address : '', s.port, n) }] : [];
        }),
      })),
      listeners: () => listeners().map(({ config: c, port }) => ({
        intake: '',
        label: c.label,
        record: (n: number) => inputOf(c).impstats(`input-${forwarderName(c.label)}`, 'address' in c ? c.address : '', port, n),
      })),
    };
    this.#stats = new ForwarderStats(counterReader(registry), view, this.#inlet, cfg.interval_ms);
  }

  /** Points the reports at the statistics intake's pipeline among `pipelines` (none: reports wait). */
  retarget(pipelines: readonly Pipeline[]): void {
    const p = pipelines.find((x) => x.name.toLowerCase() === this.#intake);
    this.#inlet.retarget({ targets: p ? [p.target] : [] });
  }

  start(): void {
    this.#stats.start();
  }

  stop(): void {
    this.#stats.stop();
  }
}
