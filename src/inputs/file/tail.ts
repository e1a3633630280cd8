// The file input: follows the files its globs match and forwards each appended line as an event.
//
// - Identity: a file is its device + inode AND a fingerprint of its first bytes, so a reused inode
//   is a new file, and a copy of a file already read (same first bytes, another inode) starts where
//   that file was.
// - Rotation by rename: the old file stays open and is read to its end, then closed once it has not
//   grown for rotate_wait_ms. copytruncate: a file that shrinks is read again from the start, and
//   the lines written to the old content after the last read are taken from the rotated copy (a
//   sibling that starts with the same bytes), where it can still be read. Deleted files are read to
//   their end and closed.
// - Checkpoints only move past lines that are settled: after each offer the reader notes the
//   queue's next sequence number with the file offset reached; once the queue's settled watermark
//   passes that number, the offset is committed and saved (atomically, every second and at stop).
//   After a crash every line is read again from the last checkpoint: at least once, duplicates
//   bounded by what was in flight.
// - Backpressure: the reader waits while the intake's queue is full; nothing is skipped.

import { watch, type FSWatcher } from 'node:fs';
import { open, readdir, stat, type FileHandle } from 'node:fs/promises';
import { isAscii } from 'node:buffer';
import { basename, dirname, join } from 'node:path';
import type { Logger } from 'pino';
import type { ResolvedFileInput } from './definition.ts';
import { RateLimiter } from '../../core/rate-limiter.ts';
import { CheckpointStore, FINGERPRINT_BYTES, fingerprint, type Checkpoint } from './checkpoints.ts';
import { EventBuilder, inputCounters, utf8Boundary, type InputContext, type InputCounters } from '../event-builder.ts';
import { expandGlobs, globBase } from './glob.ts';
import { SingleFlight } from '../../core/single-flight.ts';

/** Bytes read at once. Events keep referring to the read's buffer (no copy). */
const READ_BYTES = 512 * 1024;
/** Reads from one file before the others get their turn. */
const READS_PER_TURN = 8;
const CHECKPOINT_EVERY_MS = 1_000;
const MAX_WATCHED_DIRS = 1_024;
const LF = 0x0a;
const CR = 0x0d;

interface Mark {
  /** The queue's next sequence number after an offer: everything before it came from lines before `offset`. */
  readonly seq: number;
  readonly offset: number;
}

interface Group {
  /** Lines of a multiline event so far (views of read buffers). */
  readonly lines: Buffer[];
  bytes: number;
  /** File offset of the group's first line. */
  readonly startOffset: number;
  lastAt: number;
}

interface Tracked {
  readonly key: string;
  path: string;
  fh: FileHandle | undefined;
  /** Next byte to read. */
  offset: number;
  /** Size at the last stat. */
  size: number;
  /** The start of a line whose newline has not come yet (its bytes end at `offset`). */
  tail: Buffer | undefined;
  tailAt: number;
  group: Group | undefined;
  /** Dropping the rest of an oversized line (oversize: drop) up to its newline. */
  discarding: boolean;
  /** The line being read was already split (and counted) before its newline came. */
  splitting: boolean;
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
  /** The file's events: one builder per file, for its own APP-NAME. */
  readonly builder: EventBuilder;
}

export class FileInput {
  readonly label: string;
  readonly #cfg: ResolvedFileInput;
  readonly #ctx: InputContext;
  readonly #c: InputCounters;
  readonly #log: Logger;
  readonly #store: CheckpointStore;
  readonly #hostname: string;
  readonly #intake: string;
  readonly #tracked = new Map<string, Tracked>();
  #saved = new Map<string, Checkpoint>();
  #firstStart = false;
  #stopping = false;
  #onStop: () => void = () => {};
  /** Resolves when stop() is called: a reader waiting for room in the queue gives up. */
  readonly #stopped = new Promise<void>((resolve) => (this.#onStop = resolve));
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #scanDue = false;
  #nextScan = 0;
  #checkpointTimer: NodeJS.Timeout | undefined;
  readonly #saving = new SingleFlight();
  readonly #watchers = new Map<string, FSWatcher>();
  readonly #limiter = new RateLimiter(60_000);
  readonly #multiline: RegExp | undefined;
  readonly #m;

  constructor(cfg: ResolvedFileInput, ctx: InputContext, stateFile: string, hostname: string, log: Logger) {
    this.label = cfg.label;
    this.#cfg = cfg;
    this.#ctx = ctx;
    this.#c = inputCounters(ctx);
    this.#log = log;
    this.#hostname = cfg.hostname ?? hostname;
    this.#intake = ctx.targets[0]?.intake ?? '';
    this.#store = new CheckpointStore(stateFile, this.#intake, cfg.label);
    this.#multiline = cfg.multiline ? new RegExp(cfg.multiline.start_pattern) : undefined;
    const m = ctx.metrics;
    const labels = { intake: this.#intake, input: cfg.label };
    this.#m = {
      split: m.eventsModified.labels({ ...labels, reason: 'split' }),
      rotations: (kind: 'rename' | 'truncate' | 'delete' | 'copy') => m.fileRotations.inc({ ...labels, kind }),
      errors: (reason: string) => m.fileErrors.inc({ ...labels, reason }),
    };
    const gauges = { tracked: m.filesTracked.labels(labels), open: m.filesOpen.labels(labels), unread: m.fileUnreadBytes.labels(labels) };
    this.dispose = m.addProbe(() => {
      let open = 0;
      let unread = 0;
      for (const t of this.#tracked.values()) {
        if (t.fh) open++;
        if (t.size > t.offset) unread += t.size - t.offset;
      }
      gauges.tracked.set(this.#tracked.size);
      gauges.open.set(open);
      gauges.unread.set(unread);
    });
  }

  /** Stops reporting its gauges (the input is gone). */
  readonly dispose: () => void;

  /** Files followed now, by path (for tests and /status). */
  get files(): string[] {
    return [...this.#tracked.values()].map((t) => t.path);
  }

  async start(): Promise<void> {
    let loaded;
    try {
      loaded = await this.#store.load();
    } catch (err) {
      throw new Error(`File input "${this.label}" of intake "${this.#intake}": cannot use the checkpoint file ${this.#store.file}: ${(err as Error).message}. Check data_dir.`);
    }
    if (loaded.problem) this.#log.error({ intake: this.#intake, input: this.label, file: this.#store.file, problem: loaded.problem }, 'Checkpoint file damaged: files are read as new ones (duplicates possible, nothing skipped).');
    this.#saved = loaded.entries;
    this.#firstStart = !loaded.existed;
    await this.#scan(true);
    this.#nextScan = Date.now() + this.#cfg.glob_interval_ms;
    await this.#recoverRotatedWhileStopped();
    // Saved at once, so that a crash from here on is not taken for a first start.
    await this.#save();
    this.#checkpointTimer = setInterval(() => void this.#save(), CHECKPOINT_EVERY_MS);
    this.#checkpointTimer.unref();
    this.#loop = this.#run();
  }

  /** Stops reading. Checkpoints are written by finish(), once the queue has drained. */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#onStop();
    this.#wake?.();
    await this.#loop;
    for (const w of this.#watchers.values()) w.close();
    this.#watchers.clear();
  }

  /** After the outputs have drained: commits what was delivered, saves, closes the files. */
  async finish(): Promise<void> {
    if (this.#checkpointTimer) clearInterval(this.#checkpointTimer);
    await this.#save(true);
    for (const t of this.#tracked.values()) await this.#close(t);
  }

  // ---- The read loop ----

  async #run(): Promise<void> {
    const cfg = this.#cfg;
    while (!this.#stopping) {
      try {
        const now = Date.now();
        if (this.#scanDue || now >= this.#nextScan) {
          this.#scanDue = false;
          this.#nextScan = now + cfg.glob_interval_ms;
          await this.#scan(false);
        }
        let read = 0;
        for (const t of [...this.#tracked.values()]) {
          if (this.#stopping) break;
          read += await this.#visit(t);
        }
        if (read === 0 && !this.#stopping) await this.#sleep(Math.min(cfg.poll_interval_ms, Math.max(1, this.#nextScan - Date.now())));
      } catch (err) {
        this.#error('EIO', `File input error: ${(err as Error).message}`, {});
        await this.#sleep(cfg.poll_interval_ms);
      }
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = () => {
        this.#wake = undefined;
        done();
      };
    });
  }

  /** Reads what a file has new; handles the end of file (partial lines, truncation, closing). Returns bytes read. */
  async #visit(t: Tracked): Promise<number> {
    if (!t.fh) {
      const unread = t.size > t.offset;
      if (t.goneAt > 0 && !unread) return this.#maybeForget(t);
      if (!(await this.#open(t, unread))) return t.goneAt > 0 ? this.#maybeForget(t, true) : 0;
    }
    const fh = t.fh as FileHandle;
    // A file truncated and written again past our offset before we looked (copytruncate during a
    // burst) still shows by its first bytes.
    if (t.fpLen > 0 && (await this.#replaced(t, fh))) await this.#truncated(t);
    let read = 0;
    for (let i = 0; i < READS_PER_TURN && !this.#stopping; i++) {
      let st;
      try {
        st = await fh.stat();
      } catch (err) {
        this.#error((err as NodeJS.ErrnoException).code ?? 'EIO', 'Cannot stat a followed file.', { file: t.path });
        await this.#close(t);
        return read;
      }
      t.size = st.size;
      if (st.nlink === 0 && !t.deleted) {
        t.deleted = true;
        t.goneAt ||= Date.now();
        this.#m.rotations('delete');
      }
      if (st.size < t.offset) {
        await this.#truncated(t);
        continue;
      }
      if (st.size === t.offset) break;
      const n = await this.#read(t, fh);
      if (n === 0) break;
      read += n;
    }
    if (read === 0) await this.#atEnd(t);
    return read;
  }

  async #read(t: Tracked, fh: FileHandle): Promise<number> {
    const tail = t.tail;
    const tailLen = tail?.length ?? 0;
    const buf = Buffer.allocUnsafeSlow(tailLen + READ_BYTES);
    if (tail) tail.copy(buf, 0);
    let bytesRead: number;
    try {
      ({ bytesRead } = await fh.read(buf, tailLen, READ_BYTES, t.offset));
    } catch (err) {
      this.#error((err as NodeJS.ErrnoException).code ?? 'EIO', 'Cannot read a followed file.', { file: t.path });
      return 0;
    }
    if (bytesRead === 0) return 0;
    const now = Date.now();
    if (t.fpLen < FINGERPRINT_BYTES && t.offset < FINGERPRINT_BYTES) await this.#fingerprint(t, fh);
    const base = t.offset - tailLen;
    t.offset += bytesRead;
    t.lastGrowAt = now;
    t.lastActiveAt = now;
    this.#lines(t, buf.subarray(0, tailLen + bytesRead), base, now);
    await this.#offer(t);
    return bytesRead;
  }

  /** Splits a read into lines; what follows the last newline waits for the next read. */
  #lines(t: Tracked, view: Buffer, base: number, now: number): void {
    const b = t.builder;
    b.begin(view, '');
    const max = this.#cfg.max_line_bytes;
    let s = 0;
    for (;;) {
      const nl = view.indexOf(LF, s);
      if (nl < 0) break;
      if (t.discarding) t.discarding = false;
      else this.#line(t, view, s, nl > s && view[nl - 1] === CR ? nl - 1 : nl, base + s, now);
      s = nl + 1;
    }
    const rest = view.length - s;
    t.tail = undefined;
    if (t.discarding || rest === 0) return;
    if (rest > max) {
      if (this.#cfg.oversize === 'drop') {
        this.#c.tooLarge.inc();
        this.#c.tooLargeReceived?.inc();
        t.discarding = true;
        return;
      }
      // Forward whole pieces now; the remainder (under the limit) waits for the newline. The line
      // is counted once, however many reads it spans.
      if (!t.splitting) this.#m.split.inc();
      t.splitting = true;
      while (view.length - s > max) {
        const e = cut(view, s, max);
        this.#emit(t, view, s, e);
        s = e;
      }
    }
    t.tail = view.subarray(s);
    t.tailAt = now;
  }

  /** One complete line buf[s, e) at file offset `at`: oversize handling, then multiline grouping. */
  #line(t: Tracked, buf: Buffer, s: number, e: number, at: number, now: number): void {
    const max = this.#cfg.max_line_bytes;
    const continued = t.splitting;
    t.splitting = false;
    if (e - s > max) {
      if (this.#cfg.oversize === 'drop') {
        this.#c.tooLarge.inc();
        this.#c.tooLargeReceived?.inc();
        return;
      }
      if (!continued) this.#m.split.inc();
      this.#flushGroup(t);
      while (e - s > max) {
        const c = cut(buf, s, max);
        this.#emit(t, buf, s, c);
        s = c;
      }
      this.#emit(t, buf, s, e);
      return;
    }
    const re = this.#multiline;
    if (!re) {
      if (e > s) this.#emit(t, buf, s, e);
      return;
    }
    const g = t.group;
    const starts = re.test(buf.toString('utf8', s, e));
    const ml = this.#cfg.multiline as NonNullable<ResolvedFileInput['multiline']>;
    if (g && !starts && g.lines.length < ml.max_lines && g.bytes + 1 + (e - s) <= max) {
      g.lines.push(buf.subarray(s, e));
      g.bytes += 1 + (e - s);
      g.lastAt = now;
      return;
    }
    this.#flushGroup(t);
    t.group = { lines: [buf.subarray(s, e)], bytes: e - s, startOffset: at, lastAt: now };
  }

  #flushGroup(t: Tracked): void {
    const g = t.group;
    if (!g) return;
    t.group = undefined;
    if (g.lines.length === 1) {
      const only = g.lines[0] as Buffer;
      if (only.length > 0) this.#emit(t, only, 0, only.length);
      return;
    }
    const joined = Buffer.allocUnsafe(g.bytes);
    let at = 0;
    g.lines.forEach((l, i) => {
      if (i > 0) joined[at++] = LF;
      at += l.copy(joined, at);
    });
    this.#emit(t, joined, 0, joined.length);
  }

  #emit(t: Tracked, buf: Buffer, s: number, e: number): void {
    if (this.#cfg.encoding === 'latin1' && !isAscii(buf.subarray(s, e))) {
      const utf8 = Buffer.from(buf.toString('latin1', s, e), 'utf8');
      t.builder.frame(utf8, 0, utf8.length, false);
      return;
    }
    t.builder.frame(buf, s, e, false);
  }

  /** Offers what the file's builder holds, notes the checkpoint mark, waits while the queue is full. */
  async #offer(t: Tracked): Promise<void> {
    const result = t.builder.flush();
    const consumed = t.group ? t.group.startOffset : t.offset - (t.tail?.length ?? 0);
    const last = t.marks[t.marks.length - 1];
    const queue = this.#ctx.targets[0]?.queue;
    if (queue && (!last || last.offset !== consumed)) t.marks.push({ seq: queue.nextSeq, offset: consumed });
    if (result === 'slow_down') await Promise.race([t.builder.writable(), this.#stopped]);
  }

  /** At the end of what a file holds: forwards a partial line or a multiline event that waited long enough; closes files gone for good. */
  async #atEnd(t: Tracked): Promise<void> {
    const now = Date.now();
    const cfg = this.#cfg;
    let emitted = false;
    if (t.tail && cfg.partial_line_timeout_ms > 0 && now - t.tailAt >= cfg.partial_line_timeout_ms) {
      this.#flushTail(t, t.tail, now);
      emitted = true;
    }
    if (t.group && now - t.group.lastAt >= (cfg.multiline?.timeout_ms ?? 0)) {
      const g = t.group;
      t.builder.begin(g.lines[0] as Buffer, '');
      this.#flushGroup(t);
      emitted = true;
    }
    if (emitted) await this.#offer(t);
    if (t.goneAt > 0 && now - Math.max(t.goneAt, t.lastGrowAt) >= cfg.rotate_wait_ms) {
      // Rotated away or deleted, read to its end, and quiet for rotate_wait_ms: let it go. What
      // still waits for a newline is forwarded first.
      if (t.tail) this.#flushTail(t, t.tail, now);
      if (t.group) this.#flushGroup(t);
      await this.#offer(t);
      await this.#close(t);
    }
  }

  /** Forwards a line that never got its newline as it is (without a CR that waited for its LF). */
  #flushTail(t: Tracked, tail: Buffer, now: number): void {
    t.tail = undefined;
    t.builder.begin(tail, '');
    const end = tail.length > 0 && tail[tail.length - 1] === CR ? tail.length - 1 : tail.length;
    this.#line(t, tail, 0, end, t.offset - tail.length, now);
  }

  /**
   * A file that was let go (or, `unreadable`, cannot be opened any more) is forgotten once its
   * last lines are settled; its checkpoint stays (until forget_after_ms) unless it was deleted.
   */
  #maybeForget(t: Tracked, unreadable = false): number {
    this.#commit(t);
    if (t.goneAt === 0 || t.fh || t.marks.length > 0) return 0;
    if (!unreadable && t.size > t.offset) return 0;
    this.#tracked.delete(t.key);
    if (t.deleted) this.#saved.delete(t.key);
    else this.#saved.set(t.key, { key: t.key, path: t.path, offset: t.committed, fpLen: t.fpLen, fp: t.fp, seenAt: Date.now() });
    return 0;
  }

  /** copytruncate (or a writer that truncated): read again from the start, after the rotated copy's unread part. */
  async #truncated(t: Tracked): Promise<void> {
    this.#m.rotations('truncate');
    const consumed = t.group ? t.group.startOffset : t.offset - (t.tail?.length ?? 0);
    this.#log.info({ intake: this.#intake, input: this.label, file: t.path, offset: consumed }, 'File truncated (copytruncate rotation?): reading it again from the start.');
    if (t.fpLen > 0) {
      const copy = await this.#findSibling(t.path, (key, fp) => key !== t.key && !this.#tracked.has(key) && fp(t.fpLen) === t.fp, consumed + 1);
      if (copy) {
        this.#log.info({ intake: this.#intake, input: this.label, file: copy.path, offset: consumed }, 'Reading the rotated copy from where the truncated file was.');
        this.#m.rotations('copy');
        const c = this.#track(copy.key, copy.path, consumed, copy.size);
        c.fp = t.fp;
        c.fpLen = t.fpLen;
        c.goneAt = Date.now();
      }
    }
    t.offset = 0;
    t.tail = undefined;
    t.group = undefined;
    t.discarding = false;
    t.fp = '';
    t.fpLen = 0;
    // Lines of the old content still in flight settle without moving this file's checkpoint.
    t.marks = [];
    t.committed = 0;
  }

  // ---- Finding files ----

  async #scan(initial: boolean): Promise<void> {
    const cfg = this.#cfg;
    const { files, problems } = await expandGlobs(cfg.paths, cfg.exclude);
    for (const p of problems) this.#error(p.code, `Cannot read ${p.path}: files under it are not followed (the other files are).`, { path: p.path }, p.path);
    const seen = new Set<string>();
    const now = Date.now();
    for (const path of files) {
      let st;
      try {
        st = await stat(path, { bigint: true });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
        if (code !== 'ENOENT') this.#error(code, 'Cannot stat a matched file.', { file: path }, path);
        continue;
      }
      if (!st.isFile()) continue;
      const key = `${st.dev}:${st.ino}`;
      const size = Number(st.size);
      seen.add(key);
      const t = this.#tracked.get(key);
      if (t) {
        if (t.path !== path) t.path = path; // renamed, still matched
        if (t.goneAt > 0 && !t.deleted) t.goneAt = 0;
        if (!t.fh) t.size = size;
        continue;
      }
      await this.#discover(key, path, size, initial);
    }
    for (const t of [...this.#tracked.values()]) {
      if (seen.has(t.key) || t.goneAt > 0) continue;
      t.goneAt = now;
      if (!t.fh) {
        // Closed (max_open_files) when it was renamed: look for it beside its old name.
        const found = await this.#findSibling(t.path, (key) => key === t.key, 0);
        if (found) {
          t.path = found.path;
          t.size = found.size;
        }
      }
      if (t.fh && !t.deleted) t.deleted = (await t.fh.stat().catch(() => undefined))?.nlink === 0;
      if (t.deleted) this.#m.rotations('delete');
      else {
        this.#m.rotations('rename');
        this.#log.info({ intake: this.#intake, input: this.label, file: t.path }, 'File rotated or moved away: reading it to its end.');
      }
    }
    for (const [key, cp] of this.#saved) {
      if (!this.#tracked.has(key) && now - cp.seenAt > cfg.forget_after_ms) this.#saved.delete(key);
    }
    this.#watchDirs();
  }

  /** A file not followed yet: where to start in it. */
  async #discover(key: string, path: string, size: number, initial: boolean): Promise<void> {
    const cfg = this.#cfg;
    const head = await this.#head(path);
    if (head === undefined) return;
    const fpOf = (len: number): string | undefined => (head.length >= len ? fingerprint(head.subarray(0, len)) : undefined);
    let start: number;
    const cp = this.#saved.get(key);
    if (cp && (cp.fpLen === 0 || fpOf(cp.fpLen) === cp.fp)) {
      // Known: resume. Shorter than the checkpoint means truncated while we were stopped.
      start = cp.offset <= size ? cp.offset : 0;
    } else {
      const original = head.length >= FINGERPRINT_BYTES ? this.#copyOf(key, fpOf(FINGERPRINT_BYTES) as string) : undefined;
      if (original !== undefined && original <= size) {
        this.#m.rotations('copy');
        this.#log.info({ intake: this.#intake, input: this.label, file: path, offset: original }, 'File is a copy of one already read: starting where that one was.');
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
    // Held open from now on (within max_open_files): a rename before the first read cannot hide it.
    await this.#open(t, false);
    this.#log.debug({ intake: this.#intake, input: this.label, file: path, offset: start }, 'Following a file.');
  }

  /** The offset reached in a followed or checkpointed file whose first bytes are `fp`, if any. */
  #copyOf(key: string, fp: string): number | undefined {
    for (const t of this.#tracked.values()) {
      if (t.key !== key && t.fpLen === FINGERPRINT_BYTES && t.fp === fp) return t.group ? t.group.startOffset : t.offset - (t.tail?.length ?? 0);
    }
    for (const cp of this.#saved.values()) {
      if (cp.key !== key && cp.fpLen === FINGERPRINT_BYTES && cp.fp === fp) return cp.offset;
    }
    return undefined;
  }

  #track(key: string, path: string, offset: number, size: number): Tracked {
    const now = Date.now();
    const cfg = this.#cfg;
    const defaults = {
      pri: cfg.facility * 8 + cfg.severity,
      hostname: this.#hostname,
      appName: cfg.app_name ?? appNameOf(path),
      procId: '',
    };
    const t: Tracked = {
      key, path, fh: undefined, offset, size, tail: undefined, tailAt: now, group: undefined, discarding: false, splitting: false,
      fp: '', fpLen: 0, marks: [], committed: offset, goneAt: 0, deleted: false, lastGrowAt: now, lastActiveAt: now,
      builder: new EventBuilder({ ...this.#ctx, defaults }, this.#c, true, cfg.syslog_header === 'keep', true),
    };
    this.#tracked.set(key, t);
    return t;
  }

  /** Files rotated by rename while the relay was stopped: read their unread end from the checkpoint. */
  async #recoverRotatedWhileStopped(): Promise<void> {
    for (const cp of [...this.#saved.values()]) {
      if (this.#tracked.has(cp.key)) continue;
      const found = await this.#findSibling(cp.path, (key, fp) => key === cp.key && (cp.fpLen === 0 || fp(cp.fpLen) === cp.fp), cp.offset + 1);
      if (!found) continue;
      this.#m.rotations('rename');
      this.#log.info({ intake: this.#intake, input: this.label, file: found.path, offset: cp.offset }, 'File rotated while stopped: reading its end.');
      const t = this.#track(cp.key, found.path, cp.offset, found.size);
      t.fp = cp.fp;
      t.fpLen = cp.fpLen;
      t.goneAt = Date.now();
    }
  }

  /**
   * A file beside `path` whose name starts with its base name (app.log.1, app.log-20261123) and
   * that passes `test` (its key, and a function giving the fingerprint of its first n bytes), of
   * at least `minSize` bytes.
   */
  async #findSibling(path: string, test: (key: string, fp: (n: number) => string | undefined) => boolean, minSize: number): Promise<{ key: string; path: string; size: number } | undefined> {
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
        const key = `${st.dev}:${st.ino}`;
        const head = await this.#head(p);
        if (!head) continue;
        if (test(key, (len) => (head.length >= len ? fingerprint(head.subarray(0, len)) : undefined))) return { key, path: p, size: Number(st.size) };
      } catch {
        continue;
      }
    }
    return undefined;
  }

  /** The first FINGERPRINT_BYTES bytes of a file (fewer if it is shorter); undefined if unreadable (reported). */
  async #head(path: string): Promise<Buffer | undefined> {
    let fh: FileHandle | undefined;
    try {
      fh = await open(path, 'r');
      const buf = Buffer.alloc(FINGERPRINT_BYTES);
      const { bytesRead } = await fh.read(buf, 0, FINGERPRINT_BYTES, 0);
      return buf.subarray(0, bytesRead);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
      if (code !== 'ENOENT') this.#error(code, 'Cannot read a matched file: it is not followed until it can be read.', { file: path }, path);
      return undefined;
    } finally {
      await fh?.close().catch(() => {});
    }
  }

  /** The file no longer starts with the bytes it started with. */
  async #replaced(t: Tracked, fh: FileHandle): Promise<boolean> {
    const buf = Buffer.allocUnsafe(t.fpLen);
    const { bytesRead } = await fh.read(buf, 0, t.fpLen, 0);
    return bytesRead < t.fpLen || fingerprint(buf) !== t.fp;
  }

  async #fingerprint(t: Tracked, fh: FileHandle): Promise<void> {
    const buf = Buffer.alloc(FINGERPRINT_BYTES);
    const { bytesRead } = await fh.read(buf, 0, FINGERPRINT_BYTES, 0);
    if (bytesRead > t.fpLen) {
      t.fpLen = bytesRead;
      t.fp = fingerprint(buf.subarray(0, bytesRead));
    }
  }

  /** Opens a followed file; at max_open_files, only when it has unread bytes (`evict`), by closing the least active. */
  async #open(t: Tracked, evict: boolean): Promise<boolean> {
    const max = this.#cfg.max_open_files;
    const open_ = [...this.#tracked.values()].filter((x) => x.fh);
    if (open_.length >= max) {
      if (!evict) return false;
      // Close the least recently active file still at its path (it is reopened when it grows).
      const idle = open_.filter((x) => x.goneAt === 0).sort((a, b) => a.lastActiveAt - b.lastActiveAt)[0];
      if (!idle) return false;
      await this.#close(idle);
    }
    try {
      const fh = await open(t.path, 'r');
      const st = await fh.stat({ bigint: true });
      if (`${st.dev}:${st.ino}` !== t.key) {
        // The path now holds another file; the next scan sorts it out.
        await fh.close();
        return false;
      }
      t.fh = fh;
      t.lastActiveAt = Date.now();
      return true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
      if (code !== 'ENOENT') this.#error(code, 'Cannot open a matched file.', { file: t.path }, t.path);
      return false;
    }
  }

  async #close(t: Tracked): Promise<void> {
    const fh = t.fh;
    t.fh = undefined;
    await fh?.close().catch(() => {});
  }

  // ---- Checkpoints ----

  #commit(t: Tracked): void {
    const settled = this.#ctx.targets[0]?.queue.safeBelow ?? 0;
    let i = 0;
    while (i < t.marks.length && (t.marks[i] as Mark).seq <= settled) {
      t.committed = (t.marks[i] as Mark).offset;
      i++;
    }
    if (i > 0) t.marks.splice(0, i);
  }

  /** `fresh`: a save that starts after this call (at stop), not one already in flight. */
  #save(fresh = false): Promise<void> {
    return this.#saving[fresh ? 'runFresh' : 'run'](async () => {
      try {
        const now = Date.now();
        for (const t of [...this.#tracked.values()]) {
          this.#commit(t);
          if (t.goneAt > 0 && !t.fh) {
            this.#maybeForget(t);
            continue;
          }
          this.#saved.set(t.key, { key: t.key, path: t.path, offset: t.committed, fpLen: t.fpLen, fp: t.fp, seenAt: now });
        }
        await this.#store.save(this.#saved.values());
      } catch (err) {
        this.#error('checkpoint', `Cannot write the checkpoint file ${this.#store.file}: ${(err as Error).message}`, {});
      }
    });
  }

  // ---- Watching ----

  /** inotify on the directories of followed files and of the patterns: new lines and files are seen at once, polling is the fallback. */
  #watchDirs(): void {
    const dirs = new Set<string>();
    for (const t of this.#tracked.values()) dirs.add(dirname(t.path));
    for (const p of this.#cfg.paths) dirs.add(globBase(p).base);
    for (const [dir, w] of this.#watchers) {
      if (!dirs.has(dir)) {
        w.close();
        this.#watchers.delete(dir);
      }
    }
    for (const dir of dirs) {
      if (this.#watchers.has(dir) || this.#watchers.size >= MAX_WATCHED_DIRS) continue;
      try {
        const w = watch(dir, { persistent: false }, (event) => {
          if (event === 'rename') this.#scanDue = true;
          this.#wake?.();
        });
        w.on('error', () => {
          w.close();
          this.#watchers.delete(dir);
        });
        this.#watchers.set(dir, w);
      } catch {
        // Not watchable (missing, inotify limits): polling covers it.
      }
    }
  }

  #error(code: string, msg: string, fields: object, what = ''): void {
    this.#m.errors(code);
    const suppressed = this.#limiter.allow(`${code}|${what}`);
    if (suppressed === undefined) return;
    this.#log.error({ intake: this.#intake, input: this.label, code, ...fields, suppressed }, msg);
  }
}

/** Where to cut a line longer than `max` bytes starting at `s`: at a UTF-8 character boundary. */
function cut(buf: Buffer, s: number, max: number): number {
  const e = utf8Boundary(buf, s, s + max);
  return e > s ? e : s + max;
}

/** APP-NAME from a file name: printable ASCII, at most 48 characters. */
export function appNameOf(path: string): string {
  const name = basename(path).replace(/[^\x21-\x7e]/g, '_').slice(0, 48);
  return name || '-';
}
