// The batch formatter's copies done in one native call (src/syslog/copy-plan.ts, native/copy-runs.c):
// byte for byte the frames the formatter writes run by run, for every kind of run (a shared header,
// the source's SD, MSG, one cut to the intake's limit, RELP framing, reads of many buffers); and
// the native call refuses a plan that would read or write out of bounds, copying nothing. The
// JSON body's escape measure (jsonExtras) gives what JSON.stringify adds, wherever a run starts
// and ends in the 8-byte words it reads.
import { describe, expect, it } from 'vitest';
import { extraBytes } from '../../src/outputs/http/json-body.ts';
import { copyPlan } from '../../src/syslog/copy-plan.ts';
import { INTAKE_MAX_EVENT_BYTES, Rfc5424Formatter } from '../../src/syslog/format.ts';
import { nativeAddon } from '../../src/platform/native-addon.ts';
import { parseSyslog, type HeaderDefaults } from '../../src/syslog/parse.ts';
import type { LogEvent } from '../../src/core/event.ts';
import { prng } from '../helpers/prng.ts';

const D: HeaderDefaults = { pri: 13, hostname: '', appName: '', procId: '' };

/** `n` events from `reads` buffers (each event a view of its read), over a few milliseconds of reception. */
function events(n: number, reads: number, seed: number): LogEvent[] {
  const rnd = prng(seed);
  const lines = Array.from({ length: n }, (_, i) => {
    // One in 50 over the intake's limit (cut), the others of four kinds at random.
    const kind = i % 50 === 25 ? 4 : Math.floor(rnd() * 4);
    const msg = 'x'.repeat(Math.floor(rnd() * 300)) + ` é€ ${i}`;
    if (kind === 0) return `<165>1 2003-10-11T22:14:15.003Z host app 42 ID47 [a@1 x="${i}"][b@2 y="]"] ${msg}`;
    if (kind === 1) return `<34>Oct 11 22:14:15 host${i % 3} su[${i % 2}]: ${msg}`;
    if (kind === 2) return `<13>1 - h a - - -`;
    if (kind === 3) return msg;
    return `<14>1 2026-11-22T10:00:00Z big app - - [s@1 k="v"] ${'y'.repeat(INTAKE_MAX_EVENT_BYTES)}`;
  });
  const out: LogEvent[] = [];
  const per = Math.ceil(n / reads);
  for (let r = 0; r < reads; r++) {
    const part = lines.slice(r * per, (r + 1) * per);
    const buf = Buffer.from(part.join('\n'));
    let start = 0;
    for (const l of part) {
      const end = start + Buffer.byteLength(l);
      out.push(parseSyslog(buf, start, end, Date.UTC(2026, 10, 22, 10, 0, 0, Math.floor(out.length / 7)), '192.0.2.7', D));
      start = end + 1;
    }
  }
  return out;
}

describe('copy plan (the formatter\'s copies in one native call)', () => {
  it('is in use on this machine (the addon is built by npm ci)', () => {
    expect(copyPlan()).toBeDefined();
  });

  it.each([
    ['one read', 200, 1, 1],
    ['a read per event or two (more sources than the call names without allocating)', 300, 150, 2],
    ['long batches', 3_000, 40, 3],
  ])('the same bytes as copied run by run: %s', (_what, n, reads, seed) => {
    const batch = events(n, reads, seed);
    for (const mode of ['received', 'source'] as const) {
      const native = new Rfc5424Formatter('AbC"d]e\\f', mode);
      const plain = new Rfc5424Formatter('AbC"d]e\\f', mode, { nativeCopy: false });
      expect(native.frames(batch).equals(plain.frames(batch))).toBe(true);
      const cut = native.takeCut();
      expect(cut).toBe(plain.takeCut());
      expect(cut).toBe(Math.floor((n + 24) / 50));
      const txnr = (i: number): number => 7 + i;
      expect(native.relpFrames(batch, 3, batch.length - 1, txnr).equals(plain.relpFrames(batch, 3, batch.length - 1, txnr))).toBe(true);
    }
  });

  it('the native call checks every run before copying anything', () => {
    const copyRuns = nativeAddon().exports?.copyRuns as (out: Uint8Array, sources: Uint8Array[], plan: Int32Array, n: number) => void;
    const out = Buffer.alloc(8);
    const src = Buffer.from('abcdefgh');
    copyRuns(out, [src], Int32Array.from([0, 0, 4, 4, 0, 4, 8, 0]), 2);
    expect(out.toString()).toBe('efghabcd');
    const fresh = (): Buffer => Buffer.alloc(8, 0x2d);
    for (const plan of [
      [0, 0, 9, 0], // past the source's end
      [0, 0, 4, 5], // past out's end
      [1, 0, 1, 0], // no such source
      [0, 3, 2, 0], // end before start
      [0, -1, 2, 0], // negative
    ]) {
      const o = fresh();
      // A valid run first: nothing is copied when a later one is refused.
      expect(() => copyRuns(o, [src], Int32Array.from([0, 0, 2, 0, ...plan]), 2)).toThrow(RangeError);
      expect(o.equals(fresh())).toBe(true);
    }
    expect(() => copyRuns(out, [src], Int32Array.from([0, 0, 1, 0]), 2)).toThrow(TypeError); // n past the plan
    expect(() => copyRuns(out, ['abc' as unknown as Uint8Array], Int32Array.from([0, 0, 1, 0]), 1)).toThrow(TypeError);
    expect(() => copyRuns(out, [src], new Uint32Array(4) as unknown as Int32Array, 1)).toThrow(TypeError);
    // A source whose getter detaches out: the sources are read before any pointer is taken, so
    // the call sees out as it is then (detached: no bytes) and refuses the run, not a freed buffer.
    const big = new Uint8Array(new ArrayBuffer(1 << 20));
    const sources: Uint8Array[] = [];
    Object.defineProperty(sources, 0, { enumerable: true, get: () => (big.buffer.transfer(8), src) });
    expect(() => copyRuns(big, sources, Int32Array.from([0, 0, 8, 0]), 1)).toThrow(RangeError);
    // An empty run of an empty source: nothing to copy, no error.
    copyRuns(out, [new Uint8Array(0)], Int32Array.from([0, 0, 0, 8]), 1);
  });
});

describe('jsonExtras: the bytes escaping adds to each message of a JSON body, in one native call', () => {
  type JsonExtras = (sources: Uint8Array[], plan: Int32Array, n: number, extras: Int32Array) => void;
  const jsonExtras = (): JsonExtras => nativeAddon().exports?.jsonExtras as JsonExtras;

  it('is what JSON.stringify adds, and what the byte loop without the addon counts, for runs at every alignment', () => {
    const rnd = prng(11);
    const pieces = ['a', 'b', ' ', '"', '\\', '\n', '\t', '\r', '\b', '\f', '\u000b', '\u0000', '\u0001', '\u001f', ' ', '#', '[', 'é', '€', '😀', '\u007f', '\u2028'];
    const texts = Array.from({ length: 400 }, (_, k) => {
      let t = '';
      const n = k < 40 ? k : Math.floor(rnd() * 60);
      // Some long runs of plain text, so that whole 8-byte words are skipped.
      for (let j = 0; j < n; j++) t += rnd() < 0.6 ? 'abcdefgh' : (pieces[Math.floor(rnd() * pieces.length)] as string);
      return t;
    });
    const plan = copyPlan();
    expect(plan?.measuresJson).toBe(true);
    // Each text at offsets 0 to 15 of its read, after filler bytes that need escapes.
    for (let shift = 0; shift < 16; shift++) {
      const reads = texts.map((t) => Buffer.concat([Buffer.alloc(shift, 0x22), Buffer.from(t), Buffer.from('\u0001"')]));
      for (const r of reads) plan?.add(r, shift, r.length - 2, 0);
      const extras = new Int32Array(texts.length);
      plan?.jsonExtras(extras);
      texts.forEach((t, i) => {
        const want = Buffer.byteLength(JSON.stringify(t)) - 2 - Buffer.byteLength(t);
        const r = reads[i] as Buffer;
        expect(extras[i], `text ${i} at ${shift}`).toBe(want);
        expect(extraBytes(r, shift, r.length - 2)).toBe(want);
      });
    }
  });

  it('checks every run against its source before measuring, and its arguments', () => {
    const src = Buffer.from('a"b\\c');
    const extras = new Int32Array(2);
    jsonExtras()([src], Int32Array.from([0, 0, 5, 0, 0, 1, 3, 0]), 2, extras);
    expect([...extras]).toEqual([2, 1]);
    for (const run of [[0, 0, 6, 0], [1, 0, 1, 0], [0, 3, 2, 0], [0, -1, 2, 0]]) {
      expect(() => jsonExtras()([src], Int32Array.from(run), 1, new Int32Array(1))).toThrow(RangeError);
    }
    expect(() => jsonExtras()([src], Int32Array.from([0, 0, 1, 0]), 2, new Int32Array(2))).toThrow(TypeError); // n past the plan
    expect(() => jsonExtras()([src], Int32Array.from([0, 0, 1, 0]), 1, new Int32Array(0))).toThrow(TypeError); // n past extras
    expect(() => jsonExtras()(['abc' as unknown as Uint8Array], Int32Array.from([0, 0, 1, 0]), 1, new Int32Array(1))).toThrow(TypeError);
  });

  it('copyRuns(..., true) writes each run escaped, and refuses one whose escaped form would pass out\'s end', () => {
    type CopyRuns = (out: Uint8Array, sources: Uint8Array[], plan: Int32Array, n: number, json?: boolean) => void;
    const copyRuns = nativeAddon().exports?.copyRuns as CopyRuns;
    const text = 'a"b\\c\n\u0001\u001fé';
    const src = Buffer.from(text);
    const want = Buffer.from(JSON.stringify(text).slice(1, -1));
    const out = Buffer.alloc(want.length + 2, 0x2d);
    copyRuns(out, [src], Int32Array.from([0, 0, src.length, 1]), 1, true);
    expect(out.subarray(1, -1).equals(want)).toBe(true);
    expect([out[0], out[out.length - 1]]).toEqual([0x2d, 0x2d]);
    // Room for the bytes as they are, not for their escapes: refused, nothing written.
    const short = Buffer.alloc(want.length - 1, 0x2d);
    expect(() => copyRuns(short, [src], Int32Array.from([0, 0, src.length, 0]), 1, true)).toThrow(RangeError);
    expect(short.every((b) => b === 0x2d)).toBe(true);
  });

  it('copyRuns(..., true) matches JSON.stringify for every byte value at every position of runs of 0 to 24 bytes at every alignment, writing nothing around them', () => {
    type CopyRuns = (out: Uint8Array, sources: Uint8Array[], plan: Int32Array, n: number, json?: boolean) => void;
    const copyRuns = nativeAddon().exports?.copyRuns as CopyRuns;
    /** JSON.stringify's escape of each byte; bytes from 0x80 (parts of UTF-8 sequences) as they are. */
    const escapeOf = (b: number): number[] => (b >= 0x80 ? [b] : [...Buffer.from(JSON.stringify(String.fromCharCode(b)).slice(1, -1), 'latin1')]);
    for (const background of [0x61, 0x20, 0x80]) {
      for (let len = 0; len <= 24; len++) {
        for (let shift = 0; shift < 16; shift++) {
          // One run per byte value, each with that byte at position (value mod len) of the run.
          const src = Buffer.alloc(shift + 256 * len, background);
          const plan = new Int32Array(4 * 256);
          const want: number[] = [];
          let dst = 1;
          for (let v = 0; v < 256; v++) {
            const a = shift + v * len;
            if (len > 0) src[a + (v % len)] = v;
            const bytes: number[] = [];
            for (let k = a; k < a + len; k++) bytes.push(...escapeOf(src[k] as number));
            plan.set([0, a, a + len, dst], 4 * v);
            want.push(...bytes, 0x2d);
            dst += bytes.length + 1;
          }
          const out = Buffer.alloc(dst, 0x2d);
          copyRuns(out, [src], plan, 256, true);
          expect(out[0], `before, len ${len} shift ${shift}`).toBe(0x2d);
          expect(out.subarray(1).equals(Buffer.from(want)), `len ${len} shift ${shift} background ${background}`).toBe(true);
          const extras = new Int32Array(256);
          (nativeAddon().exports?.jsonExtras as (s: Uint8Array[], p: Int32Array, n: number, e: Int32Array) => void)([src], plan, 256, extras);
          for (let v = 0; v < 256; v++) {
            const r = plan.subarray(4 * v, 4 * v + 4);
            expect(extras[v]).toBe(extraBytes(src, r[1] as number, r[2] as number));
          }
        }
      }
    }
  });

  it('copyRuns(..., true) refuses a plan whose later run does not fit escaped, and then writes nothing; and memory shared between out and a source or the plan', () => {
    type CopyRuns = (out: Uint8Array, sources: Uint8Array[], plan: Int32Array, n: number, json?: boolean) => void;
    const copyRuns = nativeAddon().exports?.copyRuns as CopyRuns;
    const src = Buffer.from('ab""');
    const out = Buffer.alloc(6, 0x2d);
    // The first run fits, the second (4 bytes, 6 escaped) at 2 does not.
    expect(() => copyRuns(out, [src], Int32Array.from([0, 0, 2, 0, 0, 0, 4, 2]), 2, true)).toThrow(RangeError);
    expect(out.every((b) => b === 0x2d)).toBe(true);
    expect(() => copyRuns(out, [src], Int32Array.from([0, 0, 2, 0]), 1, 1 as unknown as boolean)).toThrow(TypeError);
    // A source inside out: an escape written could lengthen a run checked before.
    const big = Buffer.alloc(16, 0x22);
    expect(() => copyRuns(big.subarray(0, 16), [big.subarray(8, 12)], Int32Array.from([0, 0, 4, 0]), 1, true)).toThrow(RangeError);
    // The plan inside out: a copy could change a run checked before.
    const shared = new ArrayBuffer(64);
    expect(() => copyRuns(new Uint8Array(shared), [src], new Int32Array(shared, 0, 4).fill(0), 1)).toThrow(RangeError);
    // extras over the plan: a measure written could change a run still to be read.
    const plan = Int32Array.from([0, 0, 4, 0, 0, 0, 1, 0]);
    expect(() => (nativeAddon().exports?.jsonExtras as (s: Uint8Array[], p: Int32Array, n: number, e: Int32Array) => void)([src], plan, 2, plan.subarray(2))).toThrow(RangeError);
  });
});
