// What makes a file the same file for the file input: its device + inode AND a fingerprint of its
// first bytes (checkpoints.ts), so that a reused inode is a new file, and a copy of a file already
// read (same first bytes, another inode) is recognised. Also finds a file's rotated siblings
// (app.log.1, app.log-20261123) by those two, and its gzip-compressed ones (app.log.1.gz) by the
// first bytes of their uncompressed content; and a file renamed to any name in its directory by
// its device and inode, which a rename keeps.

import type { FileHandle } from 'node:fs/promises';
import { open, readdir, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { constants, createGunzip } from 'node:zlib';
import { FINGERPRINT_BYTES, fingerprint } from './checkpoints.ts';

/** Reports a file that could not be read (never ENOENT: a file that went away is not a problem). */
export type OnFileError = (err: unknown, code: string, path: string) => void;

/** The fingerprint of the first `len` bytes of a file, if it has that many. */
export type FingerprintOf = (len: number) => string | undefined;

/** "device:inode". */
export function fileKey(st: { readonly dev: bigint; readonly ino: bigint }): string {
  return `${st.dev}:${st.ino}`;
}

export function fingerprintOf(head: Buffer): FingerprintOf {
  return (len) => (head.length >= len ? fingerprint(head.subarray(0, len)) : undefined);
}

/** The first FINGERPRINT_BYTES bytes of a file (fewer if it is shorter); undefined if unreadable (reported). */
export async function readHead(path: string, onError: OnFileError): Promise<Buffer | undefined> {
  let fh: FileHandle | undefined;
  try {
    fh = await open(path, 'r');
    const buf = Buffer.alloc(FINGERPRINT_BYTES);
    const { bytesRead } = await fh.read(buf, 0, FINGERPRINT_BYTES, 0);
    return buf.subarray(0, bytesRead);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
    if (code !== 'ENOENT') onError(err, code, path);
    return undefined;
  } finally {
    await fh?.close().catch(() => {});
  }
}

/** The open file no longer starts with the `fpLen` bytes whose fingerprint is `fp`. */
export async function replaced(fh: FileHandle, fp: string, fpLen: number): Promise<boolean> {
  const buf = Buffer.allocUnsafe(fpLen);
  const { bytesRead } = await fh.read(buf, 0, fpLen, 0);
  return bytesRead < fpLen || fingerprint(buf) !== fp;
}

/** The fingerprint of an open file's first bytes, if it now has more than `fpLen` of them (it grew). */
export async function longerFingerprint(fh: FileHandle, fpLen: number): Promise<{ fp: string; fpLen: number } | undefined> {
  const buf = Buffer.alloc(FINGERPRINT_BYTES);
  const { bytesRead } = await fh.read(buf, 0, FINGERPRINT_BYTES, 0);
  return bytesRead > fpLen ? { fp: fingerprint(buf.subarray(0, bytesRead)), fpLen: bytesRead } : undefined;
}

export interface Sibling {
  readonly key: string;
  readonly path: string;
  /** Its size; for a gzip file, the size of its content (ISIZE: modulo 4 GiB). */
  readonly size: number;
}

/** Compressed bytes read to get the first FINGERPRINT_BYTES of a gzip file's content (header and Huffman tables included). */
const GZIP_HEAD_BYTES = 16 * 1024;

/**
 * A file beside `path` (or at `path` itself) whose name starts with its base name (app.log.1,
 * app.log-20261123) and that passes `test` (its key, and the fingerprints of its first bytes), of
 * at least `minSize` bytes. `gzip`: only gzip files, by the first bytes and size of their content.
 */
export async function findSibling(path: string, test: (key: string, fp: FingerprintOf) => boolean, minSize: number, onError: OnFileError, gzip = false): Promise<Sibling | undefined> {
  for (const { path: p } of await besideWithName(path)) {
    try {
      const st = await stat(p, { bigint: true });
      if (!st.isFile()) continue;
      const key = fileKey(st);
      const found = gzip ? await gzipHead(p, Number(st.size)) : { head: await readHead(p, onError), size: Number(st.size) };
      if (!found?.head || found.size < minSize) continue;
      if (test(key, fingerprintOf(found.head))) return { key, path: p, size: found.size };
    } catch {
      continue;
    }
  }
  return undefined;
}

/**
 * The files of directories by identity, each directory listed (and its entries stat'ed) once: a
 * renamed file is found by its device and inode whatever its name now, without reading any file.
 */
export class FilesByIdentity {
  readonly #dirs = new Map<string, Promise<Map<string, Sibling>>>();

  /** The file whose key is `key` in `path`'s directory, if it is there (under any name). */
  async find(path: string, key: string): Promise<Sibling | undefined> {
    const dir = dirname(path);
    let files = this.#dirs.get(dir);
    if (!files) {
      files = filesOf(dir);
      this.#dirs.set(dir, files);
    }
    return (await files).get(key);
  }
}

/** The regular files of `dir` by key (of hard links, the first name listed). */
async function filesOf(dir: string): Promise<Map<string, Sibling>> {
  const files = new Map<string, Sibling>();
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return files;
  }
  for (const name of names) {
    const path = join(dir, name);
    const st = await stat(path, { bigint: true }).catch(() => undefined);
    if (!st?.isFile()) continue;
    const key = fileKey(st);
    if (!files.has(key)) files.set(key, { key, path, size: Number(st.size) });
  }
  return files;
}

/** The entries of `path`'s directory whose name starts with its base name (itself included); `suffix`: what follows it. */
async function besideWithName(path: string): Promise<{ readonly path: string; readonly suffix: string }[]> {
  const dir = dirname(path);
  const name = basename(path);
  try {
    return (await readdir(dir)).filter((n) => n.startsWith(name)).map((n) => ({ path: join(dir, n), suffix: n.slice(name.length) }));
  } catch {
    return [];
  }
}

/** The first FINGERPRINT_BYTES of a gzip file's content and its size (ISIZE), if it is one (a damaged one is not). */
async function gzipHead(path: string, fileSize: number): Promise<{ head: Buffer; size: number } | undefined> {
  if (fileSize < 18) return undefined;
  const fh = await open(path, 'r');
  let packed: Buffer;
  let size: number;
  try {
    packed = Buffer.alloc(Math.min(fileSize, GZIP_HEAD_BYTES));
    await fh.read(packed, 0, packed.length, 0);
    if (packed[0] !== 0x1f || packed[1] !== 0x8b) return undefined;
    const trailer = Buffer.alloc(4);
    await fh.read(trailer, 0, 4, fileSize - 4);
    size = trailer.readUInt32LE(0);
  } finally {
    await fh.close().catch(() => {});
  }
  // What the first compressed bytes give (Z_SYNC_FLUSH: no error for the missing rest).
  const gunzip = createGunzip({ finishFlush: constants.Z_SYNC_FLUSH });
  gunzip.end(packed);
  const chunks: Buffer[] = [];
  let length = 0;
  try {
    for await (const chunk of gunzip) {
      chunks.push(chunk as Buffer);
      length += (chunk as Buffer).length;
      if (length >= FINGERPRINT_BYTES) break;
    }
  } catch {
    return undefined;
  } finally {
    gunzip.destroy();
  }
  return { head: Buffer.concat(chunks).subarray(0, FINGERPRINT_BYTES), size };
}

/**
 * What a rotation adds to a file's name: .1 (up to 3 digits: a longer number is more likely a
 * process id), -20261123 (maybe with hours, or -%s after it), .2026-11-23, each maybe compressed.
 */
const ROTATED_SUFFIX = /^(\.\d{1,3}|[-._]\d{8}(\d{2}){0,3}(-\d{1,10})?|[-._]\d{4}-\d{2}-\d{2}([-_T]\d{2}(-?\d{2}){0,2})?)(\.(gz|bz2|xz|zst|lz4))?$/;

/** A rotated file beside another, as rotatedSince() finds it. */
export interface RotatedSibling extends Sibling {
  /** Its first FINGERPRINT_BYTES bytes: of its content for a plain or gzip file, as stored for another compression. */
  readonly head: Buffer;
  readonly format: 'plain' | 'gzip' | 'other';
}

/**
 * The rotated files beside `path` (its name and what logrotate adds: .1, -20261123, maybe .gz)
 * last modified after `sinceMs`, not empty, oldest first; a gzip file by its content (its size is
 * the content's), one compressed otherwise (bzip2, xz, zstd, lz4) as stored.
 */
export async function rotatedSince(path: string, sinceMs: number, onError: OnFileError): Promise<RotatedSibling[]> {
  const found: (RotatedSibling & { mtimeMs: number })[] = [];
  for (const { path: p, suffix } of await besideWithName(path)) {
    if (!ROTATED_SUFFIX.test(suffix)) continue;
    try {
      const st = await stat(p, { bigint: true });
      const mtimeMs = Number(st.mtimeMs);
      if (!st.isFile() || st.size === 0n || mtimeMs <= sinceMs) continue;
      const format = suffix.endsWith('.gz') ? 'gzip' : /\.(bz2|xz|zst|lz4)$/.test(suffix) ? 'other' : 'plain';
      const content = format === 'gzip' ? await gzipHead(p, Number(st.size)) : { head: await readHead(p, onError), size: Number(st.size) };
      if (!content?.head || content.head.length === 0) continue;
      found.push({ key: fileKey(st), path: p, size: content.size, head: content.head, format, mtimeMs });
    } catch {
      continue;
    }
  }
  return found.sort((a, b) => a.mtimeMs - b.mtimeMs).map(({ mtimeMs: _, ...s }) => s);
}
