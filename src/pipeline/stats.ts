// The forwarder statistics as the daemon runs them: reports about the current pipelines, sent
// through a sender to the pipeline of the intake `stats.intake` names (a reload may replace it).

import type { Config } from '../config/resolve.ts';
import { ForwarderStats } from '../inputs/forwarder-stats.ts';
import { inputOf } from '../inputs/registry.ts';
import { Inlet } from '../routing/inlet.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { counterReader, inletTelemetry } from './instruments.ts';
import type { Pipeline } from './pipeline.ts';

export class StatsSource {
  readonly #intake: string;
  readonly #inlet: Inlet;
  readonly #stats: ForwarderStats;

  constructor(cfg: NonNullable<Config['stats']>, pipelines: () => readonly Pipeline[], metrics: Metrics) {
    this.#intake = cfg.intake.toLowerCase();
    this.#inlet = new Inlet({ targets: [] }, { mode: 'drop', unfiltered: true }, inletTelemetry(metrics, 'stats'));
    const view = {
      intakes: () => pipelines().map((p) => ({
        name: p.name,
        queue: p.queue,
        // The inputs running now, in the order they started.
        inputs: [...p.sources.values()].flatMap((s) => {
          const c = p.intake.inputs.find((x) => x.label === s.label);
          return c ? [{ label: s.label, record: (n: number) => inputOf(c).impstats(s.port, n) }] : [];
        }),
      })),
    };
    this.#stats = new ForwarderStats(counterReader(metrics), view, this.#inlet, cfg.interval_ms);
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
