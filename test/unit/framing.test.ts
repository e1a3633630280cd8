import { describe, expect, it, vi } from 'vitest';
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
    const stream = Buffer.from(`${octet('<13>1 2026-01-01T00:00:00Z h a p m - héllo')}<14>plain\r\n${octet('<15>x')}12 not a count\n999999 <W> like a count\n${octet('<16>y')}`);
    const expected = ['<13>1 2026-01-01T00:00:00Z h a p m - héllo', '<14>plain', '<15>x', '12 not a count', '999999 <W> like a count', '<16>y'];
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

  it('reads a line that only starts like an oversized count ("999999 <") as a line: the frames after it are kept (rsyslog: octet stuffing)', () => {
    for (const oversize of ['drop', 'truncate'] as const) {
      const { frames, dropped, d } = collect(1000, oversize);
      d.push(Buffer.from('999999 <Warning> disk full\n'));
      for (let i = 0; i < 5000; i++) d.push(Buffer.from(`<13>Jan  1 00:00:00 host app: line ${i}\n`));
      d.end();
      expect(dropped).toEqual([]);
      expect(frames).toHaveLength(5001);
      expect(frames[0]).toEqual({ text: '999999 <Warning> disk full', truncated: false });
      expect(frames[5000]).toEqual({ text: '<13>Jan  1 00:00:00 host app: line 4999', truncated: false });
    }
  });

  it('an oversized count on a line too large: that line is dropped and counted once, reading goes on at its LF', () => {
    const { frames, dropped, d } = collect(100);
    const stream = Buffer.from(`999999 <Warning>${'x'.repeat(300)}\n<13>next\n${octet('<13>then')}`);
    for (let i = 0; i < stream.length; i += 40) d.push(stream.subarray(i, i + 40));
    expect(dropped).toEqual([999999]);
    expect(frames.map((f) => f.text)).toEqual(['<13>next', '<13>then']);
  });

  it('a real oversized frame (a PRI after its count) is skipped to its announced end, newlines and all: the frames after it are kept', () => {
    // A multi-line stack trace, octet-counted, no LF at its end (syslog-ng, this relay's output).
    const trace = `<13>1 - h app - - - Exception in thread main\n${'\tat com.example.Foo.bar(Foo.java:1)\n'.repeat(10)}\t... 12 more`;
    const after = Array.from({ length: 5 }, (_, i) => `<13>1 - h app - - - normal ${i}`);
    const stream = Buffer.from(octet(trace) + after.map(octet).join(''));
    for (const oversize of ['drop', 'truncate'] as const) {
      for (const step of [stream.length, 64, 7]) {
        const { frames, dropped, d } = collect(200, oversize);
        for (let i = 0; i < stream.length; i += step) d.push(stream.subarray(i, i + step));
        d.end();
        expect(frames.filter((f) => !f.truncated).map((f) => f.text)).toEqual(after);
        if (oversize === 'drop') expect(dropped).toEqual([Buffer.byteLength(trace)]);
        else expect(frames[0]).toEqual({ text: trace.slice(0, 200), truncated: true });
      }
    }
  });

  it('an oversized octet-counted frame ending with a newline inside its count (rsyslog templates) resynchronises at it', () => {
    const { frames, dropped, d } = collect(100, 'truncate');
    d.push(Buffer.from(`${octet(`<13>${'x'.repeat(200)}\n`)}${octet('<13>after')}`));
    expect(dropped).toEqual([]);
    expect(frames).toEqual([{ text: `<13>${'x'.repeat(96)}`, truncated: true }, { text: '<13>after', truncated: false }]);
  });

  it('a frame trickled one byte per read is joined once it is whole, not copied on every read', () => {
    const copied = (run: () => void): number => {
      const concat = vi.spyOn(Buffer, 'concat');
      const from = vi.spyOn(Buffer, 'from');
      try {
        run();
        return [...concat.mock.results, ...from.mock.results].reduce((n, r) => n + (r.value as Buffer).length, 0);
      } finally {
        concat.mockRestore();
        from.mockRestore();
      }
    };
    const one = Buffer.from('a');
    const reads = 20_000;
    // A line: 200 KB held, then one byte per read.
    const line = collect(256_000);
    const start = Buffer.alloc(200_000, 0x61);
    const lf = Buffer.from('\n');
    const lineCopied = copied(() => {
      line.d.push(start);
      for (let i = 0; i < reads; i++) line.d.push(one);
      expect(line.d.pendingBytes).toBe(200_000 + reads);
      line.d.push(lf);
    });
    expect(line.frames).toEqual([{ text: 'a'.repeat(200_000 + reads), truncated: false }]);
    // Each held byte is copied at most once per 1,024 reads (then the pieces are joined), and once at the end.
    expect(lineCopied).toBeLessThan((reads / 1024 + 3) * (200_000 + reads));
    // An octet-counted frame, its count first, then one byte per read.
    const counted = collect(256_000);
    const msg = Buffer.from(`<13>${'b'.repeat(reads)}`);
    const head = Buffer.from(`${msg.length} `);
    const bytes = Array.from(msg, (b) => Buffer.from([b]));
    const countedCopied = copied(() => {
      counted.d.push(head);
      for (const b of bytes) counted.d.push(b);
    });
    expect(counted.frames).toEqual([{ text: msg.toString(), truncated: false }]);
    expect(counted.d.pendingBytes).toBe(0);
    expect(countedCopied).toBeLessThan((reads / 1024 + 3) * msg.length);
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
