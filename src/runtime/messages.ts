// What the main thread and a worker thread say to each other (thread-handle.ts: the main thread's
// side, a WorkerHandle; worker-main.ts: the worker's side). Structured-cloned: a Buffer arrives as a
// Uint8Array (platform/threads.ts's revive turns it back).

import type { Config } from '../config/resolve.ts';
import type { ForwardedIntake, ForwardIn, ForwardOut } from '../pipeline/forward.ts';
import type { ReloadReport } from '../pipeline/reload-plan.ts';
import type { Sighting } from '../pipeline/senders.ts';
import type { TapQuery } from '../pipeline/tap.ts';
import type { IntakeHealth, ListenerHealth } from '../telemetry/ops-server.ts';

export type Emulator = { readonly port: number; readonly caPem: string } | undefined;

/** What a worker is given at its start. */
export interface WorkerData {
  readonly intakeRelayWorker: number;
  readonly config: Config;
  readonly emulator: Emulator;
  /** Every secret the main thread masks (the keys of intakes a worker does not run too). */
  readonly secrets: readonly string[];
  /** The intakes its shared listeners reach through the main thread. */
  readonly forwarded: readonly ForwardedIntake[];
}

/** What the main thread asks (each answered with a reply of the same id). */
export type Ask =
  | { readonly kind: 'metrics' }
  | { readonly kind: 'reload'; readonly config: Config; readonly emulator: Emulator; readonly secrets: readonly string[]; readonly forwarded: readonly ForwardedIntake[] }
  | { readonly kind: 'stop-inputs'; readonly timeoutMs: number }
  | { readonly kind: 'drain'; readonly timeoutMs: number }
  /** Memory is near memory_bytes (memory-guard.ts): collect this thread's heap now, then answer. */
  | { readonly kind: 'collect' };

export type ToWorker =
  | (Ask & { readonly id: number })
  | ForwardIn
  | { readonly kind: 'tap-open'; readonly tap: number; readonly query: TapQuery }
  | { readonly kind: 'tap-close'; readonly tap: number };

/** What a worker tells the main thread every second. */
export interface WorkerState {
  /** Its event loop's utilization over the last second (0 to 1). */
  readonly utilization: number;
  readonly health: readonly IntakeHealth[];
  readonly down: readonly string[];
  readonly listeners: readonly ListenerHealth[];
  /** Every output of its is idle (housekeeping.ts). */
  readonly idle: boolean;
}

export type FromWorker =
  | { readonly kind: 'started' }
  | { readonly kind: 'failed'; readonly message: string; readonly code: string | undefined }
  | { readonly kind: 'log'; readonly line: string }
  | { readonly kind: 'reply'; readonly id: number; readonly value: unknown }
  | { readonly kind: 'state'; readonly state: WorkerState }
  | { readonly kind: 'sightings'; readonly sightings: Sighting[] }
  | { readonly kind: 'tap-data'; readonly tap: number; readonly text: string }
  | ForwardOut;

export type { ReloadReport };
