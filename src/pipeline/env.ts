// What pipelines and sources are built with: the metrics registry, the logger, the tables of
// senders and the tap of this thread, the local intake emulator when intakes without a key forward
// to it, and where its outputs' activity goes.

import type { Logger } from 'pino';
import type { Activity } from '../core/runner.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { SenderTables } from './senders.ts';
import type { Taps } from './tap.ts';

/** What every pipeline is built with. */
export interface PipelineEnv {
  readonly metrics: Metrics;
  readonly log: Logger;
  /** data_dir as the daemon started with it (a reload does not change it). */
  readonly dataDir: string;
  /** Every input's table of senders. */
  readonly senders: SenderTables;
  /** The live views of events (intake-relay tap). */
  readonly taps: Taps;
  /** The local intake emulator, when intakes without a key forward to it. */
  emulator(): { readonly port: number; readonly caPem: string } | undefined;
  /** What an output's runner tells of its activity (the process's housekeeping counts them). */
  activity(): Activity;
}
