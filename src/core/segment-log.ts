// The disk queue's storage: an append-only log of event records split into segment files named by
// the number of their first event. Appends are whole chunks in one write (rolled back on error, so
// a failed write leaves no partial record behind while running). Records carry a length and a
// CRC-32; on open, every segment is checked: a torn tail (a crash mid-write) is cut off, and a
// damaged part in the middle (a bit flip, a lost page) is copied aside into damaged/, counted with
// the number of events it held (from the gap in the numbers), and removed, so that the rest is
// delivered and the daemon never refuses to start or loops on it (segment-recovery.ts). A call that fails while running
// (no file descriptors left, EIO) throws and leaves the log as it was: no descriptor kept that was
// closed, no file written that the log does not know; the caller may try again.

import { closeSync, fstatSync, fsync, ftruncateSync, mkdirSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { LogEvent } from './event.ts';
import { readRecord, recordSize, writeRecord } from './event-codec.ts';
import { SingleFlight } from './single-flight.ts';
import { recoverSegments, segmentName, type RecoveryReport, type Segment } from './segment-recovery.ts';

export type { RecoveryReport } from './segment-recovery.ts';

const READ_BYTES = 1024 * 1024;

export interface ReadBatch {
  readonly events: LogEvent[];
  /** Sum of the events' frame sizes. */
  readonly bytes: number;
  /** Number of the first event. */
  readonly seq: number;
}

export class SegmentLog {
  readonly dir: string;
  readonly #segmentBytes: number;
  readonly #segments: Segment[] = [];
  #nextSeq = 0;
  #fd = -1;
  #bytes = 0;
  /** Appended and fsynced: every event numbered below is on stable storage. */
  #durableBelow = 0;
  /** The background fsyncs of finished segments, in order: true once all so far succeeded. */
  #rolled: Promise<boolean> = Promise.resolve(true);
  readonly #syncing = new SingleFlight();
  // The read cursor: the next record to read is event `#readSeq` at `#readOffset` of segment
  // `#readSeg` (an index into #segments, kept valid when segments are deleted).
  #readSeq = -1;
  #readSegFirst = -1;
  #readOffset = 0;
  #readFd = -1;
  #readFdSeg = -1;

  private constructor(dir: string, segmentBytes: number) {
    this.dir = dir;
    this.#segmentBytes = segmentBytes;
  }

  /** Opens (creating) the log in `dir`, checking and repairing every segment. Throws only when the directory is unusable. */
  static open(dir: string, segmentBytes: number): { log: SegmentLog; report: RecoveryReport } {
    mkdirSync(dir, { recursive: true });
    const log = new SegmentLog(dir, segmentBytes);
    const report = log.#recover();
    return { log, report };
  }

  get nextSeq(): number {
    return this.#nextSeq;
  }
  /** Number of the first event still on disk. */
  get firstSeq(): number {
    return this.#segments[0]?.firstSeq ?? this.#nextSeq;
  }
  /** Bytes of all segments. */
  get bytes(): number {
    return this.#bytes;
  }
  get segments(): number {
    return this.#segments.length;
  }
  get durableBelow(): number {
    return this.#durableBelow;
  }
  /** receivedAt of the first event of the segment holding event `seq` (0 when unknown). */
  firstAtOf(seq: number): number {
    const s = this.#segmentOf(seq);
    return s ? s.firstAt : 0;
  }

  #recover(): RecoveryReport {
    const found = recoverSegments(this.dir);
    this.#segments.push(...found.segments);
    this.#bytes = found.segments.reduce((n, seg) => n + seg.size, 0);
    this.#nextSeq = found.nextSeq;
    this.#durableBelow = this.#nextSeq;
    return found.report;
  }

  /**
   * Continue numbering from `seq` (the saved settled watermark) when it is above the last event on
   * disk: the log is empty, or lost its end (written but not fsynced before a power cut, or a
   * damaged tail set aside) after those events were settled. A number below the watermark is never
   * given out again: it counts as settled at the next start. Called right after open, before any
   * append: the writer's segment is not open yet, so the next append starts a new segment named
   * from `seq`, and the gap below it lies between segments (events that were settled).
   */
  startAt(seq: number): void {
    if (seq > this.#nextSeq) {
      this.#nextSeq = seq;
      this.#durableBelow = seq;
    }
  }

  /**
   * Appends `events` numbered from nextSeq, in one write. On error, the segment is cut back to
   * where it was and the error thrown: nothing was appended.
   */
  append(events: readonly LogEvent[]): number {
    let size = 0;
    for (const e of events) size += recordSize(e);
    const out = Buffer.allocUnsafe(size);
    let o = 0;
    let seq = this.#nextSeq;
    for (const e of events) o = writeRecord(out, o, e, seq++);
    let seg = this.#segments[this.#segments.length - 1];
    if (!seg || this.#fd < 0 || seg.size >= this.#segmentBytes) seg = this.#roll(events[0]?.receivedAt ?? Date.now());
    const before = seg.size;
    try {
      let written = 0;
      while (written < out.length) written += writeSync(this.#fd, out, written, out.length - written, null);
    } catch (err) {
      try {
        ftruncateSync(this.#fd, before);
      } catch {
        // The next open's check cuts any partial record.
      }
      throw err;
    }
    seg.size += out.length;
    this.#bytes += out.length;
    this.#nextSeq = seq;
    return out.length;
  }

  #roll(firstAt: number): Segment {
    if (this.#fd >= 0) {
      // The finished segment is fsynced and closed in the background. Its events are durable
      // once its fsync and those of the segments before it are done: fsyncs may end in any order.
      const fd = this.#fd;
      const upTo = this.#nextSeq;
      this.#fd = -1;
      const before = this.#rolled;
      this.#rolled = new Promise<boolean>((resolve) => {
        fsync(fd, (err) => {
          try {
            closeSync(fd);
          } catch {
            // already closed
          }
          void before.then((ok) => {
            const durable = ok && !err;
            if (durable) this.#durableBelow = Math.max(this.#durableBelow, upTo);
            resolve(durable);
          });
        });
      });
    }
    const last = this.#segments[this.#segments.length - 1];
    const reuse = last && last.size === 0 && last.firstSeq === this.#nextSeq;
    const seg: Segment = reuse ? last : { firstSeq: this.#nextSeq, path: join(this.dir, segmentName(this.#nextSeq)), size: 0, firstAt };
    const fd = openSync(seg.path, 'a', 0o600);
    try {
      if (fstatSync(fd).size > 0) ftruncateSync(fd, 0); // a leftover of a failed write
    } catch (err) {
      // Not the writer's: the next append rolls again (an empty leftover is reused, or truncated).
      closeQuietly(fd);
      throw err;
    }
    this.#fd = fd;
    if (!reuse) this.#segments.push(seg);
    return seg;
  }

  /**
   * fsyncs what was appended; resolves once it is on stable storage. `fresh`: covers everything
   * appended before this call (a sync already in flight may not).
   */
  sync(fresh = false): Promise<void> {
    return this.#syncing[fresh ? 'runFresh' : 'run'](
      () =>
        new Promise<void>((resolve) => {
          const upTo = this.#nextSeq;
          const rolled = this.#rolled;
          // Nothing open to sync: finished segments sync on their own when rolled (waited for).
          if (this.#fd < 0 || upTo === this.#durableBelow) return void rolled.then(() => resolve());
          fsync(this.#fd, (err) => {
            // Not durable past a finished segment whose own fsync is still running (or failed).
            void rolled.then((ok) => {
              if (!err && ok) this.#durableBelow = Math.max(this.#durableBelow, upTo);
              resolve();
            });
          });
        }),
    );
  }

  /**
   * Reads up to `maxEvents` / `maxBytes` events from number `seq` on. Sequential reads continue
   * where the last one stopped; any other seq is found by scanning its segment. The events of one
   * read are numbered consecutively from `seq` of the result: a read stops before a gap in the
   * numbering, and the next one reports the gap as `lost` (events [seq - lost, seq) were in a part
   * found damaged).
   */
  read(seq: number, maxEvents: number, maxBytes: number): ReadBatch & { readonly lost: number } {
    try {
      return this.#read(seq, maxEvents, maxBytes);
    } catch (err) {
      // The events read so far are not handed out: the next read finds its place again.
      this.#readSeq = -1;
      throw err;
    }
  }

  #read(seq: number, maxEvents: number, maxBytes: number): ReadBatch & { readonly lost: number } {
    if (seq !== this.#readSeq) this.#seek(seq);
    const events: LogEvent[] = [];
    let bytes = 0;
    let lost = 0;
    let first = -1;
    outer: while (events.length < maxEvents && bytes < maxBytes) {
      const seg = this.#segments.find((x) => x.firstSeq === this.#readSegFirst);
      if (!seg) {
        const s = this.#segmentOf(this.#readSeq) ?? this.#segments[0];
        if (!s || s.firstSeq === this.#readSegFirst) break;
        this.#readSegFirst = s.firstSeq;
        this.#readOffset = 0;
        continue;
      }
      if (this.#readOffset >= seg.size) {
        const after = this.#segments[this.#segments.indexOf(seg) + 1];
        if (!after) break; // the writer's segment: nothing more yet
        this.#readSegFirst = after.firstSeq;
        this.#readOffset = 0;
        continue;
      }
      const fd = this.#readFdFor(seg);
      const remaining = seg.size - this.#readOffset;
      let buf = Buffer.allocUnsafe(Math.min(READ_BYTES, remaining));
      let n = readSync(fd, buf, 0, buf.length, this.#readOffset);
      if (n >= 8) {
        const len = buf.readUInt32LE(0) + 8;
        if (len > n && len <= remaining) {
          // A record longer than one read.
          buf = Buffer.allocUnsafe(len);
          n = readSync(fd, buf, 0, len, this.#readOffset);
        }
      }
      let p = 0;
      while (p < n) {
        const r = readRecord(buf, p, n);
        if (r.kind === 'short') break;
        if (r.kind === 'bad') {
          // Damaged since the check at start: the rest of this segment is given up (the gap in the
          // numbering is reported by the next read).
          this.#readOffset = seg.size;
          continue outer;
        }
        if (r.seq < this.#readSeq) {
          p = r.next;
          continue;
        }
        if (r.seq > this.#readSeq) {
          if (events.length > 0) {
            this.#readOffset += p;
            break outer;
          }
          lost += r.seq - this.#readSeq;
          this.#readSeq = r.seq;
        }
        if (first < 0) first = r.seq;
        events.push(r.event);
        bytes += r.event.end - r.event.start;
        this.#readSeq++;
        p = r.next;
        if (events.length >= maxEvents || bytes >= maxBytes) break;
      }
      if (p === 0) {
        // Not even one record: the segment's end does not hold a whole record.
        this.#readOffset = seg.size;
        continue;
      }
      this.#readOffset += p;
    }
    return { events, bytes, seq: first < 0 ? this.#readSeq : first, lost };
  }

  #seek(seq: number): void {
    const seg = this.#segmentOf(seq) ?? this.#segments[0];
    this.#readSeq = seq;
    this.#readSegFirst = seg ? seg.firstSeq : -1;
    this.#readOffset = 0;
  }

  #readFdFor(seg: Segment): number {
    if (this.#readFdSeg !== seg.firstSeq) {
      this.#closeReader();
      this.#readFd = openSync(seg.path, 'r');
      this.#readFdSeg = seg.firstSeq;
    }
    return this.#readFd;
  }

  /** Closes the read descriptor; forgotten even if close fails (it is released anyway). */
  #closeReader(): void {
    const fd = this.#readFd;
    this.#readFd = -1;
    this.#readFdSeg = -1;
    if (fd >= 0) closeQuietly(fd);
  }

  #segmentOf(seq: number): Segment | undefined {
    let found: Segment | undefined;
    for (const s of this.#segments) {
      if (s.firstSeq <= seq) found = s;
      else break;
    }
    return found;
  }

  /**
   * Deletes the segments all of whose events are numbered below `seq`; returns the bytes freed.
   * The writer's own segment goes too once all of it is below `seq` and it is full, or `force`.
   */
  deleteBelow(seq: number, force = false): number {
    let freed = 0;
    while (this.#segments.length > 1) {
      const next = this.#segments[1] as Segment;
      if (next.firstSeq > seq) break;
      const seg = this.#segments.shift() as Segment;
      if (this.#readFdSeg === seg.firstSeq) this.#closeReader();
      try {
        unlinkSync(seg.path);
      } catch {
        // Gone already; nothing to free.
      }
      this.#bytes -= seg.size;
      freed += seg.size;
    }
    // The writer's segment, wholly settled and big enough: start a new one and delete it. If the new
    // one cannot be opened, this throws with the old one kept (deleted by a later call).
    const last = this.#segments[0];
    if (this.#segments.length === 1 && last && seq >= this.#nextSeq && last.size > 0 && (force || last.size >= this.#segmentBytes)) {
      this.#roll(Date.now());
      return freed + this.deleteBelow(seq);
    }
    return freed;
  }

  close(): void {
    if (this.#fd >= 0) {
      try {
        // The last appends reach the disk before the process ends.
        const fd = this.#fd;
        this.#fd = -1;
        closeSync(fd);
      } catch {
        // closing is best effort
      }
    }
    this.#closeReader();
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // The descriptor is released even when close reports an error.
  }
}
