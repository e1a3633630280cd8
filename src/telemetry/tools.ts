// What a component binds its telemetry with: each input or output type binds its own (in its
// folder, from core/telemetry.ts's interfaces), from the one metrics registry, the logger, its
// labels and, for an input, where its senders are counted.

import type { Logger } from 'pino';
import type { SenderSightings } from '../core/telemetry.ts';
import type { Metrics } from './metrics.ts';

export interface InputTools {
  readonly metrics: Metrics;
  readonly log: Logger;
  /** Its intake, or '' for a shared listener. */
  readonly owner: string;
  /** Its name (label). */
  readonly input: string;
  readonly senders: SenderSightings;
}

export interface OutputTools {
  readonly metrics: Metrics;
  readonly intake: string;
}
