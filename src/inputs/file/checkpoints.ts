// The file input's checkpoints: for each file, the offset up to which every line has been settled
// (delivered, or dropped and counted), and the file's identity (device + inode, and a fingerprint
// of its first bytes). Saved atomically: written to a temporary file, fsynced, renamed over the
// old one, and the directory fsynced, so a crash leaves either the old or the new checkpoints.

import { createHash } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';

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
      const now = Date.now();
      for (const f of data.files) {
        const cp = storedCheckpoint(f, now);
        if (cp) entries.set(cp.key, cp);
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
    await writeDurably(this.file, text);
    this.#last = text;
  }
}

/** A stored entry as a checkpoint (`seenAt` where it has none), or undefined when it is not one. */
function storedCheckpoint(f: Partial<Record<keyof Checkpoint, unknown>>, seenAt: number): Checkpoint | undefined {
  const { key, offset, fp, fpLen } = f;
  if (typeof key !== 'string' || !Number.isSafeInteger(offset) || (offset as number) < 0 || typeof fp !== 'string' || !Number.isSafeInteger(fpLen)) return undefined;
  return { key, path: String(f.path), offset: offset as number, fpLen: fpLen as number, fp, seenAt: Number(f.seenAt) || seenAt };
}

/** Writes `text` to `file` atomically (a temporary file renamed over it) and durably (file and directory fsynced). */
async function writeDurably(file: string, text: string): Promise<void> {
  const tmp = `${file}.tmp`;
  const fh = await open(tmp, 'w', 0o600);
  try {
    await fh.writeFile(text);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, file);
  const dir = await open(dirname(file), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

// ---- Hand-over between inputs ----
// A checkpoint file is named after its intake and its input: an input moved to another intake, or
// renamed (its default name is its first path), finds no checkpoint of its own. It takes over the
// checkpoint another input's file holds for the same file (device, inode and first bytes) when
// that input is gone: not one running in this process (its checkpoint file is live), and each
// entry once (it is marked adopted in the file it came from; its own input, if it comes back,
// still resumes from it).

/** Checkpoint files of the file inputs of this process, from creation until their last save. */
const live = new Set<string>();
/**
 * Checkpoint files of the file inputs of the configuration being started or reloaded (holdConfigured):
 * an input configured but not created yet (started after another, rebuilt by a reload) is no gone one.
 */
let configured = new Set<string>();

/** The checkpoint files of every file input the configuration in force (or being applied) names. */
export function holdConfigured(files: Iterable<string>): void {
  configured = new Set(files);
}

export function holdLive(file: string): void {
  live.add(file);
}

export function releaseLive(file: string): void {
  live.delete(file);
}

let handOver: Promise<unknown> = Promise.resolve();

/** Runs `work` after any other input's start (hand-overs are looked for and marked one at a time). */
export function oneAtATime<T>(work: () => Promise<T>): Promise<T> {
  const run = handOver.then(work, work);
  handOver = run.catch(() => {});
  return run;
}

/** A checkpoint another (gone) input's file holds. */
export interface Adoptable {
  readonly from: string;
  readonly cp: Checkpoint;
}

/**
 * The checkpoints that the other checkpoint files beside `own` hold, by file key, of inputs not
 * running (live) nor configured, and not adopted already; older than `maxAgeMs`, none. Unreadable files are skipped.
 */
export async function othersCheckpoints(own: string, maxAgeMs: number): Promise<Map<string, Adoptable[]>> {
  const found = new Map<string, Adoptable[]>();
  const dir = dirname(own);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return found;
  }
  const now = Date.now();
  for (const name of names.sort()) {
    const from = join(dir, name);
    if (!name.endsWith('.json') || from === own || live.has(from) || configured.has(from)) continue;
    let data: { version?: unknown; files?: unknown };
    try {
      data = JSON.parse(await readFile(from, 'utf8')) as typeof data;
    } catch {
      continue;
    }
    if (data.version !== 1 || !Array.isArray(data.files)) continue;
    for (const f of data.files as (Checkpoint & { adopted?: boolean })[]) {
      const cp = f.adopted === true ? undefined : storedCheckpoint(f, 0);
      if (!cp || now - cp.seenAt > maxAgeMs) continue;
      found.set(cp.key, [...(found.get(cp.key) ?? []), { from, cp }]);
    }
  }
  return found;
}

/** Marks the entries of `keys` in checkpoint file `file` adopted (atomically): no other input takes them over. */
export async function markAdopted(file: string, keys: ReadonlySet<string>): Promise<void> {
  const data = JSON.parse(await readFile(file, 'utf8')) as StoredFile;
  for (const f of data.files as (Checkpoint & { adopted?: boolean })[]) if (keys.has(f.key)) f.adopted = true;
  await writeDurably(file, JSON.stringify(data));
}
