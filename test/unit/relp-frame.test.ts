// RELP framing (librelp doc/relp.md, "RELP FRAME"): the deframer whatever the read boundaries, its
// refusals (a stream that is not RELP stays refused), oversized frames skipped without being held,
// transaction numbers, offers and "rsp" answers.
import { describe, expect, it, vi } from 'vitest';
import { RELP_TXNR_MAX, RelpDeframer, RelpFramingError, nextTxnr, parseOffers, parseResponse, relpFrame } from '../../src/relp/frame.ts';

type Frame = [txnr: number, command: string, data: string];

function collect(maxData = 1024) {
  const frames: Frame[] = [];
  const oversized: [number, string, number][] = [];
  const d = new RelpDeframer(maxData, {
    frame: (txnr, command, buf, start, end) => frames.push([txnr, command, buf.toString('latin1', start, end)]),
    oversized: (txnr, command, datalen) => oversized.push([txnr, command, datalen]),
  });
  return { d, frames, oversized };
}

const b = (s: string): Buffer => Buffer.from(s, 'latin1');
const OPEN_ANSWER = '200 OK\nrelp_version=0\nrelp_software=librelp,1.11.0,http://librelp.adiscon.com\ncommands=syslog\n';
// Data with the bytes a header is made of (LF, SP, digits) and non-ASCII bytes, counted as octets.
const MSG = '<13>1 - h a - - [SEKOIA@53288 intake_key="k"] line one\nline 2 \xc3\xa9 9 rsp 6 ';

const STREAM = b(
  `1 rsp ${OPEN_ANSWER.length} ${OPEN_ANSWER}\n` +
    '2 rsp 6 200 OK\n' +
    '3 rsp 0\n' +
    '4 rsp 0 \n' +
    `5 syslog ${MSG.length} ${MSG}\n` +
    '999999999 rsp 15 500 not written\n' +
    '0 serverclose 0\n',
);
const EXPECTED: Frame[] = [
  [1, 'rsp', OPEN_ANSWER],
  [2, 'rsp', '200 OK'],
  [3, 'rsp', ''],
  [4, 'rsp', ''],
  [5, 'syslog', MSG],
  [999_999_999, 'rsp', '500 not written'],
  [0, 'serverclose', ''],
];

describe('RelpDeframer', () => {
  it('reads several frames in one read, DATALEN 0 with or without a space before LF', () => {
    const { d, frames } = collect();
    d.push(STREAM);
    expect(frames).toEqual(EXPECTED);
    expect(d.pendingBytes).toBe(0);
  });

  it('gives the same frames whatever the read boundaries: cut at every byte, at every two bytes, and byte by byte', () => {
    for (let cut = 0; cut <= STREAM.length; cut++) {
      const { d, frames } = collect();
      d.push(STREAM.subarray(0, cut));
      d.push(STREAM.subarray(cut));
      expect(frames, `cut at ${cut}`).toEqual(EXPECTED);
      expect(d.pendingBytes).toBe(0);
    }
    for (let i = 1; i < STREAM.length; i += 3) {
      for (let j = i + 1; j < STREAM.length; j += 2) {
        const { d, frames } = collect();
        d.push(STREAM.subarray(0, i));
        d.push(STREAM.subarray(i, j));
        d.push(STREAM.subarray(j));
        expect(frames, `cuts at ${i} and ${j}`).toEqual(EXPECTED);
      }
    }
    const { d, frames } = collect();
    for (let i = 0; i < STREAM.length; i++) d.push(STREAM.subarray(i, i + 1));
    expect(frames).toEqual(EXPECTED);
    expect(d.pendingBytes).toBe(0);
  });

  it('holds back only the start of an unfinished frame, and hands out a frame as soon as its trailer arrives', () => {
    const { d, frames } = collect();
    d.push(b('2 rsp 6 200 OK\n3 rsp 6 200'));
    expect(frames).toEqual([[2, 'rsp', '200 OK']]);
    expect(d.pendingBytes).toBe('3 rsp 6 200'.length);
    d.push(b(' OK'));
    expect(frames).toHaveLength(1);
    d.push(b('\n'));
    expect(frames).toEqual([[2, 'rsp', '200 OK'], [3, 'rsp', '200 OK']]);
    expect(d.pendingBytes).toBe(0);
  });

  it.each([
    ['a TXNR that is not a number', 'x rsp 0\n'],
    ['a TXNR of 10 digits', '1234567890 rsp 0\n'],
    ['a space before the TXNR', ' 1 rsp 0\n'],
    ['a TXNR not followed by SP', '1\trsp 0\n'],
    ['an empty command', '1  0\n'],
    ['a command with a digit', '1 rs2p 0\n'],
    ['a command of 33 letters', `1 ${'a'.repeat(33)} 0\n`],
    ['a DATALEN that is not a number', '1 rsp x\n'],
    ['a negative DATALEN', '1 rsp -1 \n'],
    ['a DATALEN of 10 digits', '1 rsp 1000000000 x\n'],
    ['no SP between DATALEN and DATA', '1 rsp 6\n200 OK\n'],
    ['data after DATALEN 0', '1 rsp 0 200 OK\n'],
    ['more data than DATALEN (no trailer where it must be)', '1 rsp 2 200 OK\n'],
    ['a missing trailer', '1 rsp 6 200 OK2 rsp 6 200 OK\n'],
  ])('refuses %s, and the stream stays refused (it cannot be resynchronised)', (_what, text) => {
    const good = b('7 rsp 6 200 OK\n');
    const stream = Buffer.concat([good, b(text)]);
    // In one read, and cut at every byte: the bad frame is refused by whichever read completes it.
    for (let cut = 0; cut <= stream.length; cut++) {
      const { d, frames } = collect();
      let threw: unknown;
      for (const part of [stream.subarray(0, cut), stream.subarray(cut)]) {
        try {
          d.push(part);
        } catch (err) {
          threw = err;
          break;
        }
      }
      expect(threw, `cut at ${cut}`).toBeInstanceOf(RelpFramingError);
      expect(frames, `cut at ${cut}`).toEqual([[7, 'rsp', '200 OK']]);
      expect(() => d.push(good)).toThrow(RelpFramingError);
      expect(frames).toHaveLength(1);
    }
  });

  it('skips a frame over maxData without holding its data, across reads, then reads the next frame', () => {
    const { d, frames, oversized } = collect(16);
    const big = 1_000_000;
    d.push(b(`2 rsp 6 200 OK\n3 syslog ${big} `));
    expect(oversized).toEqual([[3, 'syslog', big]]);
    const chunk = Buffer.alloc(64 * 1024, 0x0a); // LF bytes: data, not trailers
    let left = big;
    while (left > 0) {
      const n = Math.min(left, chunk.length);
      d.push(chunk.subarray(0, n));
      left -= n;
      expect(d.pendingBytes).toBe(0);
    }
    expect(frames).toEqual([[2, 'rsp', '200 OK']]);
    d.push(b('\n4 rsp 6 200 OK\n'));
    expect(frames).toEqual([[2, 'rsp', '200 OK'], [4, 'rsp', '200 OK']]);
    expect(oversized).toHaveLength(1);
    expect(d.pendingBytes).toBe(0);
  });

  it('skips an oversized frame whatever the read boundaries, and holds at most a header and maxData meanwhile', () => {
    const maxData = 8;
    const stream = b(`5 syslog 40 ${'x'.repeat(40)}\n6 rsp 6 200 OK\n7 syslog 41 ${'y'.repeat(41)}\n`);
    for (let cut = 0; cut <= stream.length; cut++) {
      const { d, frames, oversized } = collect(maxData);
      d.push(stream.subarray(0, cut));
      // At most the whole small frame, or an oversized frame's header: never an oversized frame's data.
      expect(d.pendingBytes).toBeLessThanOrEqual('6 rsp 6 200 OK\n'.length);
      d.push(stream.subarray(cut));
      expect(frames, `cut at ${cut}`).toEqual([[6, 'rsp', '200 OK']]);
      expect(oversized, `cut at ${cut}`).toEqual([[5, 'syslog', 40], [7, 'syslog', 41]]);
      expect(d.pendingBytes).toBe(0);
    }
  });

  it('refuses an oversized frame that does not end with LF, in the same read or a later one', () => {
    for (const parts of [[`1 syslog 20 ${'x'.repeat(20)}X`], [`1 syslog 20 ${'x'.repeat(10)}`, `${'x'.repeat(10)}X`], [`1 syslog 20 ${'x'.repeat(20)}`, 'X']]) {
      const { d, oversized } = collect(4);
      const pushes = parts.map((p) => () => d.push(b(p)));
      for (const p of pushes.slice(0, -1)) p();
      expect(pushes.at(-1)).toThrow(RelpFramingError);
      expect(oversized).toEqual([[1, 'syslog', 20]]);
      expect(() => d.push(b('2 rsp 0\n'))).toThrow(RelpFramingError);
    }
  });

  it('takes a frame of exactly maxData', () => {
    const { d, frames, oversized } = collect(6);
    d.push(b('1 rsp 6 200 OK\n2 rsp 7 200 OK!\n3 rsp 0\n'));
    expect(frames).toEqual([[1, 'rsp', '200 OK'], [3, 'rsp', '']]);
    expect(oversized).toEqual([[2, 'rsp', 7]]);
  });
});

describe('RelpDeframer: a large frame over many reads', () => {
  it('is joined once when whole, not once per read (a sender trickling it costs no copy per read)', () => {
    const { d, frames } = collect(256 * 1024);
    const data = 'x'.repeat(200 * 1024);
    const whole = b(`7 syslog ${data.length} ${data}\n8 rsp 6 200 OK\n`);
    const concat = vi.spyOn(Buffer, 'concat');
    try {
      for (let off = 0; off < whole.length; off += 512) d.push(whole.subarray(off, off + 512));
      expect(frames.map(([t, c, text]) => [t, c, text.length])).toEqual([[7, 'syslog', data.length], [8, 'rsp', 6]]);
      // The header's join, and the frame's: not ~400 (one per read).
      expect(concat.mock.calls.length).toBeLessThanOrEqual(3);
      expect(d.pendingBytes).toBe(0);
    } finally {
      concat.mockRestore();
    }
  });
});

describe('RelpDeframer: a frame sent a byte at a time', () => {
  it('keeps no Buffer per byte: the reads are joined every 1,024, and the frame is whole', () => {
    const { d, frames } = collect(256 * 1024);
    const data = 'y'.repeat(5_000);
    const whole = b(`9 syslog ${data.length} ${data}\n`);
    const concat = vi.spyOn(Buffer, 'concat');
    try {
      for (let off = 0; off < whole.length; off++) d.push(whole.subarray(off, off + 1));
      expect(frames).toEqual([[9, 'syslog', data]]);
      // Never more than 1,024 reads (and what they join onto) held apart.
      expect(Math.max(...concat.mock.calls.map(([list]) => list.length))).toBeLessThanOrEqual(1_025);
    } finally {
      concat.mockRestore();
    }
  });
});

describe('RelpDeframer: borrowed reads (a socket\'s one read buffer, reused after each read)', () => {
  /** Pushes `pieces` through one buffer, overwritten with junk after each push. */
  function throughOneBuffer(pieces: Buffer[], maxData = 1024): Frame[] {
    const frames: Frame[] = [];
    const d = new RelpDeframer(
      maxData,
      { frame: (txnr, command, buf, start, end) => frames.push([txnr, command, buf.toString('latin1', start, end)]), oversized: () => {} },
      true,
    );
    const buffer = Buffer.alloc(64 * 1024);
    for (const piece of pieces) {
      piece.copy(buffer);
      d.push(buffer.subarray(0, piece.length));
      buffer.fill(0x7e);
    }
    return frames;
  }

  it('keeps a copy of what it holds back: the frames are the same whatever the read boundaries', () => {
    for (let cut = 0; cut <= STREAM.length; cut++) {
      expect(throughOneBuffer([STREAM.subarray(0, cut), STREAM.subarray(cut)]), `cut at ${cut}`).toEqual(EXPECTED);
    }
    for (let i = 1; i < STREAM.length; i += 5) {
      for (let j = i + 1; j < STREAM.length; j += 3) {
        expect(throughOneBuffer([STREAM.subarray(0, i), STREAM.subarray(i, j), STREAM.subarray(j)]), `cuts at ${i} and ${j}`).toEqual(EXPECTED);
      }
    }
  });

  it('joins a large frame from copies of its reads', () => {
    const data = 'x'.repeat(20 * 1024);
    const whole = b(`7 syslog ${data.length} ${data}\n8 rsp 6 200 OK\n`);
    const pieces: Buffer[] = [];
    for (let off = 0; off < whole.length; off += 1000) pieces.push(whole.subarray(off, off + 1000));
    expect(throughOneBuffer(pieces, 64 * 1024)).toEqual([[7, 'syslog', data], [8, 'rsp', '200 OK']]);
  });
});

describe('relpFrame and transaction numbers', () => {
  it('frames commands with DATALEN in octets, and DATALEN 0 without a space', () => {
    expect(relpFrame(1, 'open', 'relp_version=0').toString('latin1')).toBe('1 open 14 relp_version=0\n');
    expect(relpFrame(7, 'close').toString('latin1')).toBe('7 close 0\n');
    expect(relpFrame(2, 'syslog', 'é').toString('latin1')).toBe('2 syslog 2 \xc3\xa9\n');
    expect(relpFrame(3, 'syslog', Buffer.from([0, 0x0a])).toString('latin1')).toBe('3 syslog 2 \x00\n\n');
  });

  it('what relpFrame writes, the deframer reads back', () => {
    const { d, frames } = collect();
    d.push(Buffer.concat([relpFrame(1, 'open', 'a\nb'), relpFrame(2, 'close'), relpFrame(RELP_TXNR_MAX, 'syslog', 'é x')]));
    expect(frames).toEqual([[1, 'open', 'a\nb'], [2, 'close', ''], [RELP_TXNR_MAX, 'syslog', '\xc3\xa9 x']]);
  });

  it('transaction numbers latch at 999,999,999 and go on at 1 (0 is for hints)', () => {
    expect(nextTxnr(1)).toBe(2);
    expect(nextTxnr(999_999_998)).toBe(999_999_999);
    expect(nextTxnr(999_999_999)).toBe(1);
    let t = 999_999_997;
    const seen = [t];
    for (let i = 0; i < 4; i++) seen.push((t = nextTxnr(t)));
    expect(seen).toEqual([999_999_997, 999_999_998, 999_999_999, 1, 2]);
  });
});

describe('parseOffers', () => {
  it("reads librelp's answer to an open", () => {
    const offers = parseOffers(OPEN_ANSWER.slice('200 OK\n'.length));
    expect([...offers]).toEqual([
      ['relp_version', ['0']],
      ['relp_software', ['librelp', '1.11.0', 'http://librelp.adiscon.com']],
      ['commands', ['syslog']],
    ]);
  });

  it('takes an offer without a value, several commands, and blank lines', () => {
    const offers = parseOffers('\nrelp_version=1\n\ncommands=eventlog,syslog\nstarttls\n');
    expect(offers.get('relp_version')).toEqual(['1']);
    expect(offers.get('commands')).toEqual(['eventlog', 'syslog']);
    expect(offers.get('starttls')).toEqual([]);
    expect(offers.has('relp_software')).toBe(false);
    expect(parseOffers('').size).toBe(0);
  });
});

describe('parseResponse', () => {
  const rsp = (s: string) => {
    const buf = b(`xx${s}yy`); // the answer within a larger buffer: start and end are honoured
    return parseResponse(buf, 2, 2 + s.length);
  };

  it('reads the code, the text and the data after the first LF', () => {
    expect(rsp('200 OK')).toEqual({ code: 200, text: 'OK', data: '' });
    expect(rsp('500 not written')).toEqual({ code: 500, text: 'not written', data: '' });
    expect(rsp('200')).toEqual({ code: 200, text: '', data: '' });
    expect(rsp(OPEN_ANSWER)).toEqual({ code: 200, text: 'OK', data: OPEN_ANSWER.slice(7) });
  });

  it('cuts the text to 80 characters (the spec allows no more)', () => {
    expect(rsp(`500 ${'e'.repeat(200)}`)?.text).toBe('e'.repeat(80));
  });

  it('has no answer without a 3-digit code', () => {
    for (const s of ['', '20', 'OK', 'abc OK', '2x0 OK', ' 200 OK', '-20 OK', '2000 OK', '200OK']) expect(rsp(s), JSON.stringify(s)).toBeUndefined();
  });
});
