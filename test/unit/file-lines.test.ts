// The file input's line splitter on its own: bytes in, lines out, time given by the test.
import { describe, expect, it } from 'vitest';
import { LineSplitter, type LineOptions, type LineSink } from '../../src/inputs/file/lines.ts';

const START = /^\d{4}-/;

/** A splitter whose sink records, in order, each line's text and the split/dropped signals. */
function splitter(options: Partial<LineOptions> = {}) {
  const out: string[] = [];
  const bytes: Buffer[] = [];
  const views: Buffer[] = [];
  const begun: Buffer[] = [];
  const sink: LineSink = {
    begin: (chunk) => begun.push(chunk),
    line(buf, s, e) {
      out.push(buf.toString('utf8', s, e));
      bytes.push(Buffer.from(buf.subarray(s, e)));
      views.push(buf);
    },
    split: () => out.push('<split>'),
    dropped: () => out.push('<dropped>'),
  };
  const lines = new LineSplitter({ maxLineBytes: 1_000, oversize: 'split', latin1: false, partialLineTimeoutMs: 0, ...options }, sink);
  const push = (data: string | Buffer | readonly number[], now = 0): void => lines.push(typeof data === 'string' ? Buffer.from(data) : Buffer.from(data), now);
  return { lines, push, out, bytes, views, begun };
}

const multiline = (maxLines = 500, timeoutMs = 1_000) => ({ multiline: { startPattern: START, maxLines, timeoutMs } });

describe('LineSplitter: line ends', () => {
  it('ends lines at LF and at CRLF, without the line end', () => {
    const s = splitter();
    s.push('a\nb\r\nc\n');
    expect(s.out).toEqual(['a', 'b', 'c']);
    expect(s.lines.held).toBe(0);
  });

  it('keeps a CR that is not before a LF as part of the line', () => {
    const s = splitter();
    s.push('a\rb\n\rc\n');
    expect(s.out).toEqual(['a\rb', '\rc']);
  });

  it('holds a CR back until its LF comes in the next chunk, then drops it', () => {
    const s = splitter();
    s.push('abc\r');
    expect(s.out).toEqual([]);
    expect(s.lines.held).toBe(4);
    s.push('\ndef\n');
    expect(s.out).toEqual(['abc', 'def']);
    expect(s.lines.held).toBe(0);
  });

  it('forwards a line that spans many chunks once, whole', () => {
    const s = splitter();
    for (const part of ['hel', 'lo', ' ', 'wor']) s.push(part);
    expect(s.out).toEqual([]);
    expect(s.lines.held).toBe(9);
    s.push('ld\nnext');
    expect(s.out).toEqual(['hello world']);
    expect(s.lines.held).toBe(4);
  });

  it('skips empty lines (CRLF ones too)', () => {
    const s = splitter();
    s.push('\na\n\n\r\nb\n\n');
    expect(s.out).toEqual(['a', 'b']);
  });

  it('gives lines as views of the chunk it announced, not copies', () => {
    const s = splitter();
    s.push('one\ntwo\n');
    expect(s.begun).toHaveLength(1);
    expect(s.views).toEqual([s.begun[0], s.begun[0]]);
    expect(s.views[0]).toBe(s.begun[0]);
  });

  it('reads into place: the waiting partial line is copied in front of the new bytes', () => {
    const s = splitter();
    s.push('head\npart');
    const { buf, at } = s.lines.buffer(16);
    expect(at).toBe(4);
    expect(buf.toString('utf8', 0, at)).toBe('part');
    const n = buf.write('ial\nlast\n', at);
    s.lines.fill(n, 0);
    expect(s.out).toEqual(['head', 'partial', 'last']);
    expect(s.begun[1]?.toString()).toBe('partial\nlast\n');
  });
});

describe('LineSplitter: the partial last line', () => {
  it('forwards a partial line once it waited partial_line_timeout_ms since the last read, without a waiting CR', () => {
    const s = splitter({ partialLineTimeoutMs: 500 });
    s.push('a\nbc', 1_000);
    s.push('d\r', 1_200);
    expect(s.out).toEqual(['a']);
    expect(s.lines.due(1_699)).toBe(false);
    expect(s.out).toEqual(['a']);
    expect(s.lines.due(1_700)).toBe(true);
    expect(s.out).toEqual(['a', 'bcd']);
    expect(s.lines.held).toBe(0);
    // Its rest, when it comes, is a line of its own.
    s.push('e\n', 1_800);
    expect(s.out).toEqual(['a', 'bcd', 'e']);
  });

  it('waits for the newline forever with partial_line_timeout_ms 0, and forwards it at the end', () => {
    const s = splitter({ partialLineTimeoutMs: 0 });
    s.push('x\nwaiting', 0);
    expect(s.lines.due(1e12)).toBe(false);
    expect(s.out).toEqual(['x']);
    s.lines.end(1e12);
    expect(s.out).toEqual(['x', 'waiting']);
    expect(s.lines.held).toBe(0);
  });

  it('forgets what waits when the file starts again (truncated)', () => {
    const s = splitter({ partialLineTimeoutMs: 1 });
    s.push('old partial');
    expect(s.lines.held).toBe(11);
    s.lines.reset();
    expect(s.lines.held).toBe(0);
    expect(s.lines.due(1_000)).toBe(false);
    s.push('new\n');
    expect(s.out).toEqual(['new']);
  });
});

describe('LineSplitter: lines over max_line_bytes', () => {
  it('splits a long line at the limit, counted once', () => {
    const s = splitter({ maxLineBytes: 4 });
    s.push('0123456789\nok\n');
    expect(s.out).toEqual(['<split>', '0123', '4567', '89', 'ok']);
  });

  it('splits a line that spans many chunks as its bytes come, counting it once', () => {
    const s = splitter({ maxLineBytes: 8 });
    s.push('0123456789');
    expect(s.out).toEqual(['<split>', '01234567']);
    expect(s.lines.held).toBe(2);
    s.push('abcdefghij');
    expect(s.out).toEqual(['<split>', '01234567', '89abcdef']);
    s.push('XY\nnext\n');
    expect(s.out).toEqual(['<split>', '01234567', '89abcdef', 'ghijXY', 'next']);
    s.push('0123456789\n');
    expect(s.out.slice(5)).toEqual(['<split>', '01234567', '89']);
  });

  it('cuts at UTF-8 character boundaries', () => {
    const s = splitter({ maxLineBytes: 5 });
    s.push('abcdé\na😀😀\n');
    expect(s.out).toEqual(['<split>', 'abcd', 'é', '<split>', 'a😀', '😀']);
  });

  it('cuts at the limit when no character boundary is within it', () => {
    const s = splitter({ maxLineBytes: 3 });
    s.push([0xf0, 0x9f, 0x98, 0x80, 0x78, 0x0a]);
    expect(s.out[0]).toBe('<split>');
    expect(s.bytes).toEqual([Buffer.from([0xf0, 0x9f, 0x98]), Buffer.from([0x80, 0x78])]);
  });

  it('drops a long line with oversize: drop, and only that line', () => {
    const s = splitter({ maxLineBytes: 5, oversize: 'drop' });
    s.push('ok\n0123456789\nnext\n');
    expect(s.out).toEqual(['ok', '<dropped>', 'next']);
  });

  it('drops a long line spanning chunks once, up to its newline', () => {
    const s = splitter({ maxLineBytes: 5, oversize: 'drop' });
    s.push('keep\n0123456');
    expect(s.out).toEqual(['keep', '<dropped>']);
    expect(s.lines.held).toBe(0);
    s.push('789');
    s.push('more\nafter\n');
    expect(s.out).toEqual(['keep', '<dropped>', 'after']);
  });
});

describe('LineSplitter: encodings', () => {
  it('converts latin1 lines to UTF-8, and leaves ASCII lines as views of the chunk', () => {
    const s = splitter({ latin1: true });
    s.push(Buffer.from('caf\xe9 cr\xe8me\nplain\n', 'latin1'));
    expect(s.out).toEqual(['café crème', 'plain']);
    expect(s.bytes[0]).toEqual(Buffer.from('café crème', 'utf8'));
    expect(s.views[1]).toBe(s.begun[0]);
  });

  it('latin1: max_line_bytes holds for the line as forwarded (UTF-8, up to twice the bytes): longer ones are split so that each piece fits', () => {
    const s = splitter({ latin1: true });
    // 600 bytes: fits raw, 1,200 as UTF-8; 2,500 bytes read in pieces (the partial-line path).
    s.push(Buffer.concat([Buffer.alloc(600, 0xe9), Buffer.from('\n')]));
    s.push(Buffer.alloc(1_500, 0xe8));
    s.push(Buffer.concat([Buffer.alloc(1_000, 0xe8), Buffer.from('\nplain caf\xe9\n', 'latin1')]));
    const pieces = s.out.filter((l) => l !== '<split>');
    for (const b of s.bytes) expect(b.length).toBeLessThanOrEqual(1_000);
    expect(s.out.filter((l) => l === '<split>')).toHaveLength(2);
    expect(pieces.slice(0, 2).join('')).toBe('é'.repeat(600));
    expect(pieces.slice(2, -1).join('')).toBe('è'.repeat(2_500));
    expect(pieces.at(-1)).toBe('plain café');
    // Mostly ASCII, over half the limit: converted size counted, not guessed.
    const t = splitter({ latin1: true });
    t.push(Buffer.concat([Buffer.alloc(900, 0x61), Buffer.alloc(50, 0xe9), Buffer.from('\n')]));
    expect(t.out).toEqual([`${'a'.repeat(900)}${'é'.repeat(50)}`]);
  });

  it('hands invalid UTF-8 on byte for byte (the event builder repairs and counts it)', () => {
    const s = splitter();
    const bad = [0x62, 0x61, 0x64, 0x20, 0xff, 0xfe, 0x20, 0x62, 0x79, 0x74, 0x65, 0x73];
    s.push([...bad, 0x0a, 0xc3, 0x0a]);
    expect(s.bytes).toEqual([Buffer.from(bad), Buffer.from([0xc3])]);
  });

  it('loses no byte of an invalid line it splits', () => {
    const s = splitter({ maxLineBytes: 4 });
    const bad = [0xff, 0x80, 0x80, 0x80, 0x80, 0xfe, 0x41, 0xc3];
    s.push([...bad, 0x0a]);
    expect(s.out[0]).toBe('<split>');
    expect(Buffer.concat(s.bytes)).toEqual(Buffer.from(bad));
    expect(s.bytes.every((b) => b.length <= 4)).toBe(true);
  });
});

describe('LineSplitter: multiline', () => {
  it('joins the lines after a start line into one event, forwarded when the next one starts', () => {
    const s = splitter(multiline());
    s.push('2026-11-23 ERROR boom\njava.lang.Exception: x\n\tat a.b(C.java:1)\n2026-11-23 INFO ok\n');
    expect(s.out).toEqual(['2026-11-23 ERROR boom\njava.lang.Exception: x\n\tat a.b(C.java:1)']);
    // The event in the making is held back: a checkpoint stays before its first line.
    expect(s.lines.held).toBe('2026-11-23 INFO ok\n'.length);
    s.lines.end(0);
    expect(s.out).toEqual(['2026-11-23 ERROR boom\njava.lang.Exception: x\n\tat a.b(C.java:1)', '2026-11-23 INFO ok']);
  });

  it('starts an event at a first line that does not match', () => {
    const s = splitter(multiline());
    s.push('orphan\ncontinued\n2026-01-01 next\n');
    expect(s.out).toEqual(['orphan\ncontinued']);
  });

  it('forwards an event once no line joined it for timeout_ms', () => {
    const s = splitter(multiline(500, 1_000));
    s.push('2026-01-01 a\n', 0);
    s.push(' more\n', 500);
    expect(s.lines.due(1_499)).toBe(false);
    expect(s.out).toEqual([]);
    expect(s.lines.due(1_500)).toBe(true);
    expect(s.out).toEqual(['2026-01-01 a\n more']);
    expect(s.lines.held).toBe(0);
    expect(s.lines.due(9_999)).toBe(false);
  });

  it('starts a new event after max_lines lines', () => {
    const s = splitter(multiline(2));
    s.push('2026-01-01 s\nc1\nc2\nc3\nc4\n');
    s.lines.end(0);
    expect(s.out).toEqual(['2026-01-01 s\nc1', 'c2\nc3', 'c4']);
  });

  it('starts a new event where joining would pass max_line_bytes', () => {
    const s = splitter({ maxLineBytes: 10, ...multiline() });
    s.push('2026-1\nabc\nd\n');
    s.lines.end(0);
    // "2026-1\nabc" is 10 bytes; one more line would make 12.
    expect(s.out).toEqual(['2026-1\nabc', 'd']);
  });

  it('forwards the event before a line it splits ahead of the pieces', () => {
    const s = splitter({ maxLineBytes: 8, ...multiline() });
    s.push('2026-1\nx\n0123456789\n');
    expect(s.out).toEqual(['<split>', '2026-1\nx', '01234567', '89']);
  });

  it('keeps empty lines inside an event, and forwards no event made of one empty line', () => {
    const s = splitter(multiline());
    s.push('2026-1\n\nc\n\r\n');
    s.lines.end(0);
    expect(s.out).toEqual(['2026-1\n\nc\n']);
    const empty = splitter(multiline());
    empty.push('\n');
    expect(empty.lines.held).toBe(1);
    empty.lines.end(0);
    expect(empty.out).toEqual([]);
  });

  it('holds back from the event start through the partial line after it', () => {
    const s = splitter(multiline());
    s.push('x\n2026-1\ncont\npart');
    expect(s.out).toEqual(['x']);
    expect(s.lines.held).toBe('2026-1\ncont\npart'.length);
  });
});
