// The disk queue's recovery at open: every segment file of the log is checked, record by record. A
// torn tail (a crash mid-write) is cut off; a damaged part in the middle (a bit flip, a lost page)
// is copied aside into damaged/, counted with the number of events it held (from the gap in the
// numbers), and removed; a segment is rewritten (atomically) with its valid records only.

import { closeSync, fstatSync, mkdirSync, openSync, readdirSync, readSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkRecord } from './event-codec.ts';

const SEGMENT_RE = /^(\d{16})\.seg$/;

export interface Segment {
  readonly firstSeq: number;
  readonly path: string;
  size: number;
  /** receivedAt of its first event (ms), for the oldest-event age. */
  firstAt: number;
}

export interface RecoveryReport {
  /** Events found on disk (numbered firstSeq to nextSeq, less the lost ones). */
  readonly events: number;
  readonly firstSeq: number;
  readonly nextSeq: number;
  /** Bytes cut off the end of the last segment (a write torn by a crash). */
  readonly tornBytes: number;
  /** Damaged parts set aside, and the events they held (as far as the numbering tells). */
  readonly damaged: readonly { readonly file: string; readonly bytes: number; readonly events: number }[];
}

/** The segments of the log in `dir` after repair, oldest first, and the number the next event gets. */
export function recoverSegments(dir: string): { readonly segments: Segment[]; readonly nextSeq: number; readonly report: RecoveryReport } {
  const files = readdirSync(dir).filter((f) => SEGMENT_RE.test(f)).sort();
  let tornBytes = 0;
  const damaged: { file: string; bytes: number; events: number }[] = [];
  let events = 0;
  let lastSeq = -1;
  const segments: Segment[] = [];
  for (let i = 0; i < files.length; i++) {
    const name = files[i] as string;
    const path = join(dir, name);
    const isLast = i === files.length - 1;
    const buf = readWhole(path);
    const keep: Buffer[] = [];
    let firstSeq = -1;
    let firstAt = 0;
    let p = 0;
    let changed = false;
    while (p < buf.length) {
      const r = checkRecord(buf, p, buf.length);
      if (r.kind === 'record' && r.seq > lastSeq) {
        if (firstSeq < 0) {
          firstSeq = r.seq;
          firstAt = r.receivedAt;
        }
        keep.push(buf.subarray(p, r.next));
        lastSeq = r.seq;
        events++;
        p = r.next;
        continue;
      }
      // Damage: find the next valid record after it.
      const q = resync(buf, p + 1, lastSeq);
      changed = true;
      if (q < 0 && isLast && r.kind === 'short') {
        tornBytes += buf.length - p;
        break;
      }
      const end = q < 0 ? buf.length : q;
      const aside = join(dir, 'damaged', `${name}-${p}.bin`);
      mkdirSync(join(dir, 'damaged'), { recursive: true });
      writeFileSync(aside, buf.subarray(p, end));
      const nextSeq = q < 0 ? -1 : (checkRecord(buf, q, buf.length) as { seq: number }).seq;
      damaged.push({ file: aside, bytes: end - p, events: nextSeq > lastSeq ? nextSeq - lastSeq - 1 : 0 });
      p = end;
    }
    if (keep.length === 0) {
      unlinkSync(path);
      continue;
    }
    if (changed) {
      // Rewrite the segment with its valid records only (atomically).
      const tmp = `${path}.tmp`;
      writeFileSync(tmp, Buffer.concat(keep));
      renameSync(tmp, path);
    }
    const size = keep.reduce((n, b) => n + b.length, 0);
    const seg: Segment = { firstSeq, path: join(dir, segmentName(firstSeq)), size, firstAt };
    if (seg.path !== path) renameSync(path, seg.path); // a damaged head moved the first number
    segments.push(seg);
  }
  // Events lost in a damaged last part cannot be counted from a gap; the numbering goes on after the last valid one.
  const nextSeq = lastSeq + 1;
  return { segments, nextSeq, report: { events, firstSeq: segments[0]?.firstSeq ?? nextSeq, nextSeq, tornBytes, damaged } };
}

export function segmentName(firstSeq: number): string {
  return `${String(firstSeq).padStart(16, '0')}.seg`;
}

function readWhole(path: string): Buffer {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const buf = Buffer.allocUnsafe(size);
    let n = 0;
    while (n < size) {
      const r = readSync(fd, buf, n, size - n, n);
      if (r === 0) break;
      n += r;
    }
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/** Offset of the next valid record after damage (numbered after `lastSeq`), or -1. */
function resync(buf: Buffer, from: number, lastSeq: number): number {
  for (let q = from; q + 8 <= buf.length; q++) {
    const r = checkRecord(buf, q, buf.length);
    if (r.kind === 'record' && r.seq > lastSeq) return q;
  }
  return -1;
}
