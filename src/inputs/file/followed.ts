// A file a file input follows, as discovery (discovery.ts) and the tail loop (tail.ts) share it:
// where it is, what is read of it and what is settled, when it last grew, and whether it waits for
// the rotated copy of its old content.

import type { FileHandle } from 'node:fs/promises';
import type { LineSplitter } from './lines.ts';

export interface Mark {
  /** The queue's next sequence number after an offer: everything before it came from lines before `offset`. */
  readonly seq: number;
  readonly offset: number;
}

/** A followed file as discovery knows it; the reader's own parts (`R`) are made by the input. */
export interface FileState {
  /** "device:inode". */
  readonly key: string;
  path: string;
  fh: FileHandle | undefined;
  /** Next byte to read. */
  offset: number;
  /** Size at the last stat. */
  size: number;
  fp: string;
  fpLen: number;
  marks: Mark[];
  /** Every line before this offset is settled. */
  committed: number;
  /** Not matched by the globs any more (renamed away, deleted): read to the end, then closed. */
  goneAt: number;
  deleted: boolean;
  lastGrowAt: number;
  lastActiveAt: number;
  /** Key of the rotated copy of its old content (copytruncate): this file is read once that one is read to its end. */
  waitsFor: string | undefined;
  /** The file's lines; what they hold back keeps the checkpoint before them. */
  readonly lines: LineSplitter;
}

export type Tracked<R> = FileState & R;
