// The body of a /jsons request, `{"events":["...","..."]}`, written as bytes straight from the
// events' buffers: no string per event, no JSON.stringify of the batch, no re-encoding of the
// result. The bytes are valid UTF-8 (inputs repair what is not), so a JSON string needs only '"',
// '\' and the control characters U+0000-U+001F escaped (RFC 8259 §7), each as JSON.stringify
// writes it; every other byte is copied as it is.

import type { LogEvent } from '../../core/event.ts';
import { copyPlan, type CopyPlan } from '../../syslog/copy-plan.ts';

const HEAD = Buffer.from('{"events":[', 'latin1');
const TAIL = Buffer.from(']}', 'latin1');
const HEX = '0123456789abcdef';

/** The escapes JSON.stringify writes short; other control characters become \u00xx. */
const SHORT: Record<number, string> = { 0x08: '\\b', 0x09: '\\t', 0x0a: '\\n', 0x0c: '\\f', 0x0d: '\\r', 0x22: '\\"', 0x5c: '\\\\' };
/** For each byte: what it becomes inside a JSON string when it must be escaped, else undefined. */
const ESCAPES: (Buffer | undefined)[] = Array.from({ length: 256 }, (_, b) => {
  const short = SHORT[b];
  if (short !== undefined) return Buffer.from(short, 'latin1');
  return b < 0x20 ? Buffer.from(`\\u00${HEX[b >> 4]}${HEX[b & 15]}`, 'latin1') : undefined;
});
/** Bytes each byte adds when escaped (0: copied as it is). */
const EXTRA = Uint8Array.from(ESCAPES, (e) => (e ? e.length - 1 : 0));
/**
 * Where the addon is loaded (syslog/copy-plan.ts), a body's messages are measured in one native
 * call, and those that need no escape copied in another, those that need some escaped in a third
 * (`escaped`); null until the first body.
 */
let plan: CopyPlan | undefined | null = null;
let escaped: CopyPlan | undefined;

/** Bytes that escaping adds to buf[start, end) (without the addon; exported for its test). */
export function extraBytes(buf: Uint8Array, start: number, end: number): number {
  let n = 0;
  for (let i = start; i < end; i++) {
    const b = buf[i] as number;
    // Most bytes need nothing: one comparison for them ('"' is 0x22, '\\' 0x5c, both above 0x1f).
    if (b < 0x23 || b === 0x5c) n += EXTRA[b] as number;
  }
  return n;
}

/**
 * `{"events":[...]}` for `events`: each one's MSG, or with `line` its whole frame, as a JSON
 * string. Equal, byte for byte, to Buffer.from(JSON.stringify({ events: texts })).
 */
export function jsonEventsBody(events: readonly LogEvent[], line: boolean): Buffer {
  const extra = new Int32Array(events.length);
  let size = HEAD.length + TAIL.length + Math.max(0, events.length - 1);
  if (plan === null) {
    plan = copyPlan();
    if (plan?.measuresJson) escaped = copyPlan();
  }
  if (plan?.measuresJson) {
    // Runs a body that failed half way left are not this one's.
    plan.clear();
    // Every message scanned in one native call, 8 bytes at a time (a byte loop here was a quarter
    // of the body's cost). Offsets are 32-bit: an event's buffer is far smaller.
    for (let i = 0; i < events.length; i++) {
      const e = events[i] as LogEvent;
      const from = line ? e.start : e.msgStart;
      plan.add(e.buf, from, e.end, 0);
      size += 2 + (e.end - from);
    }
    plan.jsonExtras(extra);
    for (let i = 0; i < extra.length; i++) size += extra[i] as number;
  } else {
    for (let i = 0; i < events.length; i++) {
      const e = events[i] as LogEvent;
      const from = line ? e.start : e.msgStart;
      const x = extraBytes(e.buf, from, e.end);
      extra[i] = x;
      size += 2 + (e.end - from) + x;
    }
  }
  // Its own memory, never a view into Node's pool of small Buffers: the sink frees it once the
  // intake accepted it (core/free-now.ts).
  const out = Buffer.allocUnsafeSlow(size);
  // Offsets go to the plan as 32-bit integers: a body of 2 GiB or more is copied message by message.
  const runs = size <= 0x7fffffff ? plan : undefined;
  const escapes = runs ? escaped : undefined;
  runs?.clear();
  escapes?.clear();
  let off = HEAD.copy(out, 0);
  for (let i = 0; i < events.length; i++) {
    const e = events[i] as LogEvent;
    const from = line ? e.start : e.msgStart;
    if (i > 0) out[off++] = 0x2c;
    out[off++] = 0x22;
    if (extra[i] !== 0) {
      if (escapes) {
        escapes.add(e.buf, from, e.end, off);
        off += e.end - from + (extra[i] as number);
      } else {
        off = writeEscaped(e.buf, from, e.end, out, off);
      }
    } else if (runs) {
      runs.add(e.buf, from, e.end, off);
      off += e.end - from;
    } else {
      off += e.buf.copy(out, off, from, e.end);
    }
    out[off++] = 0x22;
  }
  TAIL.copy(out, off);
  runs?.run(out);
  escapes?.run(out, true);
  return out;
}

/** buf[start, end) escaped into `out` at `off`: runs that need nothing are copied whole. */
function writeEscaped(buf: Buffer, start: number, end: number, out: Buffer, off: number): number {
  let run = start;
  for (let i = start; i < end; i++) {
    const esc = ESCAPES[buf[i] as number];
    if (esc === undefined) continue;
    off += buf.copy(out, off, run, i);
    off += esc.copy(out, off);
    run = i + 1;
  }
  return off + buf.copy(out, off, run, end);
}
