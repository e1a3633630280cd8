// A source from its configuration, through the input registry: its Inlet (the one way into the
// queues of the intakes it feeds) and its telemetry, bound to its labels. An intake's own input
// feeds that intake; a shared listener feeds the intakes its routes or keys choose.

import type { Routing } from '../core/component.ts';
import type { SendersConfig } from '../core/config-parts.ts';
import type { Source } from '../core/contracts.ts';
import { inputOf, type ResolvedInput, type ResolvedListener } from '../inputs/registry.ts';
import { Inlet } from '../routing/inlet.ts';
import { inletTelemetry, senderSightings } from './instruments.ts';
import type { PipelineEnv } from './env.ts';

type SourceEnv = Pick<PipelineEnv, 'metrics' | 'log' | 'dataDir' | 'senders' | 'taps'>;

/** `owner`: the intake of an intake's own input; '' for a shared listener. `senders`: how its table of senders is kept. */
export function createSource(config: ResolvedInput | ResolvedListener, routing: Routing, owner: string, senders: SendersConfig, env: SourceEnv): Source {
  return createSourceWithInlet(config, routing, owner, senders, env).source;
}

/** The source and its inlet, whose routing a reload changes (shared listeners). */
export function createSourceWithInlet(
  config: ResolvedInput | ResolvedListener, routing: Routing, owner: string, senders: SendersConfig, env: SourceEnv,
): { source: Source; inlet: Inlet } {
  const def = inputOf(config);
  // A routing listener's drops at 0 from the start, so that rate() alerts have a series.
  if (def.router(config, () => 0)) for (const reason of ['route_drop', 'no_route', 'too_large']) env.metrics.routeDropped.inc({ listener: config.label, reason }, 0);
  const inlet = new Inlet(routing, { mode: def.offerMode }, inletTelemetry(env.metrics, config.label), env.taps.forInput(config.label));
  const table = env.senders.table(owner, config.label, senders);
  const tools = { metrics: env.metrics, log: env.log, owner, input: config.label, senders: senderSightings(table, def.senderKey) };
  const source = def.create(config, { inlet, tools, dataDir: env.dataDir });
  return { source, inlet };
}
