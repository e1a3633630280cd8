// The HTTP input's guards, alone: the JSON depth scan against JSON.parse's own idea of nesting
// (strings and escapes included), its parse-memory estimate against what V8 takes, and the memory
// budget's accounting (later, never, saturation and its hysteresis).
import { describe, expect, it } from 'vitest';
import { BodyBudget } from '../../src/inputs/http/budget.ts';
import { scanJson } from '../../src/inputs/http/json-scan.ts';

function depthOf(v: unknown): number {
  // Iterative, like the scan: the test must not be what overflows.
  let max = 0;
  const stack: [unknown, number][] = [[v, 0]];
  while (stack.length > 0) {
    const [x, d] = stack.pop()!;
    if (x === null || typeof x !== 'object') continue;
    max = Math.max(max, d + 1);
    for (const y of Object.values(x)) stack.push([y, d + 1]);
  }
  return max;
}

/** The deepest max_depth that refuses `text` (0 when none does). */
function scannedDepth(text: string): number {
  const buf = Buffer.from(text);
  let d = 1;
  while (scanJson(buf, d).tooDeep) d++;
  return d === 1 && !scanJson(buf, 0).tooDeep ? 0 : d;
}

describe('scanJson', () => {
  it.each([
    ['"just a string"', 0],
    ['[]', 1],
    ['[[],[[]],{}]', 3],
    ['{"a":[1,{"b":{"c":2}}]}', 4],
    ['["[[[[", "{{{"]', 1],
    ['["\\"[[[", "\\\\", [["\\\\\\"]"]]]', 3],
    [`["${'x'.repeat(100)}\\"[[${'y'.repeat(100)}", [[1]]]`, 3],
    ['["é[", ["日本"]]', 2],
  ])('%s nests %i deep', (text, depth) => {
    expect(depthOf(JSON.parse(text))).toBe(depth);
    expect(scannedDepth(text)).toBe(depth);
  });

  it('agrees with JSON.parse on thousands of random documents with brackets, quotes and backslashes in strings', () => {
    let seed = 12345; // mulberry32: the same documents every run
    const rnd = (n: number): number => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) % n;
    };
    const texts = ['[', ']', '{', '}', '"', '\\', '\\"', '"[', 'é', '日本', 'x'.repeat(40), `${'\\'.repeat(33)}"]`];
    const value = (depth: number): unknown => {
      const k = rnd(depth > 0 ? 6 : 3);
      if (k === 0) return rnd(1000);
      if (k === 1 || k === 2) return Array.from({ length: 1 + rnd(4) }, () => texts[rnd(texts.length)]).join('');
      if (k === 3 || k === 4) return Array.from({ length: rnd(4) }, () => value(depth - 1));
      return Object.fromEntries(Array.from({ length: rnd(4) }, () => [texts[rnd(texts.length)]!, value(depth - 1)]));
    };
    const depths = new Set<number>();
    for (let t = 0; t < 3_000; t++) {
      const v = value(rnd(10));
      const text = JSON.stringify(v, null, rnd(2) === 0 ? undefined : 1);
      depths.add(depthOf(v));
      expect(scannedDepth(text), text).toBe(depthOf(v));
    }
    expect(depths.size).toBeGreaterThan(6);
  });

  it('stops at the limit without recursing: 1,000,000 levels', () => {
    expect(scanJson(Buffer.from('['.repeat(1_000_000)), 128).tooDeep).toBe(true);
  });

  it('estimates at least most of what JSON.parse takes, for the shapes that cost the most per byte', () => {
    // Measured with V8: `{}` in a list 32 bytes each, object members ~20, strings their text.
    const n = 10_000;
    const shapes = {
      empty: `[${Array(n).fill('{}').join(',')}]`,
      events: `[${Array(n).fill('{"host":"web-01","msg":"GET /index.html 200","ts":1700000000,"tags":["a","b"]}').join(',')}]`,
      strings: JSON.stringify(Array.from({ length: n }, (_, i) => `event ${i} ${'s'.repeat(200)}`)),
    };
    const perByte = Object.fromEntries(Object.entries(shapes).map(([k, text]) => [k, scanJson(Buffer.from(text), 128).parseBytes / text.length]));
    expect(perByte.empty).toBeGreaterThan(15); // 3 bytes per `{},`, ~64 bytes of objects
    expect(perByte.events).toBeGreaterThan(3);
    expect(perByte.strings).toBeGreaterThanOrEqual(1.9); // the text twice: the input and the values
    expect(perByte.strings).toBeLessThan(2.5);
    // Non-ASCII text is parsed from a two-byte string.
    expect(scanJson(Buffer.from('["é"]'), 128).parseBytes).toBeGreaterThan(scanJson(Buffer.from('["e"]'), 128).parseBytes);
  });
});

describe('BodyBudget', () => {
  it('takes what fits, refuses the rest for now (later) or for good (never), and gives everything back at the end', () => {
    const b = new BodyBudget(1000);
    const one = b.lease();
    const two = b.lease();
    expect(one.take(600)).toBe('ok');
    expect(two.fits(500)).toBe('later');
    expect(b.saturated).toBe(true);
    expect(two.take(400)).toBe('ok');
    expect(two.take(1)).toBe('later');
    expect(two.take(601)).toBe('never'); // 400 + 601 > 1000: even alone it would not fit
    expect(b.used).toBe(1000);
    one.give(100);
    expect(b.used).toBe(900);
    expect(b.saturated).toBe(true); // until no more than half is held
    one.end();
    one.end(); // idempotent
    expect(b.used).toBe(400);
    expect(b.saturated).toBe(false);
    two.end();
    expect(b.used).toBe(0);
    expect(b.saturated).toBe(false);
  });
});
