// The rotated copy of a file's old content (discovery.ts): after a copytruncate, the lines written
// to the file after the last read are in a sibling that starts with the same first bytes
// (app.log.1, app.log-20261123), followed from where the file was, and read before the file. One
// compressed already, or gone, cannot be read: what it held unread is counted and logged. A file
// empty when last seen has no first bytes to match: the rotated copies written since then that no
// checkpoint knows are read from their start.

import type { FileTelemetry } from '../../core/telemetry.ts';
import { FINGERPRINT_BYTES, fingerprint, type Checkpoint } from './checkpoints.ts';
import type { FileState } from './followed.ts';
import { findSibling, rotatedSince, type FingerprintOf, type OnFileError } from './identity.ts';

/** Why the unread end of a file's old content could not be read (file_errors_total's reason). */
export type CopyLost = 'copy_compressed' | 'copy_missing' | 'deleted_unread';
/** A copy counts as written after a file was last seen if its mtime is later than this before it (file times are coarser than the clock). */
const MTIME_SLACK_MS = 100;

/** What reading the copies uses of discovery: the files it follows and has checkpoints of, and how it follows one more. */
export interface CopyHost {
  readonly tracked: ReadonlyMap<string, FileState>;
  saved(): Map<string, Checkpoint>;
  /** The paths the globs matched at the last scan. */
  matched(): ReadonlySet<string>;
  readonly telemetry: FileTelemetry;
  readonly unreadable: OnFileError;
  /** Follows a copy from `offset` as gone (read to its end, then let go), and holds it open at once. */
  follow(key: string, path: string, offset: number, size: number, fields: Partial<Pick<FileState, 'fp' | 'fpLen' | 'waitsFor'>>): Promise<void>;
}

/**
 * `t` was truncated after `offset` (its old first bytes `fp`, `fpLen`): its rotated copy, a
 * sibling starting with those bytes, is followed from `offset` to its end, and read before `t`.
 * One compressed already (gzip) or gone cannot be read: what it held after `offset` is counted
 * and logged. `oldSize`: the old content's size as last seen (unknown after a stop). Undefined
 * if no copy was found; else the key of the copy `t` waits for, if it has lines to read.
 */
export async function readCopy(host: CopyHost, t: { readonly key: string; readonly path: string }, offset: number, fp: string, fpLen: number, oldSize: number | undefined): Promise<{ waitsFor?: string } | undefined> {
  const same = (key: string, fpOf: FingerprintOf): boolean => key !== t.key && fpOf(fpLen) === fp;
  const copy = await findSibling(t.path, same, offset + 1, host.unreadable);
  if (copy) {
    // Matched by the paths too: followed already, from where its discovery found that file was.
    if (host.tracked.has(copy.key)) return { waitsFor: copy.key };
    host.telemetry.log.logger.info({ file: copy.path, offset }, 'Reading the rotated copy from where the truncated file was.');
    host.telemetry.rotated('copy');
    await host.follow(copy.key, copy.path, offset, copy.size, { fp, fpLen });
    return { waitsFor: copy.key };
  }
  // A copy with nothing unread in it: checkpointed as read, so that a start that finds the file
  // empty does not take it for one written while the relay was stopped (#readCopiesSince).
  const read = await findSibling(t.path, same, 0, host.unreadable);
  if (read) {
    if (!host.tracked.has(read.key)) host.saved().set(read.key, { key: read.key, path: read.path, offset: read.size, fpLen, fp, seenAt: Date.now() });
    return {};
  }
  const packed = await findSibling(t.path, same, 0, host.unreadable, true);
  if (packed) {
    if (packed.size > offset) {
      lost(host.telemetry, 'copy_compressed', t, offset, { copy: packed.path, bytes: packed.size - offset },
        `The rotated copy holding the file's unread lines is compressed already: the ${packed.size - offset} bytes after the last line read are not read (use delaycompress).`);
    }
    return {};
  }
  if (oldSize === undefined) {
    lost(host.telemetry, 'copy_missing', t, offset, {},
      'File truncated or replaced while the relay was stopped, and no rotated copy of its old content is beside it: what was written to it after its checkpoint, if anything, is not read.');
  } else if (oldSize > offset) {
    lost(host.telemetry, 'copy_missing', t, offset, { bytes: oldSize - offset },
      `File truncated with unread lines, and no rotated copy of its old content is beside it: at least ${oldSize - offset} bytes after the last line read are not read.`);
  }
  return undefined;
}

/**
 * `t` was empty when the relay stopped (at `since`): its checkpoint has no first bytes to find a
 * copytruncate copy by. Rotated files beside it (app.log.1, app.log-20261123) last written since
 * then, that the input's paths do not match, and whose identity and first bytes no checkpoint
 * knows, hold what was appended to it while the relay was stopped before a copytruncate emptied
 * it again: the plain ones are followed from their start, oldest first, each after the one
 * before, and `t` after them; a compressed one cannot be read, and is counted (copy_compressed).
 * Undefined if there is none.
 */
export async function readCopiesSince(host: CopyHost, t: { readonly key: string; readonly path: string }, since: number): Promise<{ waitsFor?: string } | undefined> {
  const found = (await rotatedSince(t.path, since - MTIME_SLACK_MS, host.unreadable)).filter((s) => !host.matched().has(s.path) && !known(host, s.key, s.head));
  let before: string | undefined;
  for (const s of found) {
    if (s.format === 'gzip') {
      lost(host.telemetry, 'copy_compressed', t, 0, { copy: s.path, bytes: s.size },
        `File emptied while the relay was stopped, and a rotated copy of what was written to it meanwhile is compressed already: its ${s.size} bytes are not read (use delaycompress).`);
      continue;
    }
    if (s.format === 'other') {
      lost(host.telemetry, 'copy_compressed', t, 0, { copy: s.path },
        'File emptied while the relay was stopped, and a rotated copy written since then is compressed (not gzip): what it may hold of the lines written to the file meanwhile is not read (use delaycompress).');
      continue;
    }
    host.telemetry.rotated('copy');
    host.telemetry.log.logger.info({ file: s.path, offset: 0 }, 'Reading a rotated copy written while the relay was stopped (the file was empty when last seen).');
    const fpLen = Math.min(s.head.length, FINGERPRINT_BYTES);
    await host.follow(s.key, s.path, 0, s.size, { fpLen, fp: fingerprint(s.head.subarray(0, fpLen)), waitsFor: before });
    before = s.key;
  }
  return before === undefined ? undefined : { waitsFor: before };
}

/** A file followed or checkpointed already: by its key, or by first bytes a checkpoint has (the compressed copy of one). */
function known(host: CopyHost, key: string, head: Buffer): boolean {
  if (host.tracked.has(key) || host.saved().has(key)) return true;
  const fpLen = Math.min(head.length, FINGERPRINT_BYTES);
  const fp = fingerprint(head.subarray(0, fpLen));
  for (const e of [...host.tracked.values(), ...host.saved().values()]) {
    if (e.fpLen === fpLen && e.fp === fp) return true;
  }
  return false;
}

/** Counts and logs what could not be read of a file's old content. */
export function lost(telemetry: FileTelemetry, reason: CopyLost, t: { readonly path: string }, offset: number, fields: object, msg: string): void {
  telemetry.error(reason);
  const log = { file: t.path, offset, code: reason, ...fields };
  if (reason !== 'copy_compressed') telemetry.log.warn(`${reason}|${t.path}`, log, msg);
  else telemetry.log.error(`${reason}|${t.path}`, undefined, log, msg);
}
