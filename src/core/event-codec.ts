// Events as bytes for the disk queue. A record is
//   u32 payload length | u32 CRC-32 of the payload | payload
// and the payload is
//   f64 seq | f64 receivedAt | u8 pri | u8 format | u32 x5 (sd start/end, msg start, ts start/end,
//   relative to the frame) | 5 x (u8 length + latin1 bytes): sender, hostname, app name, procid,
//   msgid | the frame's bytes.
// Header fields are printable ASCII (at most 255 bytes each), so latin1 is exact.

import { crc32 } from 'node:zlib';
import type { LogEvent } from './event.ts';

export const RECORD_HEADER = 8;
const FIXED = 8 + 8 + 1 + 1 + 5 * 4;
/** Payloads longer than this are not records (the intake's 250 KiB limit plus headers, with room). */
export const MAX_PAYLOAD = 1024 * 1024;

const FORMATS = [0, 3164, 5424] as const;

const MAX_FIELD = 255;
const fieldLength = (s: string): number => Math.min(MAX_FIELD, s.length);

function fieldBytes(e: LogEvent): number {
  return 5 + fieldLength(e.sender) + fieldLength(e.hostname) + fieldLength(e.appName) + fieldLength(e.procId) + fieldLength(e.msgId);
}

/** Bytes the record of `e` takes on disk. */
export function recordSize(e: LogEvent): number {
  return RECORD_HEADER + FIXED + fieldBytes(e) + (e.end - e.start);
}

/** Writes the record of event `e` numbered `seq` at `out[at]`; returns the offset after it. */
export function writeRecord(out: Buffer, at: number, e: LogEvent, seq: number): number {
  const p = at + RECORD_HEADER;
  let o = p;
  o = out.writeDoubleLE(seq, o);
  o = out.writeDoubleLE(e.receivedAt, o);
  o = out.writeUInt8(e.pri & 0xff, o);
  o = out.writeUInt8(e.format === 5424 ? 2 : e.format === 3164 ? 1 : 0, o);
  o = out.writeUInt32LE(e.sdStart - e.start, o);
  o = out.writeUInt32LE(e.sdEnd - e.start, o);
  o = out.writeUInt32LE(e.msgStart - e.start, o);
  o = out.writeUInt32LE(e.tsStart - e.start, o);
  o = out.writeUInt32LE(e.tsEnd - e.start, o);
  for (const s of [e.sender, e.hostname, e.appName, e.procId, e.msgId]) {
    const n = fieldLength(s);
    out[o++] = n;
    o += out.write(s, o, n, 'latin1');
  }
  o += e.buf.copy(out, o, e.start, e.end);
  out.writeUInt32LE(o - p, at);
  out.writeUInt32LE(crc32(out.subarray(p, o)), at + 4);
  return o;
}

export type ReadResult =
  | { readonly kind: 'record'; readonly seq: number; readonly event: LogEvent; readonly next: number }
  /** Not enough bytes for the whole record (the rest is in the next read, or a torn write). */
  | { readonly kind: 'short' }
  /** Not a valid record here: a bad length or checksum. */
  | { readonly kind: 'bad' };

/** Checks the record at `buf[at]` (length and checksum) without decoding it. */
export function checkRecord(buf: Buffer, at: number, end: number): { readonly kind: 'record'; readonly seq: number; readonly receivedAt: number; readonly next: number } | { readonly kind: 'short' | 'bad' } {
  if (end - at < RECORD_HEADER) return { kind: 'short' };
  const len = buf.readUInt32LE(at);
  if (len < FIXED + 5 || len > MAX_PAYLOAD) return { kind: 'bad' };
  const p = at + RECORD_HEADER;
  if (p + len > end) return { kind: 'short' };
  if (crc32(buf.subarray(p, p + len)) !== buf.readUInt32LE(at + 4)) return { kind: 'bad' };
  return { kind: 'record', seq: buf.readDoubleLE(p), receivedAt: buf.readDoubleLE(p + 8), next: p + len };
}

/** Reads the record at `buf[at]` (up to `end`). The event keeps referring to `buf`. */
export function readRecord(buf: Buffer, at: number, end: number): ReadResult {
  const c = checkRecord(buf, at, end);
  if (c.kind !== 'record') return c;
  const { seq, receivedAt } = c;
  const p = at + RECORD_HEADER;
  const len = c.next - p;
  let o = p;
  const pri = buf[o + 16] as number;
  const format = FORMATS[buf[o + 17] as number] ?? 0;
  const rel = [buf.readUInt32LE(o + 18), buf.readUInt32LE(o + 22), buf.readUInt32LE(o + 26), buf.readUInt32LE(o + 30), buf.readUInt32LE(o + 34)];
  o += FIXED;
  const fields: string[] = [];
  for (let i = 0; i < 5; i++) {
    const n = buf[o++] as number;
    fields.push(buf.toString('latin1', o, o + n));
    o += n;
  }
  const start = o;
  const endOfFrame = p + len;
  if (start > endOfFrame) return { kind: 'bad' };
  const at_ = (r: number): number => Math.min(start + r, endOfFrame);
  const event: LogEvent = {
    buf, start, end: endOfFrame,
    sdStart: at_(rel[0] as number), sdEnd: at_(rel[1] as number), msgStart: at_(rel[2] as number), tsStart: at_(rel[3] as number), tsEnd: at_(rel[4] as number),
    receivedAt, sender: fields[0] as string, pri, format,
    hostname: fields[1] as string, appName: fields[2] as string, procId: fields[3] as string, msgId: fields[4] as string,
  };
  return { kind: 'record', seq, event, next: endOfFrame };
}
