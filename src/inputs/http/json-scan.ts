// A look at a JSON text before it is parsed, in one pass over its bytes and without recursion: how
// deep it nests (JSON.parse copes with 50,000 levels, but JSON.stringify, which writes an event
// back as text, overflows the stack a few thousand levels down) and about how much memory parsing
// it takes (10 MiB of `{},` parse into 210 MiB of objects). Bytes >= 0x80 never look like JSON
// punctuation, so UTF-8 needs no decoding.

import { isAscii } from 'node:buffer';

export interface JsonScan {
  /** The nesting went past the limit; the scan stopped there. */
  readonly tooDeep: boolean;
  /** Bytes JSON.parse takes for it, estimated: the string it parses, the text of its strings, and per value. */
  readonly parseBytes: number;
}

/**
 * Per `{`, `[`, `,` and `:` (each opens or separates a value), besides the text of strings, as
 * measured with V8 (Node 24): 10 bytes for numbers in a list, 19 to 21 for objects of a few
 * members, 32 for `{}` in a list, 40 in an object of a million keys (under-estimated there by a
 * quarter to a third: bounded still).
 */
const BYTES_PER_TOKEN = 24;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_LIST = 0x5b;
const CLOSE_LIST = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c;
const COLON = 0x3a;

export function scanJson(buf: Buffer, maxDepth: number): JsonScan {
  let depth = 0;
  let tokens = 0;
  let text = 0;
  const n = buf.length;
  let i = 0;
  while (i < n) {
    const c = buf[i++] as number;
    if (c === QUOTE) {
      // Byte by byte while short; past 32 bytes by indexOf (native: far faster over long text,
      // slower per call). Unterminated: JSON.parse refuses it, and nothing after is structure.
      const start = i;
      for (;;) {
        if (i >= n) break;
        const d = buf[i++];
        if (d === QUOTE) break;
        if (d === BACKSLASH) i++;
        else if (i > start + 32) {
          const q = closingQuote(buf, i);
          i = q < 0 ? n : q + 1;
          break;
        }
      }
      text += i - start - 1;
    } else if (c === OPEN_LIST || c === OPEN_OBJECT) {
      tokens++;
      if (++depth > maxDepth) return { tooDeep: true, parseBytes: 0 };
    } else if (c === CLOSE_LIST || c === CLOSE_OBJECT) {
      depth--;
    } else if (c === COMMA || c === COLON) {
      tokens++;
    }
  }
  return { tooDeep: false, parseBytes: stringBytes(buf) + text + tokens * BYTES_PER_TOKEN };
}

/** The quote closing a string, searched from `from`, a position where no escape is open. */
function closingQuote(buf: Buffer, from: number): number {
  for (let q = buf.indexOf(QUOTE, from); q >= 0; q = buf.indexOf(QUOTE, q + 1)) {
    let k = q - 1;
    while (k >= from && buf[k] === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q;
  }
  return -1;
}

/** The string JSON.parse reads: one byte per character if all ASCII, else two per UTF-16 unit (at most one per byte of UTF-8). */
function stringBytes(buf: Buffer): number {
  return isAscii(buf) ? buf.length : 2 * buf.length;
}
