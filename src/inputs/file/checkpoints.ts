// The file input's checkpoints: for each file, the offset up to which every line has been settled
// (delivered, or dropped and counted), and the file's identity (device + inode, and a fingerprint
// of its first bytes). Saved atomically: written to a temporary file, fsynced, renamed over the
// old one, and the directory fsynced, so a crash leaves either the old or the new checkpoints.

import { createHash } from 'node:crypto';
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';

/** Bytes at the start of a file that identify it along with its device and inode. */
export const FINGERPRINT_BYTES = 256;

export interface Checkpoint {
  /** "device:inode". */
  readonly key: string;
  readonly path: string;
  /** Every line before this byte offset is settled. */
  readonly offset: number;
  /** The fingerprint covers the file's first fpLen bytes (fewer than FINGERPRINT_BYTES while the file is shorter). */
  readonly fpLen: number;
  readonly fp: string;
  /** Last time the file was seen (ms since the epoch): checkpoints of files gone for long are forgotten. */
  readonly seenAt: number;
}

export function fingerprint(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 32);
}

interface StoredFile {
  version: 1;
  intake: string;
  input: string;
  files: Checkpoint[];
}

export interface Loaded {
  readonly entries: Map<string, Checkpoint>;
  /** A checkpoint file was there: this is not the input's very first start. */
  readonly existed: boolean;
  /** Why an existing file could not be used (it is set aside), if so. */
  readonly problem?: string;
}

export class CheckpointStore {
  readonly file: string;
  readonly #intake: string;
  readonly #input: string;
  #last = '';

  constructor(file: string, intake: string, input: string) {
    this.file = file;
    this.#intake = intake;
    this.#input = input;
  }

  /** Reads the checkpoints; a damaged file is renamed aside and reported, never fatal. */
  async load(): Promise<Loaded> {
    await mkdir(dirname(this.file), { recursive: true });
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { entries: new Map(), existed: false };
      throw err;
    }
    try {
      const data = JSON.parse(text) as StoredFile;
      if (data.version !== 1 || !Array.isArray(data.files)) throw new Error('unknown format');
      const entries = new Map<string, Checkpoint>();
      for (const f of data.files) {
        if (typeof f.key !== 'string' || !Number.isSafeInteger(f.offset) || f.offset < 0 || typeof f.fp !== 'string' || !Number.isSafeInteger(f.fpLen)) continue;
        entries.set(f.key, { key: f.key, path: String(f.path), offset: f.offset, fpLen: f.fpLen, fp: f.fp, seenAt: Number(f.seenAt) || Date.now() });
      }
      this.#last = text;
      return { entries, existed: true };
    } catch (err) {
      const aside = `${this.file}.damaged-${Date.now()}`;
      await rename(this.file, aside).catch(() => {});
      // Positions are lost: treat files as new (read from new_files_from), which duplicates rather than loses.
      return { entries: new Map(), existed: true, problem: `${(err as Error).message}; set aside as ${aside}` };
    }
  }

  /** Writes the checkpoints if they changed; atomic and durable. */
  async save(entries: Iterable<Checkpoint>): Promise<void> {
    const data: StoredFile = { version: 1, intake: this.#intake, input: this.#input, files: [...entries] };
    const text = JSON.stringify(data);
    if (text === this.#last) return;
    const tmp = `${this.file}.tmp`;
    const fh = await open(tmp, 'w', 0o600);
    try {
      await fh.writeFile(text);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, this.file);
    const dir = await open(dirname(this.file), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
    this.#last = text;
  }
}
