// A source from its configuration, through the input registry: its Sender (the one way into the
// queues of the intakes it feeds) and its telemetry, bound to its labels. An intake's own input
// feeds that intake; a shared listener feeds the intakes its routes or keys choose.

import type { Routing } from '../core/component.ts';
import type { SendersConfig } from '../core/config-parts.ts';
import type { Source } from '../core/contracts.ts';
import { inputOf, type ResolvedInput, type ResolvedListener } from '../inputs/registry.ts';
import { Sender } from '../routing/sender.ts';
import { inputInstruments, senderTelemetry } from './instruments.ts';
import type { PipelineEnv } from './env.ts';

type SourceEnv = Pick<PipelineEnv, 'metrics' | 'log' | 'dataDir' | 'senders' | 'taps'>;

/** `owner`: the intake of an intake's own input; '' for a shared listener. `senders`: how its table of senders is kept. */
export function createSource(config: ResolvedInput | ResolvedListener, routing: Routing, owner: string, senders: SendersConfig, env: SourceEnv): Source {
  return createSourceWithSender(config, routing, owner, senders, env).source;
}

/** The source and its sender, whose routing a reload changes (shared listeners). */
export function createSourceWithSender(
  config: ResolvedInput | ResolvedListener, routing: Routing, owner: string, senders: SendersConfig, env: SourceEnv,
): { source: Source; sender: Sender } {
  const def = inputOf(config);
  // A routing listener's drops at 0 from the start, so that rate() alerts have a series.
  if (def.router(config, () => 0)) for (const reason of ['route_drop', 'no_route', 'too_large']) env.metrics.routeDropped.inc({ listener: config.label, reason }, 0);
  const sender = new Sender(routing, { canPause: def.canPause, alwaysWait: def.alwaysWait }, senderTelemetry(env.metrics, config.label), env.taps.forInput(config.label));
  const table = env.senders.table(owner, config.label, senders);
  const instruments = inputInstruments(env.metrics, env.log, owner, config.label, table, def.senderKey);
  const source = def.create(config, { sender, instruments, dataDir: env.dataDir });
  return { source, sender };
}
