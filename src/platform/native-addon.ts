// The relay's native addon (native/). addon.c registers each concern's calls:
// - udp-recvmmsg.c: the UDP input's batched receive (src/inputs/udp/native.ts);
// - process.c: trimMemory(), which gives the C library's free memory back to the system;
//   mallocThresholds(), which fixes its thresholds for a daemon; lockFile(), the state
//   directories' flock;
// - copy-runs.c: copyRuns(), the batch formatter's copies in one call, and jsonExtras(), the JSON
//   body's escapes measured (src/syslog/copy-plan.ts).
// Built by native/compile.mjs at `npm ci` and `npm run build` (needs a C compiler), and carried
// inside the single executable as an asset. Where it is missing or does not load, the UDP input
// uses Node's dgram, memory is given back as the C library sees fit, and locks are taken with
// flock(1).

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

declare const INTAKE_RELAY_BUILD: unknown;

/** The file name, in native/build/ of a checkout or package, and as the single executable's asset. */
export const NATIVE_ADDON_FILE = 'relay.node';

let loaded: { readonly exports: Record<string, unknown> | undefined; readonly reason: string } | undefined;

/** The addon's exports, or undefined (and why) when it is not built or does not load here. */
export function nativeAddon(): { readonly exports: Record<string, unknown> | undefined; readonly reason: string } {
  loaded ??= load();
  return loaded;
}

/**
 * Gives the C library's free memory back to the system (glibc's malloc_trim): what a burst freed
 * inside its heaps stays resident otherwise. Once every output is idle (runtime/housekeeping.ts),
 * not for every turn: it walks every heap. False where the addon or glibc is missing.
 */
export function releaseFreeMemory(): boolean {
  const trim = nativeAddon().exports?.trimMemory;
  return typeof trim === 'function' ? (trim as () => boolean)() : false;
}

/** From this size an allocation is mapped on its own (glibc's default is 128 KiB, raised as blocks are freed). */
export const MALLOC_MAP_BYTES = 1024 * 1024;
/** A heap gives back a free top larger than this (glibc's default is 128 KiB, raised likewise). */
export const MALLOC_TRIM_BYTES = 256 * 1024;

/**
 * Fixes the C library's thresholds for a daemon, at the start of `run` (glibc; unless
 * MALLOC_MMAP_THRESHOLD_ or MALLOC_TRIM_THRESHOLD_ gave them). glibc maps a block of 128 KiB or
 * more on its own, but each time such a block is freed it raises that size to the block's, and the
 * free top a heap keeps to twice that. The relay frees large blocks all the time (HTTP bodies, the
 * syslog window's slabs), so its heaps came to keep tens of MB: under an HTTPS flood, 20 MiB in the
 * main heap and 10 in one thread's, peaks of 81-84 MiB in 2 runs of 6. Fixed (reads of 512 KiB and
 * bodies stay in the heap, which keeps at most 256 KiB of free top): HTTPS 55-59 MiB, TCP 3-6 MiB
 * less, at the same CPU per event (docs/performance.md). Returns whether it set them.
 */
export function tuneMalloc(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.MALLOC_MMAP_THRESHOLD_ !== undefined || env.MALLOC_TRIM_THRESHOLD_ !== undefined) return false;
  const set = nativeAddon().exports?.mallocThresholds;
  return typeof set === 'function' ? (set as (map: number, trim: number) => boolean)(MALLOC_MAP_BYTES, MALLOC_TRIM_BYTES) : false;
}

/**
 * The addon as a file other threads can load, and `done` to call once they have: in a checkout or
 * package the built file; in the single executable its asset written to a private temporary
 * directory, removed by `done`. Or why not.
 */
export function nativeAddonFile(): { readonly file: string; done(): void } | { readonly reason: string } {
  const addon = nativeAddon();
  if (!addon.exports) return { reason: addon.reason };
  if (typeof INTAKE_RELAY_BUILD === 'undefined') return { file: builtFile(), done: () => {} };
  try {
    const copy = assetCopy();
    return { file: copy.file, done: copy.remove };
  } catch (err) {
    return { reason: (err as Error).message };
  }
}

/** Where `npm ci` / `npm run build` put the addon (native/compile.mjs). */
function builtFile(): string {
  return fileURLToPath(new URL(`../../native/build/${NATIVE_ADDON_FILE}`, import.meta.url));
}

function load(): { readonly exports: Record<string, unknown> | undefined; readonly reason: string } {
  if (process.platform !== 'linux') return { exports: undefined, reason: `the native addon is Linux only (this is ${process.platform})` };
  try {
    const module = { exports: {} as Record<string, unknown> };
    if (typeof INTAKE_RELAY_BUILD !== 'undefined') {
      loadFromExecutable(module);
    } else {
      process.dlopen(module, builtFile());
    }
    return { exports: { ...module.exports }, reason: 'loaded' };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return { exports: undefined, reason: e.code === 'ERR_DLOPEN_FAILED' && /No such file/.test(e.message) ? 'not built (no C compiler at install: see native/compile.mjs)' : e.message };
  }
}

/**
 * The single executable carries the addon as an asset: a shared object loads from a file only, so
 * it is written to a private temporary directory, loaded, and removed (the mapping stays).
 */
function loadFromExecutable(module: { exports: Record<string, unknown> }): void {
  const copy = assetCopy();
  try {
    process.dlopen(module, copy.file);
  } catch (err) {
    if (/failed to map segment|operation not permitted/i.test((err as Error).message)) {
      throw new Error(`${tmpdir()} does not let it be loaded (mounted noexec?): give the executable a temporary directory that allows it (TMPDIR, or a tmpfs on /tmp with exec)`, { cause: err });
    }
    throw err;
  } finally {
    copy.remove();
  }
}

/** The executable's asset written to a private temporary directory, and how to remove it. */
function assetCopy(): { readonly file: string; remove(): void } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const sea = require('node:sea') as typeof import('node:sea');
  let bytes: ArrayBuffer;
  try {
    bytes = sea.getRawAsset(NATIVE_ADDON_FILE);
  } catch {
    throw new Error('not built into this executable (no C compiler when it was packaged)');
  }
  let dir: string;
  try {
    dir = mkdtempSync(join(tmpdir(), 'intake-relay-'));
  } catch (err) {
    throw new Error(`cannot write it to ${tmpdir()} to load it (${(err as NodeJS.ErrnoException).code}): give the executable a writable temporary directory (TMPDIR, or a tmpfs or emptyDir on /tmp)`, { cause: err });
  }
  const remove = (): void => rmSync(dir, { recursive: true, force: true });
  const file = join(dir, NATIVE_ADDON_FILE);
  try {
    writeFileSync(file, new Uint8Array(bytes), { mode: 0o500 });
  } catch (err) {
    remove();
    throw err;
  }
  return { file, remove };
}
