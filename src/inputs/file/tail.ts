// The file input: follows the files its globs match (discovery.ts) and forwards each appended line
// (lines.ts) as an event. This is the read loop that drives them, and the checkpoints.
//
// - Reading: every followed file in turn, a few reads each, woken by inotify on their directories
//   or by the poll interval; at the end of a file, a partial line or a multiline event that waited
//   long enough is forwarded, and a file rotated away that stayed quiet for rotate_wait_ms is closed.
// - Checkpoints only move past lines that are settled: after each offer the reader notes the
//   queue's next sequence number with the file offset reached; once the queue's settled watermark
//   passes that number, the offset is committed and saved (atomically, every second and at stop).
//   After a crash every line is read again from the last checkpoint: at least once, duplicates
//   bounded by what was in flight.
// - Backpressure: the reader waits while the intake's queue is full; nothing is skipped.

import { RelayError } from '../../core/errors.ts';
import { watch, type FSWatcher } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { ResolvedFileInput } from './config.ts';
import { SingleFlight } from '../../core/single-flight.ts';
import type { Inlet } from '../../core/component.ts';
import { FrameBuilder } from '../frame-builder.ts';
import { CheckpointStore, FINGERPRINT_BYTES, holdLive, markAdopted, oneAtATime, othersCheckpoints, releaseLive } from './checkpoints.ts';
import { Discovery } from './discovery.ts';
import type { Mark, Tracked as FollowedFile } from './followed.ts';
import { globBase } from './glob.ts';
import { longerFingerprint, replaced } from './identity.ts';
import { LineSplitter } from './lines.ts';
import type { FileTelemetry } from '../../core/telemetry.ts';
import { reportError } from './telemetry.ts';

/** Bytes read at once. Events keep referring to the read's buffer (no copy). */
const READ_BYTES = 512 * 1024;
/** Reads from one file before the others get their turn. */
const READS_PER_TURN = 8;
const CHECKPOINT_EVERY_MS = 1_000;
const MAX_WATCHED_DIRS = 1_024;

/** A followed file's reading parts: its lines, and one event builder per file, for its own APP-NAME. */
interface Reader {
  readonly lines: LineSplitter;
  readonly builder: FrameBuilder;
}

type Tracked = FollowedFile<Reader>;

export class FileInput {
  readonly label: string;
  readonly #cfg: ResolvedFileInput;
  readonly #inlet: Inlet;
  readonly #t: FileTelemetry;
  readonly #store: CheckpointStore;
  readonly #intake: string;
  readonly #files: Discovery<Reader>;
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

  constructor(cfg: ResolvedFileInput, inlet: Inlet, checkpointFile: string, hostname: string, telemetry: FileTelemetry) {
    this.label = cfg.label;
    this.#cfg = cfg;
    this.#inlet = inlet;
    this.#t = telemetry;
    this.#intake = inlet.owner;
    this.#store = new CheckpointStore(checkpointFile, this.#intake, cfg.label);
    // Running from now on (until its last save): no other input takes its checkpoints over.
    holdLive(checkpointFile);
    this.#files = new Discovery(cfg, telemetry, this.#reader(cfg, inlet, cfg.hostname ?? hostname));
    this.dispose = telemetry.watchFiles(() => {
      let open = 0;
      let unread = 0;
      for (const t of this.#files.tracked.values()) {
        if (t.fh) open++;
        if (t.size > t.offset) unread += t.size - t.offset;
      }
      return { tracked: this.#files.tracked.size, open, unread };
    });
  }

  /** Stops reporting its gauges (the input is gone). */
  readonly dispose: () => void;

  /** Files followed now, by path (for tests and /status). */
  get files(): string[] {
    return [...this.#files.tracked.values()].map((t) => t.path);
  }

  /** It listens on no port. */
  readonly port = 0;

  get where(): string {
    return `following ${this.#files.tracked.size} file(s) matching ${this.#cfg.paths.join(', ')}`;
  }

  async start(): Promise<void> {
    // One input at a time looks for checkpoints of gone inputs and marks those it takes over.
    try {
      await oneAtATime(() => this.#start());
    } catch (err) {
      releaseLive(this.#store.file);
      throw err;
    }
    this.#checkpointTimer = setInterval(() => void this.#save(), CHECKPOINT_EVERY_MS);
    this.#checkpointTimer.unref();
    this.#loop = this.#run();
  }

  async #start(): Promise<void> {
    let loaded;
    try {
      loaded = await this.#store.load();
    } catch (err) {
      throw new RelayError('ERELAY_STATE', `File input "${this.label}" of intake "${this.#intake}": cannot use the checkpoint file ${this.#store.file}: ${(err as Error).message}. Check data_dir.`, { cause: err });
    }
    if (loaded.problem) this.#t.log.logger.error({ file: this.#store.file, problem: loaded.problem }, 'Checkpoint file damaged: files are read as new ones (duplicates possible, nothing skipped).');
    this.#files.restore(loaded.entries, !loaded.existed, await othersCheckpoints(this.#store.file, this.#cfg.forget_after_ms));
    await this.#scan(true);
    this.#nextScan = performance.now() + this.#cfg.glob_interval_ms;
    await this.#files.recoverRotatedWhileStopped();
    // Saved at once, so that a crash from here on is not taken for a first start.
    await this.#save();
    // Then the checkpoints taken over are marked in the files they came from: not taken twice.
    for (const [from, keys] of this.#files.adopted) {
      await markAdopted(from, keys).catch((err: unknown) => this.#error('checkpoint', from, err, { file: from }, `Cannot mark the checkpoints taken over in ${from}: another input could take them over again.`));
    }
    this.#files.endAdoption();
  }

  /** Stops reading. Checkpoints are written by save(), once the queue has drained (or before a replacement starts). */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#onStop();
    this.#wake?.();
    await this.#loop;
    for (const w of this.#watchers.values()) w.close();
    this.#watchers.clear();
  }

  /** After the outputs have drained: commits what was delivered, saves, closes the files. */
  async save(): Promise<void> {
    if (this.#checkpointTimer) clearInterval(this.#checkpointTimer);
    await this.#save(true);
    for (const t of this.#files.tracked.values()) await this.#files.close(t);
    // Gone: an input that starts later may take its checkpoints over.
    releaseLive(this.#store.file);
  }

  /** Makes the reading parts of a newly followed file: its lines go to its event builder. */
  #reader(cfg: ResolvedFileInput, inlet: Inlet, hostname: string): (path: string) => Reader {
    const telemetry = this.#t;
    const multiline = cfg.multiline ? { startPattern: new RegExp(cfg.multiline.start_pattern), maxLines: cfg.multiline.max_lines, timeoutMs: cfg.multiline.timeout_ms } : undefined;
    const options = { maxLineBytes: cfg.max_line_bytes, oversize: cfg.oversize, latin1: cfg.encoding === 'latin1', partialLineTimeoutMs: cfg.partial_line_timeout_ms, multiline };
    return (path) => {
      const defaults = { pri: cfg.facility * 8 + cfg.severity, hostname, appName: cfg.app_name ?? appNameOf(path), procId: '' };
      const builder = new FrameBuilder(inlet, telemetry, defaults, cfg.syslog_header === 'keep');
      const lines = new LineSplitter(options, {
        begin: (chunk) => builder.begin(chunk, ''),
        line: (buf, start, end) => builder.frame(buf, start, end, false),
        split: () => telemetry.modified('split', 1),
        dropped: () => telemetry.tooLarge(1),
      });
      return { lines, builder };
    };
  }

  // ---- The read loop ----

  async #run(): Promise<void> {
    const cfg = this.#cfg;
    while (!this.#stopping) {
      try {
        const now = performance.now();
        if (this.#scanDue || now >= this.#nextScan) {
          this.#scanDue = false;
          this.#nextScan = now + cfg.glob_interval_ms;
          await this.#scan(false);
        }
        let read = 0;
        for (const t of [...this.#files.tracked.values()]) {
          if (this.#stopping) break;
          read += await this.#visit(t);
        }
        if (read === 0 && !this.#stopping) await this.#sleep(Math.min(cfg.poll_interval_ms, Math.max(1, this.#nextScan - performance.now())));
      } catch (err) {
        this.#error('EIO', '', err, {}, `File input error: ${(err as Error).message}`);
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

  async #scan(initial: boolean): Promise<void> {
    await this.#files.scan(initial);
    this.#watchDirs();
  }

  /** Reads what a file has new; handles the end of file (partial lines, truncation, closing). Returns bytes read. */
  async #visit(t: Tracked): Promise<number> {
    if (!t.fh) {
      const unread = t.size > t.offset;
      if (t.goneAt > 0 && !unread) return this.#maybeForget(t);
      if (!(await this.#files.open(t, unread))) return t.goneAt > 0 ? this.#maybeForget(t, true) : 0;
    }
    const fh = t.fh as FileHandle;
    // A file truncated and written again past our offset before we looked (copytruncate during a
    // burst) still shows by its first bytes.
    if (t.fpLen > 0 && (await replaced(fh, t.fp, t.fpLen))) await this.#files.truncated(t, t.size);
    let read = 0;
    for (let i = 0; i < READS_PER_TURN && !this.#stopping; i++) {
      // After copytruncate, the rotated copy's older lines go first.
      if (this.#files.waiting(t)) return read;
      let st;
      try {
        st = await fh.stat();
      } catch (err) {
        this.#error((err as NodeJS.ErrnoException).code ?? 'EIO', '', err, { file: t.path }, 'Cannot stat a followed file.');
        await this.#files.close(t);
        return read;
      }
      const before = t.size;
      t.size = st.size;
      if (st.nlink === 0 && !t.deleted) {
        t.deleted = true;
        t.goneAt ||= Date.now();
        this.#t.rotated('delete');
      }
      if (st.size < t.offset) {
        await this.#files.truncated(t, before);
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
    const { buf, at } = t.lines.buffer(READ_BYTES);
    let bytesRead: number;
    try {
      ({ bytesRead } = await fh.read(buf, at, READ_BYTES, t.offset));
    } catch (err) {
      this.#error((err as NodeJS.ErrnoException).code ?? 'EIO', '', err, { file: t.path }, 'Cannot read a followed file.');
      return 0;
    }
    if (bytesRead === 0) return 0;
    const now = Date.now();
    if (t.fpLen < FINGERPRINT_BYTES && t.offset < FINGERPRINT_BYTES) {
      const longer = await longerFingerprint(fh, t.fpLen);
      if (longer) {
        t.fp = longer.fp;
        t.fpLen = longer.fpLen;
      }
    }
    t.offset += bytesRead;
    t.lastGrowAt = now;
    t.lastActiveAt = now;
    t.lines.fill(bytesRead, now);
    await this.#offer(t);
    return bytesRead;
  }

  /** Offers what the file's builder holds, notes the checkpoint mark, waits while the queue is full. */
  async #offer(t: Tracked): Promise<void> {
    const result = t.builder.flush();
    const consumed = this.#files.consumed(t);
    const last = t.marks[t.marks.length - 1];
    const queue = this.#inlet.targets[0]?.queue;
    if (queue && (!last || last.offset !== consumed)) t.marks.push({ seq: queue.nextSeq, offset: consumed });
    if (result === 'slow_down') await Promise.race([t.builder.writable(), this.#stopped]);
  }

  /** At the end of what a file holds: forwards a partial line or a multiline event that waited long enough; closes files gone for good. */
  async #atEnd(t: Tracked): Promise<void> {
    const now = Date.now();
    if (t.lines.due(now)) await this.#offer(t);
    if (t.goneAt > 0 && now - Math.max(t.goneAt, t.lastGrowAt) >= this.#cfg.rotate_wait_ms) {
      // Rotated away or deleted, read to its end, and quiet for rotate_wait_ms: let it go. What
      // still waits for a newline is forwarded first.
      t.lines.end(now);
      await this.#offer(t);
      await this.#files.close(t);
    }
  }

  // ---- Checkpoints ----

  /**
   * A file that was let go (or, `unreadable`, cannot be opened any more) is forgotten once its
   * last lines are settled; its checkpoint stays (until forget_after_ms) unless it was deleted.
   */
  #maybeForget(t: Tracked, unreadable = false): number {
    this.#commit(t);
    if (t.goneAt === 0 || t.fh || t.marks.length > 0) return 0;
    if (!unreadable && t.size > t.offset) return 0;
    this.#files.tracked.delete(t.key);
    if (t.deleted) this.#files.saved.delete(t.key);
    else this.#files.saved.set(t.key, { key: t.key, path: t.path, offset: t.committed, fpLen: t.fpLen, fp: t.fp, seenAt: Date.now() });
    return 0;
  }

  #commit(t: Tracked): void {
    const settled = this.#inlet.targets[0]?.queue.safeBelow ?? 0;
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
        for (const t of [...this.#files.tracked.values()]) {
          this.#commit(t);
          // Let go and settled: forgotten (its checkpoint kept unless deleted). Otherwise saved, closed
          // or not (deleted ones excepted): a rotated copy still unread resumes from it at the next start.
          if (t.goneAt > 0 && !t.fh) {
            this.#maybeForget(t);
            if (t.deleted || !this.#files.tracked.has(t.key)) continue;
          }
          this.#files.saved.set(t.key, { key: t.key, path: t.path, offset: t.committed, fpLen: t.fpLen, fp: t.fp, seenAt: now });
        }
        await this.#store.save(this.#files.saved.values());
      } catch (err) {
        this.#error('checkpoint', '', err, {}, `Cannot write the checkpoint file ${this.#store.file}: ${(err as Error).message}`);
      }
    });
  }

  // ---- Watching ----

  /** inotify on the directories of followed files and of the patterns: new lines and files are seen at once, polling is the fallback. */
  #watchDirs(): void {
    const dirs = new Set<string>();
    for (const t of this.#files.tracked.values()) dirs.add(dirname(t.path));
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

  #error(code: string, what: string, err: unknown, fields: object, msg: string): void {
    reportError(this.#t, code, what, err, fields, msg);
  }
}

/** APP-NAME from a file name: printable ASCII, at most 48 characters. */
export function appNameOf(path: string): string {
  const name = basename(path).replace(/[^\x21-\x7e]/g, '_').slice(0, 48);
  return name || '-';
}
