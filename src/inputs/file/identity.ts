// What makes a file the same file for the file input: its device + inode AND a fingerprint of its
// first bytes (checkpoints.ts), so that a reused inode is a new file, and a copy of a file already
// read (same first bytes, another inode) is recognised. Also finds a file's rotated siblings
// (app.log.1, app.log-20261123) by those two.

import type { FileHandle } from 'node:fs/promises';
import { open, readdir, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
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
  readonly size: number;
}

/**
 * A file beside `path` whose name starts with its base name (app.log.1, app.log-20261123) and
 * that passes `test` (its key, and the fingerprints of its first bytes), of at least `minSize` bytes.
 */
export async function findSibling(path: string, test: (key: string, fp: FingerprintOf) => boolean, minSize: number, onError: OnFileError): Promise<Sibling | undefined> {
  const dir = dirname(path);
  const name = basename(path);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return undefined;
  }
  for (const n of names) {
    if (n === name || !n.startsWith(name)) continue;
    const p = join(dir, n);
    try {
      const st = await stat(p, { bigint: true });
      if (!st.isFile() || Number(st.size) < minSize) continue;
      const key = fileKey(st);
      const head = await readHead(p, onError);
      if (!head) continue;
      if (test(key, fingerprintOf(head))) return { key, path: p, size: Number(st.size) };
    } catch {
      continue;
    }
  }
  return undefined;
}
