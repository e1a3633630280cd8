import { describe, expect, it } from 'vitest';
import { Deframer, type FrameSink, type Oversize } from '../../src/syslog/framing.ts';

function collect(max = 1000, oversize: Oversize = 'drop') {
  const frames: { text: string; truncated: boolean }[] = [];
  const dropped: number[] = [];
  const sink: FrameSink = {
    frame: (buf, s, e, truncated) => frames.push({ text: buf.toString('utf8', s, e), truncated }),
    oversized: (n) => dropped.push(n),
  };
  return { frames, dropped, d: new Deframer(max, oversize, sink) };
}

const octet = (m: string): string => `${Buffer.byteLength(m)} ${m}`;

describe('Deframer', () => {
  it('reads LF, CRLF and octet-counted frames mixed on one connection', () => {
    const { frames, d } = collect();
    d.push(Buffer.from(`<13>lf line\n<13>crlf line\r\n${octet('<13>1 - - - - - - octet\nwith newline')}${octet('<14>é two')}\n<15>last\n`));
    expect(frames.map((f) => f.text)).toEqual(['<13>lf line', '<13>crlf line', '<13>1 - - - - - - octet\nwith newline', '<14>é two', '<15>last']);
  });

  it('gives the same frames whatever the read boundaries', () => {
    const stream = Buffer.from(`${octet('<13>1 2026-01-01T00:00:00Z h a p m - héllo')}<14>plain\r\n${octet('<15>x')}12 not a count\n`);
    const expected = ['<13>1 2026-01-01T00:00:00Z h a p m - héllo', '<14>plain', '<15>x', '12 not a count'];
    for (let cut = 1; cut < stream.length; cut++) {
      const { frames, d } = collect();
      d.push(stream.subarray(0, cut));
      d.push(stream.subarray(cut));
      d.end();
      expect(frames.map((f) => f.text), `cut at ${cut}`).toEqual(expected);
    }
    const { frames, d } = collect();
    for (let i = 0; i < stream.length; i++) d.push(stream.subarray(i, i + 1));
    expect(frames.map((f) => f.text)).toEqual(expected);
    d.end();
    expect(frames.map((f) => f.text)).toEqual(expected);
  });

  it('removes a trailing newline inside an octet-counted frame (rsyslog templates add one)', () => {
    const { frames, d } = collect();
    d.push(Buffer.from(`${octet('<13>1 - - - - - - a\n')}${octet('<13>b\r\n')}`));
    expect(frames.map((f) => f.text)).toEqual(['<13>1 - - - - - - a', '<13>b']);
  });

  it('counts octets, not characters', () => {
    const { frames, d } = collect();
    const m = '<13>1 - - - - - - ééé€';
    d.push(Buffer.from(`${Buffer.byteLength(m)} ${m}${octet('<13>next')}`));
    expect(frames.map((f) => f.text)).toEqual([m, '<13>next']);
  });

  it('treats digits not followed by "SP <" as an ordinary line', () => {
    const { frames, d } = collect();
    d.push(Buffer.from('2026-11-22 12:00:00 app started\n404 page not found\n99999999999 <huge\n'));
    expect(frames.map((f) => f.text)).toEqual(['2026-11-22 12:00:00 app started', '404 page not found', '99999999999 <huge']);
  });

  it('drops an oversized octet-counted frame without buffering it, and resynchronises', () => {
    const { frames, dropped, d } = collect(100);
    const big = `<13>${'x'.repeat(500)}`;
    const stream = Buffer.from(`${octet(big)}${octet('<13>after')}`);
    for (let i = 0; i < stream.length; i += 64) {
      d.push(stream.subarray(i, i + 64));
      expect(d.pendingBytes).toBeLessThanOrEqual(100 + 64);
    }
    expect(dropped).toEqual([504]);
    expect(frames.map((f) => f.text)).toEqual(['<13>after']);
  });

  it('truncates oversized frames when asked, in both framings', () => {
    const { frames, dropped, d } = collect(10, 'truncate');
    d.push(Buffer.from(`${octet('<13>0123456789abc')}<13>0123456789abc\nok\n`));
    expect(dropped).toEqual([]);
    expect(frames).toEqual([
      { text: '<13>012345', truncated: true },
      { text: '<13>012345', truncated: true },
      { text: 'ok', truncated: false },
    ]);
  });

  it('drops an endless line and keeps memory bounded', () => {
    const { frames, dropped, d } = collect(100);
    for (let i = 0; i < 100; i++) {
      d.push(Buffer.alloc(64, 0x61));
      expect(d.pendingBytes).toBeLessThanOrEqual(164);
    }
    d.push(Buffer.from('aaa\n<13>next\n'));
    expect(dropped.length).toBe(1);
    expect(frames.map((f) => f.text)).toEqual(['<13>next']);
  });

  it('flushes a last line without LF, and a cut-off octet frame as truncated, at end of stream', () => {
    const a = collect();
    a.d.push(Buffer.from('<13>no newline'));
    a.d.end();
    expect(a.frames).toEqual([{ text: '<13>no newline', truncated: false }]);
    const b = collect();
    b.d.push(Buffer.from('50 <13>cut off'));
    b.d.end();
    expect(b.frames).toEqual([{ text: '<13>cut off', truncated: true }]);
  });

  it('skips blank lines and NUL separators', () => {
    const { frames, d } = collect();
    d.push(Buffer.from('\n\r\n\0<13>a\0\n\n<13>b\n'));
    expect(frames.map((f) => f.text)).toEqual(['<13>a\0', '<13>b']);
  });
});
