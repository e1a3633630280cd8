// The files a file input follows: the files its globs match (glob.ts), each known by its identity
// (identity.ts), where reading starts in a new one, and rotation:
// - by rename: a file no longer matched stays followed and is read to its end (the tail loop
//   closes it once it has not grown for rotate_wait_ms); renamed while the relay was stopped, to
//   whatever name (one the globs do not match too), it is found by its identity among the files of
//   its directory, and its unread end read from the checkpoint, then it is let go the same way;
// - copytruncate (copies.ts): a file that shrinks (or whose first bytes changed) is read again from the start,
//   and the lines written to the old content after the last read are taken from the rotated copy (a
//   sibling that starts with the same bytes: app.log.1, app.log-20261123), read to its end first;
//   truncated while the relay was stopped (its inode's first bytes are not the checkpoint's), the
//   copy is read from the checkpoint; empty when last seen (no first bytes to match), the rotated
//   copies written since then that no checkpoint knows are read from their start. A copy already
//   compressed (app.log.1.gz) or gone cannot be read: what it held unread is counted
//   (file_errors_total, copy_compressed / copy_missing) and logged;
// - delete: read to its end, then let go;
// - copy: a file that starts with the same bytes as one already read starts where that one was.
// At most max_open_files are held open: for one with unread bytes, the least recently active with
// nothing unread is closed, or, only when every open file has unread bytes, the least recently
// active of them. A file closed with unread bytes and deleted (or replaced) before it is reopened
// cannot be read: its unread bytes are counted (file_errors_total, deleted_unread) and logged.

import { open, stat } from 'node:fs/promises';
import type { ResolvedFileInput } from './config.ts';
import { FINGERPRINT_BYTES, fingerprint, type Adoptable, type Checkpoint } from './checkpoints.ts';
import { expandGlobs } from './glob.ts';
import { FilesByIdentity, fileKey, fingerprintOf, readHead, type FingerprintOf, type OnFileError, type Sibling } from './identity.ts';
import type { LineSplitter } from './lines.ts';
import type { FileTelemetry } from '../../core/telemetry.ts';
import { reportError } from './telemetry.ts';
import type { FileState, Tracked } from './followed.ts';
import { lost, readCopiesSince, readCopy, type CopyHost } from './copies.ts';

/** Checkpoints are saved every second: one seen this close to the last save was followed at the last stop. */
const SAVED_AT_STOP_MS = 2_500;

export class Discovery<R extends { readonly lines: LineSplitter }> {
  readonly #cfg: ResolvedFileInput;
  readonly #t: FileTelemetry;
  readonly #reader: (path: string) => R;
  readonly #unreadable: OnFileError;
  /** What the reading of rotated copies (copies.ts) uses of this. */
  readonly #copies: CopyHost;
  /** Followed files, by key. */
  readonly tracked = new Map<string, Tracked<R>>();
  /** Checkpoints of files not followed now (and, after a save, of those followed). */
  saved = new Map<string, Checkpoint>();
  /** When the checkpoints loaded at start were last saved (the latest seenAt among them). */
  #lastSavedAt = -Infinity;
  /** The paths the globs matched at the last scan. */
  #matched = new Set<string>();
  /** No checkpoint file existed: files there at start are read from read_from. */
  #firstStart = false;
  /** At start: checkpoints of gone inputs (other checkpoint files in data_dir), by file key, for files this input has none of its own. */
  #adoptable = new Map<string, Adoptable[]>();
  /** Checkpoint files whose entries (keys) this input took over: marked adopted there once this input's checkpoints are saved. */
  readonly adopted = new Map<string, Set<string>>();

  /** `reader`: the parts of a followed file that read it (its lines and events), made when it is first followed. */
  constructor(cfg: ResolvedFileInput, telemetry: FileTelemetry, reader: (path: string) => R) {
    this.#cfg = cfg;
    this.#t = telemetry;
    this.#reader = reader;
    this.#unreadable = (err, code, path) => this.#error(code, path, err, { file: path }, 'Cannot read a matched file: it is not followed until it can be read.');
    this.#copies = {
      tracked: this.tracked,
      saved: () => this.saved,
      matched: () => this.#matched,
      telemetry: telemetry,
      unreadable: this.#unreadable,
      follow: async (key, path, offset, size, fields) => {
        const c = Object.assign(this.#track(key, path, offset, size), fields, { goneAt: Date.now() });
        // Held open now: logrotate's compress deletes the plain copy once it is compressed.
        await this.open(c, false);
      },
    };
  }

  /** The checkpoints loaded at start; `firstStart`: there was no checkpoint file. */
  restore(saved: Map<string, Checkpoint>, firstStart: boolean, adoptable = new Map<string, Adoptable[]>()): void {
    this.saved = saved;
    this.#lastSavedAt = Math.max(-Infinity, ...[...saved.values()].map((c) => c.seenAt));
    this.#firstStart = firstStart;
    this.#adoptable = adoptable;
  }

  /** The start is over: checkpoints of gone inputs are taken over only while starting. */
  endAdoption(): void {
    this.#adoptable = new Map();
    this.adopted.clear();
  }

  /** The file offset before which every line has been forwarded (the rest waits in its line splitter). */
  consumed(t: FileState): number {
    return t.offset - t.lines.held;
  }

  /** Matches the globs again: new files are followed, files gone are noted as rotated or deleted. */
  async scan(initial: boolean): Promise<void> {
    const cfg = this.#cfg;
    const { files, problems } = await expandGlobs(cfg.paths, cfg.exclude);
    this.#matched = new Set(files);
    for (const p of problems) this.#error(p.code, p.path, undefined, { path: p.path }, `Cannot read ${p.path}: files under it are not followed (the other files are).`);
    const seen = new Set<string>();
    const now = Date.now();
    for (const path of files) {
      let st;
      try {
        st = await stat(path, { bigint: true });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
        if (code !== 'ENOENT') this.#error(code, path, err, { file: path }, 'Cannot stat a matched file.');
        continue;
      }
      if (!st.isFile()) continue;
      const key = fileKey(st);
      const size = Number(st.size);
      seen.add(key);
      const t = this.tracked.get(key);
      if (t) {
        if (t.path !== path) t.path = path; // renamed, still matched
        if (t.goneAt > 0 && !t.deleted) t.goneAt = 0;
        if (!t.fh) t.size = size;
        continue;
      }
      await this.#discover(key, path, size, initial);
    }
    let dirs: FilesByIdentity | undefined;
    for (const t of [...this.tracked.values()]) {
      if (seen.has(t.key) || t.goneAt > 0) continue;
      t.goneAt = now;
      if (!t.fh) {
        // Closed (max_open_files) when it was renamed: look for it in its directory.
        dirs ??= new FilesByIdentity();
        const found = await this.#renamed(dirs, t, 0);
        if (found) {
          t.path = found.path;
          t.size = found.size;
        }
      }
      if (t.fh && !t.deleted) t.deleted = (await t.fh.stat().catch(() => undefined))?.nlink === 0;
      if (t.deleted) this.#t.rotated('delete');
      else {
        this.#t.rotated('rename');
        this.#t.log.logger.info({ file: t.path }, 'File rotated or moved away: reading it to its end.');
      }
    }
    for (const [key, cp] of this.saved) {
      if (!this.tracked.has(key) && now - cp.seenAt > cfg.forget_after_ms) this.saved.delete(key);
    }
  }

  /**
   * Files rotated by rename while the relay was stopped, to a name the globs do not match (the scan
   * followed those they match, from their checkpoint): read their unread end from the checkpoint.
   * Only the file a checkpoint names by identity is read; no other file of its directory.
   */
  async recoverRotatedWhileStopped(): Promise<void> {
    const dirs = new FilesByIdentity();
    for (const cp of [...this.saved.values()]) {
      if (this.tracked.has(cp.key)) continue;
      const found = await this.#renamed(dirs, cp, cp.offset + 1);
      if (!found) continue;
      this.#t.rotated('rename');
      this.#t.log.logger.info({ file: found.path, offset: cp.offset }, 'File rotated while stopped: reading its end.');
      const t = this.#track(cp.key, found.path, cp.offset, found.size);
      t.fp = cp.fp;
      t.fpLen = cp.fpLen;
      t.goneAt = Date.now();
    }
  }

  /**
   * copytruncate (or a writer that truncated): read again from the start, after the rotated copy's
   * unread part. `oldSize`: the size last seen before the truncation.
   */
  async truncated(t: Tracked<R>, oldSize: number): Promise<void> {
    this.#t.rotated('truncate');
    const consumed = this.consumed(t);
    this.#t.log.logger.info({ file: t.path, offset: consumed }, 'File truncated (copytruncate rotation?): reading it again from the start.');
    if (t.fpLen > 0) t.waitsFor = (await readCopy(this.#copies, t, consumed, t.fp, t.fpLen, oldSize))?.waitsFor ?? t.waitsFor;
    t.offset = 0;
    t.lines.reset();
    t.fp = '';
    t.fpLen = 0;
    // Lines of the old content still in flight settle without moving this file's checkpoint.
    t.marks = [];
    t.committed = 0;
  }

  /** `t` waits for the rotated copy of its old content to be read to its end (then no more). */
  waiting(t: FileState): boolean {
    if (t.waitsFor === undefined) return false;
    const copy = this.tracked.get(t.waitsFor);
    if (copy && copy.offset < copy.size) return true;
    t.waitsFor = undefined;
    return false;
  }

  /**
   * Opens a followed file; at max_open_files, only when it has unread bytes (`evict`), by closing
   * the least recently active one with nothing unread, or, if every open file has unread bytes,
   * the least recently active. A file closed with unread bytes that is gone for good (the scan did
   * not find it, and its path is gone or holds another file) cannot be read: counted once, logged.
   */
  async open(t: FileState, evict: boolean): Promise<boolean> {
    const max = this.#cfg.max_open_files;
    const open_ = [...this.tracked.values()].filter((x) => x.fh);
    if (open_.length >= max) {
      if (!evict) return false;
      // Files still at their path (reopened when they grow), least recently active first.
      const candidates = open_.filter((x) => x.goneAt === 0).sort((a, b) => a.lastActiveAt - b.lastActiveAt);
      if (candidates.length === 0) return false;
      let victim: FileState | undefined;
      for (const x of candidates) {
        // Its size now: one that grew since it was last read has unread bytes too.
        const st = await x.fh?.stat().catch(() => undefined);
        if (st && st.size === x.offset) {
          victim = x;
          break;
        }
      }
      await this.close(victim ?? (candidates[0] as FileState));
    }
    try {
      const fh = await open(t.path, 'r');
      const st = await fh.stat({ bigint: true });
      if (fileKey(st) !== t.key) {
        // The path now holds another file; the next scan sorts it out.
        await fh.close();
        this.#goneUnread(t);
        return false;
      }
      t.fh = fh;
      t.lastActiveAt = Date.now();
      return true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
      if (code !== 'ENOENT') this.#error(code, t.path, err, { file: t.path }, 'Cannot open a matched file.');
      else this.#goneUnread(t);
      return false;
    }
  }

  /**
   * `t`, closed with unread bytes, cannot be reopened: if the scan found it gone too (not at any
   * matched path, nor beside its old one), those bytes are lost: counted once (deleted_unread) and
   * logged; nothing is left to read in it, and it is let go once its lines read are settled.
   */
  #goneUnread(t: FileState): void {
    if (t.goneAt === 0 || t.size <= t.offset) return;
    const bytes = t.size - t.offset;
    lost(this.#t, 'deleted_unread', t, t.offset, { bytes },
      `File deleted (or replaced) while closed at max_open_files with unread lines: the ${bytes} bytes after the last line read are not read (raise max_open_files, or keep files until they are read).`);
    t.offset = t.size;
  }

  async close(t: FileState): Promise<void> {
    const fh = t.fh;
    t.fh = undefined;
    await fh?.close().catch(() => {});
  }

  /** A file not followed yet: where to start in it. */
  async #discover(key: string, path: string, size: number, initial: boolean): Promise<void> {
    const cfg = this.#cfg;
    const head = await readHead(path, this.#unreadable);
    if (head === undefined) return;
    const fpOf = fingerprintOf(head);
    let start: number;
    const cp = this.saved.get(key);
    const sameStart = cp !== undefined && (cp.fpLen === 0 || fpOf(cp.fpLen) === cp.fp);
    // Its inode, with other first bytes or shorter than the checkpoint: truncated while the relay
    // was stopped (copytruncate), or deleted and its inode reused.
    const replaced = cp !== undefined && cp.fpLen > 0 && (!sameStart || cp.offset > size);
    // Empty when the relay last stopped (followed then, at this path): no first bytes to find a copy by.
    const emptyAtStop = initial && cp?.fpLen === 0 && cp.path === path && cp.seenAt >= this.#lastSavedAt - SAVED_AT_STOP_MS;
    const copy = replaced
      ? await readCopy(this.#copies, { key, path }, cp.offset, cp.fp, cp.fpLen, undefined)
      : emptyAtStop ? await readCopiesSince(this.#copies, { key, path }, cp.seenAt) : undefined;
    const taken = cp === undefined ? this.#adopt(key, path, size, fpOf) : undefined;
    if (cp && (copy || (sameStart && cp.offset > size))) {
      // Truncated while stopped (its old content's copy is beside it, or it is shorter): read again from the start.
      this.#t.rotated('truncate');
      this.#t.log.logger.info({ file: path, offset: cp.offset }, 'File truncated while the relay was stopped (copytruncate rotation?): reading it again from the start.');
      start = 0;
    } else if (cp && sameStart) {
      start = cp.offset; // known: resume
    } else if (taken !== undefined) {
      start = taken; // another input's checkpoint (that input is gone): resume from it
    } else {
      const original = head.length >= FINGERPRINT_BYTES ? this.#copyOf(key, fpOf(FINGERPRINT_BYTES) as string) : undefined;
      if (original !== undefined && original <= size) {
        this.#t.rotated('copy');
        this.#t.log.logger.info({ file: path, offset: original }, 'File is a copy of one already read: starting where that one was.');
        start = original;
      } else {
        const from = initial && this.#firstStart ? cfg.read_from : cfg.new_files_from;
        start = from === 'end' ? size : 0;
      }
    }
    const t = this.#track(key, path, start, size);
    const fpLen = Math.min(head.length, FINGERPRINT_BYTES);
    t.fpLen = fpLen;
    t.fp = fingerprint(head.subarray(0, fpLen));
    t.waitsFor = copy?.waitsFor;
    // Held open from now on (within max_open_files): a rename before the first read cannot hide it.
    await this.open(t, false);
    this.#t.log.logger.debug({ file: path, offset: start }, 'Following a file.');
  }

  /**
   * The checkpoint that a gone input (moved to another intake, renamed) left for this file (same
   * key and first bytes, not past its end), the most recently seen if several: its offset; the
   * entries for this key are marked adopted in their files once this input has saved its own.
   */
  #adopt(key: string, path: string, size: number, fpOf: FingerprintOf): number | undefined {
    const all = this.#adoptable.get(key);
    if (!all) return undefined;
    const same = all.filter((a) => (a.cp.fpLen === 0 || fpOf(a.cp.fpLen) === a.cp.fp) && a.cp.offset <= size).sort((a, b) => b.cp.seenAt - a.cp.seenAt);
    const best = same[0];
    if (!best) return undefined;
    this.#adoptable.delete(key);
    for (const a of all) {
      const keys = this.adopted.get(a.from) ?? new Set<string>();
      keys.add(key);
      this.adopted.set(a.from, keys);
    }
    this.#t.log.logger.info({ file: path, offset: best.cp.offset, from: best.from },
      'No checkpoint of this input for the file: taking over the one of an input gone (moved to another intake or renamed).');
    return best.cp.offset;
  }

  /** The offset reached in a followed or checkpointed file whose first bytes are `fp`, if any. */
  #copyOf(key: string, fp: string): number | undefined {
    for (const t of this.tracked.values()) {
      if (t.key !== key && t.fpLen === FINGERPRINT_BYTES && t.fp === fp) return this.consumed(t);
    }
    for (const cp of this.saved.values()) {
      if (cp.key !== key && cp.fpLen === FINGERPRINT_BYTES && cp.fp === fp) return cp.offset;
    }
    return undefined;
  }

  #track(key: string, path: string, offset: number, size: number): Tracked<R> {
    const now = Date.now();
    const t: Tracked<R> = {
      ...this.#reader(path),
      key, path, fh: undefined, offset, size, fp: '', fpLen: 0, marks: [], committed: offset,
      goneAt: 0, deleted: false, lastGrowAt: now, lastActiveAt: now, waitsFor: undefined,
    };
    this.tracked.set(key, t);
    return t;
  }

  /**
   * Where a followed or checkpointed file is now: the file of its directory with its device and
   * inode, whatever its name (a rename may give it any), if it still starts with its first bytes
   * (an inode reused by another file does not) and has at least `minSize` bytes.
   */
  async #renamed(dirs: FilesByIdentity, f: { readonly key: string; readonly path: string; readonly fp: string; readonly fpLen: number }, minSize: number): Promise<Sibling | undefined> {
    const found = await dirs.find(f.path, f.key);
    if (!found || found.size < minSize) return undefined;
    if (f.fpLen === 0) return found;
    const head = await readHead(found.path, this.#unreadable);
    return head && fingerprintOf(head)(f.fpLen) === f.fp ? found : undefined;
  }

  #error(code: string, what: string, err: unknown, fields: object, msg: string): void {
    reportError(this.#t, code, what, err, fields, msg);
  }
}
