// Starting the relay's own threads (workers, the configuration loader) from dist/, from src/ and
// from the single executable, and passing them values: structured cloning turns a Buffer into a
// plain Uint8Array, which revive() turns back.

import { Worker, type WorkerOptions } from 'node:worker_threads';

declare const INTAKE_RELAY_BUILD: unknown;

/** The bundle's text in the single executable (an asset beside its main script); undefined elsewhere. */
function bundledSource(): string | undefined {
  if (typeof INTAKE_RELAY_BUILD === 'undefined') return undefined;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const sea = require('node:sea') as typeof import('node:sea');
  return sea.getAsset('intake-relay.cjs', 'utf8');
}

/**
 * A thread running `entry` (a module path relative to `from`, the caller's import.meta.url, without
 * its extension: the caller's own, .ts or .js, is used), or, in the single executable, its bundle,
 * whose main script (main.ts) sees `options.workerData` and runs the same entry.
 */
export function startThread(from: string, entry: string, options: WorkerOptions): Worker {
  const bundle = bundledSource();
  if (bundle !== undefined) return new Worker(bundle, { ...options, eval: true });
  return new Worker(new URL(`${entry}${from.endsWith('.ts') ? '.ts' : '.js'}`, from), options);
}

/** `value` with every Uint8Array that structured cloning made of a Buffer a Buffer again. */
export function revive<T>(value: T): T {
  if (value instanceof Uint8Array) return (Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength)) as T;
  if (Array.isArray(value)) return value.map(revive) as T;
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = revive(v);
    return out as T;
  }
  return value;
}
