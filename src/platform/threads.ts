// Starting the relay's own threads (workers, UDP receive threads) from dist/, from src/ and
// from the single executable, and passing them values: structured cloning turns a Buffer into a
// plain Uint8Array, which revive() turns back.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker, type WorkerOptions } from 'node:worker_threads';

declare const INTAKE_RELAY_BUILD: unknown;

/**
 * A thread running `entry` (a module path relative to `from`, the caller's import.meta.url, without
 * its extension: the caller's own, .ts or .js, is used). In the single executable, the thread runs
 * the bundle `asset` (the main bundle, whose main script sees `options.workerData` and runs the
 * worker's side; or a thread's own), written to a private temporary directory and removed once the
 * thread has loaded it (its first message): a thread runs from a file, never from source text.
 */
export function startThread(from: string, entry: string, options: WorkerOptions, asset = 'intake-relay.cjs'): Worker {
  if (typeof INTAKE_RELAY_BUILD === 'undefined') return new Worker(new URL(`${entry}${from.endsWith('.ts') ? '.ts' : '.js'}`, from), options);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const sea = require('node:sea') as typeof import('node:sea');
  let dir: string;
  try {
    dir = mkdtempSync(join(tmpdir(), 'intake-relay-'));
  } catch (err) {
    throw new Error(`cannot write a thread's code to ${tmpdir()} (${(err as NodeJS.ErrnoException).code}): give the executable a writable temporary directory (TMPDIR, or a tmpfs or emptyDir on /tmp)`, { cause: err });
  }
  const remove = (): void => rmSync(dir, { recursive: true, force: true });
  const file = join(dir, asset);
  try {
    writeFileSync(file, sea.getAsset(asset, 'utf8'), { mode: 0o400 });
    const w = new Worker(file, options);
    // Its first message comes once its code is loaded ('online' comes before the module is read).
    w.once('message', remove);
    w.once('error', remove);
    w.once('exit', remove);
    return w;
  } catch (err) {
    remove();
    throw err;
  }
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
