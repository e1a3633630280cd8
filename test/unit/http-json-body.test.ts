// The /jsons body: byte for byte JSON.stringify's, with the native addon (messages measured,
// copied and escaped in one call each) and without it (byte loops).
import { describe, expect, it, vi } from 'vitest';
import { jsonEventsBody } from '../../src/outputs/http/json-body.ts';
import { fieldCache, parseSyslog, type HeaderDefaults } from '../../src/syslog/parse.ts';
import type { LogEvent } from '../../src/core/event.ts';

const D: HeaderDefaults = { pri: 13, hostname: '', appName: '', procId: '' };

/** The frames, back to back in one buffer (as in a read), parsed. */
function events(frames: Buffer[]): LogEvent[] {
  const buf = Buffer.concat([Buffer.from('xx'), ...frames, Buffer.from('yy')]);
  const cache = fieldCache();
  let at = 2;
  return frames.map((f) => {
    const e = parseSyslog(buf, at, at + f.length, 1, '10.1.2.3', D, cache);
    at += f.length;
    return e;
  });
}

/** What the body must be: JSON.stringify of the texts, as UTF-8. */
const expected = (evs: LogEvent[], line: boolean) =>
  Buffer.from(JSON.stringify({ events: evs.map((e) => e.buf.toString('utf8', line ? e.start : e.msgStart, e.end)) }));

describe('the /jsons body written from the events\' bytes', () => {
  it('is byte for byte what JSON.stringify writes: quotes, backslashes, every control character, UTF-8, empty messages', () => {
    const frames = [
      '<13>1 - h a - - plain text',
      '<13>1 - h a - - say "hi" \\ back\\slash',
      '<14>Nov 22 10:00:00 host app[1]: tab\there, cr\rlf\n, bell\u0007, nul\u0000, esc\u001b, del\u007f',
      '<13>1 - h a - - été ✓ 😀 \u2028 \u2029',
      '<13>1 - h a - -',
      'no header at all "quoted"',
      `<13>1 - h a - - [x@1 v="a\\"b"] ${'x'.repeat(3000)}"`,
    ].map((f) => Buffer.from(f));
    const all = Buffer.from(Array.from({ length: 256 }, (_, b) => b).filter((b) => b < 0x80));
    frames.push(Buffer.concat([Buffer.from('<13>1 - h a - - '), all]));
    const evs = events(frames);
    for (const line of [false, true]) expect(jsonEventsBody(evs, line).equals(expected(evs, line))).toBe(true);
    expect(jsonEventsBody([], false).toString()).toBe('{"events":[]}');
  });

  it('holds for random messages of ASCII, control characters and multi-byte characters', () => {
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const pieces = ['a', ' ', '"', '\\', '\n', '\t', '\u0001', '\u001f', 'é', '€', '😀', '}', ']', '/'];
    const frames: Buffer[] = [];
    for (let k = 0; k < 500; k++) {
      let msg = '';
      const n = next(40);
      for (let j = 0; j < n; j++) msg += pieces[next(pieces.length)];
      frames.push(Buffer.from(`<14>Nov 22 10:00:00 host app[1]: ${msg}`));
    }
    const evs = events(frames);
    for (const line of [false, true]) {
      const body = jsonEventsBody(evs, line);
      expect(body.equals(expected(evs, line))).toBe(true);
      expect(JSON.parse(body.toString()).events).toHaveLength(500);
    }
  });
});

describe('the /jsons body without the native addon', () => {
  it('is the same, byte for byte: escapes found and written by the byte loops', async () => {
    vi.resetModules();
    vi.doMock('../../src/syslog/copy-plan.ts', () => ({ copyPlan: () => undefined }));
    try {
      const { jsonEventsBody: plain } = await import('../../src/outputs/http/json-body.ts');
      const all = Buffer.from(Array.from({ length: 0x80 }, (_, b) => b));
      const frames = ['<13>1 - h a - - plain text', '<13>1 - h a - - say "hi" \\ back\\slash', '<13>1 - h a - - été ✓ 😀'].map((f) => Buffer.from(f));
      frames.push(Buffer.concat([Buffer.from('<13>1 - h a - - '), all]));
      const evs = events(frames);
      for (const line of [false, true]) {
        expect(plain(evs, line).equals(expected(evs, line))).toBe(true);
        expect(plain(evs, line).equals(jsonEventsBody(evs, line))).toBe(true);
      }
    } finally {
      vi.doUnmock('../../src/syslog/copy-plan.ts');
      vi.resetModules();
    }
  });
});
