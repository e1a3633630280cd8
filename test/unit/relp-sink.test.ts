// The RELP sink alone against a scripted RELP server on loopback (plain TCP): the open's
// negotiation, the window of unanswered transactions, per-message refusals, lost sessions and
// exactly what is written again, ack timeouts, answers out of order, the close at a stop (and a
// session lost while it waits, written again on a new one), and a reload's hand-over. The server
// reads the sink's bytes with its own parser (not src/relp's).
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { SinkEvents } from '../../src/core/contracts.ts';
import type { RelayError } from '../../src/core/errors.ts';
import type { Batch } from '../../src/core/event.ts';
import { PeerTextRedactor } from '../../src/core/peer-text.ts';
import { BoundedQueue } from '../../src/core/queue.ts';
import { SinkRunner } from '../../src/core/runner.ts';
import { RelpSink } from '../../src/outputs/relp/sink.ts';
import { headerlessEvent } from '../../src/syslog/parse.ts';
import { Rfc5424Formatter } from '../../src/syslog/format.ts';
import { FakeTelemetry } from '../helpers/fake-output.ts';
import { TLS } from '../helpers/relay.ts';
import { assertRfc5424Frame } from '../helpers/rfc5424-grammar.ts';

// ---- A scripted RELP server -------------------------------------------------------------------

interface Seen {
  readonly txnr: number;
  readonly command: string;
  readonly data: Buffer;
  /** The message number (m00000042 → 42) of a syslog frame, -1 for others. */
  readonly n: number;
}

/** librelp 1.11's answer to an open (rsyslog imrelp, Debian 12). */
const LIBRELP_OPEN = '200 OK\nrelp_version=0\nrelp_software=librelp,1.11.0,http://librelp.adiscon.com\ncommands=syslog\n';

class Conn {
  readonly socket: net.Socket;
  /** Every byte the client wrote, in order. */
  readonly raw: Buffer[] = [];
  readonly frames: Seen[] = [];
  /** Syslog transactions not answered yet. */
  readonly outstanding = new Set<number>();
  /** The most syslog transactions unanswered when one arrived (it included). */
  maxOutstanding = 0;
  closedByClient = false;
  /** The connection is gone (both sides). */
  closed = false;
  #pending = Buffer.alloc(0);

  constructor(socket: net.Socket) {
    this.socket = socket;
  }

  get syslog(): Seen[] {
    return this.frames.filter((f) => f.command === 'syslog');
  }
  bytes(): Buffer {
    return Buffer.concat(this.raw);
  }
  answer(txnr: number, text = '200 OK'): void {
    this.outstanding.delete(txnr);
    this.socket.write(`${txnr} rsp ${Buffer.byteLength(text)} ${text}\n`);
  }
  /** Answers the oldest `n` unanswered transactions with 200. */
  answerOldest(n: number): void {
    for (const t of [...this.outstanding].slice(0, n)) this.answer(t);
  }
  serverclose(): void {
    this.socket.end('0 serverclose 0\n');
  }

  /** Splits what arrived into frames: TXNR SP COMMAND SP DATALEN [SP DATA] LF, strictly. */
  read(chunk: Buffer): Seen[] {
    this.raw.push(chunk);
    let buf = Buffer.concat([this.#pending, chunk]);
    const out: Seen[] = [];
    for (;;) {
      const head = buf.toString('latin1', 0, 64);
      const m = /^([1-9]\d{0,8}) ([a-z]{1,32}) (0|[1-9]\d{0,8})([ \n])/.exec(head);
      if (!m) {
        if (!/^(\d{0,9}|\d{1,9} [a-z]{0,32}|\d{1,9} [a-z]{1,32} \d{0,9})$/.test(head)) throw new Error(`not RELP: ${JSON.stringify(head)}`);
        break;
      }
      const len = Number(m[3]);
      if ((len === 0) !== (m[4] === '\n')) throw new Error(`bad DATALEN/DATA separator: ${JSON.stringify(head)}`);
      const start = m[0].length;
      const end = len === 0 ? start - 1 : start + len;
      if (end >= buf.length) break;
      if (buf[end] !== 0x0a) throw new Error(`no LF after DATALEN bytes: ${JSON.stringify(head)}`);
      const data = Buffer.from(buf.subarray(start, len === 0 ? start : end));
      const n = /m(\d{8})/.exec(data.toString('latin1'));
      out.push({ txnr: Number(m[1]), command: m[2] as string, data, n: m[2] === 'syslog' && n ? Number(n[1]) : -1 });
      buf = buf.subarray(end + 1);
    }
    this.#pending = Buffer.from(buf);
    return out;
  }
}

interface Script {
  /** The data of the answer to the open (default librelp's), or what to do instead. */
  open?: string | ((c: Conn, f: Seen) => void);
  /** What to do with a syslog transaction (default: answer 200 at once). */
  syslog?: (c: Conn, f: Seen) => void;
  /** What to do with the close (default librelp's: an empty rsp, serverclose, then close). */
  close?: (c: Conn, f: Seen) => void;
}

const librelpClose = (c: Conn, f: Seen): void => {
  c.socket.write(`${f.txnr} rsp 0\n`);
  c.serverclose();
};

interface FakeRelp {
  readonly port: number;
  readonly conns: Conn[];
  script: Script;
  stop(): Promise<void>;
}

/** `secure`: over TLS (the test CA's server certificate), with Node's defaults (it offers sessions to resume). */
async function startFakeRelp(script: Script = {}, secure = false): Promise<FakeRelp> {
  const conns: Conn[] = [];
  const fake: FakeRelp = { port: 0, conns, script, stop: () => Promise.resolve() };
  const accept = (socket: net.Socket): void => {
    const c = new Conn(socket);
    conns.push(c);
    socket.on('error', () => {});
    socket.on('end', () => (c.closedByClient = true));
    socket.on('close', () => (c.closed = true));
    socket.on('data', (chunk: Buffer) => {
      for (const f of c.read(chunk)) {
        c.frames.push(f);
        const s = fake.script;
        if (f.command === 'open') {
          if (typeof s.open === 'function') s.open(c, f);
          else c.answer(f.txnr, s.open ?? LIBRELP_OPEN);
        } else if (f.command === 'syslog') {
          c.outstanding.add(f.txnr);
          c.maxOutstanding = Math.max(c.maxOutstanding, c.outstanding.size);
          (s.syslog ?? ((cc, ff) => cc.answer(ff.txnr)))(c, f);
        } else if (f.command === 'close') {
          (s.close ?? librelpClose)(c, f);
        } else {
          throw new Error(`unexpected command ${f.command}`);
        }
      }
    });
  };
  const server = secure
    ? tls.createServer({ cert: readFileSync(`${TLS}server.crt`), key: readFileSync(`${TLS}server.key`) }, accept)
    : net.createServer(accept);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return Object.assign(fake, {
    port: (server.address() as net.AddressInfo).port,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const c of conns) c.socket.destroy();
        server.close(() => resolve());
      }),
  });
}

// ---- The sink and what it reports -------------------------------------------------------------

const D = { pri: 13, hostname: 'h', appName: 'a', procId: '-' };
const msg = (n: number): string => `m${String(n).padStart(8, '0')} payload \u00e9`;

/** Events seq … seq+n-1, each carrying its number (m00000042). */
function batch(seq: number, n: number): Batch {
  const texts = Array.from({ length: n }, (_, i) => msg(seq + i));
  const buf = Buffer.from(texts.join(''));
  let off = 0;
  const events = texts.map((t) => {
    const len = Buffer.byteLength(t);
    const e = headerlessEvent(buf, off, off + len, 1_700_000_000_000, '', D);
    off += len;
    return e;
  });
  return { events, bytes: buf.length, seq };
}
const EMPTY: Batch = { events: [], bytes: 0, seq: 0 };

type Report = ['acked', number, number] | ['refused', number, number, RelayError] | ['lost', RelayError, number] | ['connected'];

const stops: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

type SinkOptions = { window?: number; ackTimeoutMs?: number; intakeKey?: string; tls?: boolean };

function relpSink(fake: FakeRelp, o: SinkOptions = {}): RelpSink {
  return new RelpSink({
    host: '127.0.0.1', port: fake.port, tls: o.tls === true, serverName: o.tls ? 'localhost' : undefined, ca: o.tls ? readFileSync(`${TLS}ca.crt`) : undefined, cert: undefined, key: undefined,
    connectTimeoutMs: 5_000, window: o.window ?? 16, ackTimeoutMs: o.ackTimeoutMs ?? 60_000,
    formatter: new Rfc5424Formatter(o.intakeKey ?? 'KEY', 'received'),
    ...(o.intakeKey ? { peerText: new PeerTextRedactor([o.intakeKey]) } : {}),
  });
}

async function started(fake: FakeRelp, o: SinkOptions = {}) {
  const sink = relpSink(fake, o);
  const reports: Report[] = [];
  /** For each session opened: whether its TLS handshake resumed an earlier one. */
  const resumed: boolean[] = [];
  const events: SinkEvents = {
    acknowledged: (seq, n) => reports.push(['acked', seq, n]),
    refused: (seq, n, e) => reports.push(['refused', seq, n, e]),
    connectionLost: (e, n) => reports.push(['lost', e, n]),
    connected: (r) => {
      reports.push(['connected']);
      resumed.push(r === true);
    },
    wrote: () => {},
    cut: () => {},
  };
  await sink.start(events);
  stops.push(() => sink.stop(AbortSignal.timeout(1_000)), () => fake.stop());
  const of = <K extends Report[0]>(kind: K) => reports.filter((r): r is Extract<Report, [K, ...unknown[]]> => r[0] === kind);
  return { sink, reports, resumed, acked: () => of('acked').map(([, s, n]) => [s, n]), lost: () => of('lost') };
}

const send = (sink: RelpSink, b: Batch) => sink.send(b, AbortSignal.timeout(20_000));

/** The answers ("200 OK") to the first `n` syslog messages `c` received. */
const answersOf = (c: Conn, n: number): string => c.syslog.slice(0, n).map((f) => `${f.txnr} rsp 6 200 OK\n`).join('');

/**
 * A sink whose intake holds `n` messages unanswered; a stop begins (its deadline `deadlineMs` away),
 * then the intake answers the first `answered` and closes the session (serverclose): all of it,
 * once the sink has reported the loss.
 */
async function lostWhileStopping(n: number, answered: number, deadlineMs: number) {
  const fake = await startFakeRelp({ syslog: () => {} });
  const s = await started(fake);
  await send(s.sink, batch(0, n));
  await vi.waitFor(() => expect(fake.conns[0]?.syslog).toHaveLength(n));
  const stopping = s.sink.stop(AbortSignal.timeout(deadlineMs));
  (fake.conns[0] as Conn).socket.end(`${answersOf(fake.conns[0] as Conn, answered)}0 serverclose 0\n`);
  await vi.waitFor(() => expect(s.lost()).toHaveLength(1));
  return { ...s, fake, stopping };
}
const numbers = (frames: readonly Seen[]): number[] => frames.map((f) => f.n);
const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);

describe('RELP sink: opening the session', () => {
  it('offers relp_version, relp_software and commands=syslog; each event is one syslog transaction from txnr 2, as RFC 5424 with the key', async () => {
    const fake = await startFakeRelp();
    const { sink, reports } = await started(fake);
    expect(await send(sink, batch(100, 5))).toEqual({ status: 'sent' });
    await vi.waitFor(() => expect(reports).toEqual([['connected'], ['acked', 100, 5]]));
    const c = fake.conns[0] as Conn;
    const open = c.frames[0] as Seen;
    expect([open.txnr, open.command]).toEqual([1, 'open']);
    expect(open.data.toString().split('\n')).toEqual(['relp_version=0', expect.stringMatching(/^relp_software=intake-relay,\S+$/), 'commands=syslog']);
    expect(c.syslog.map((f) => f.txnr)).toEqual([2, 3, 4, 5, 6]);
    for (const [i, f] of c.syslog.entries()) {
      const m = assertRfc5424Frame(f.data);
      expect(m).toMatchObject({ pri: 13, hostname: 'h', appName: 'a', intakeKey: 'KEY', msg: msg(100 + i) });
    }
    expect(sink.unacknowledged).toBe(0);
  });

  it.each([
    ['refuses the open (500)', '500 not now', /refused the session: 500 not now/],
    ['gives no relp_version', '200 OK\nrelp_software=x\ncommands=syslog\n', /no relp_version/],
    ['does not accept the syslog command', '200 OK\nrelp_version=0\ncommands=eventlog\n', /does not accept the syslog command \(commands=eventlog\)/],
    ['answers with a bare 200 (no offers)', '200 OK', /no relp_version/],
  ])('a server that %s: a retryable error saying so; nothing is sent, nothing held', async (_what, answer, text) => {
    const fake = await startFakeRelp({ open: answer });
    const { sink, reports } = await started(fake);
    const r = await send(sink, batch(0, 3));
    expect(r.status).toBe('retryable');
    if (r.status !== 'retryable') return;
    expect(r.error.code).toBe('ERELAY_RELP_OPEN');
    expect(r.error.message).toMatch(text);
    expect(r.error.message).toContain(`127.0.0.1:${fake.port}`);
    expect(fake.conns.flatMap((c) => c.frames.map((f) => f.command))).toEqual(['open']);
    expect(sink.unacknowledged).toBe(0);
    expect(reports).toEqual([]);
  });

  it.each([
    ['closes before answering', (c: Conn) => c.socket.end(), 'ERELAY_RELP_OPEN', /closed the connection before answering the open/],
    ['answers with serverclose', (c: Conn) => c.serverclose(), 'ERELAY_RELP_OPEN', /closed the session while it opened/],
    ['answers another transaction', (c: Conn) => c.answer(5), 'ERELAY_RELP_PROTOCOL', /answered the open with "rsp" \(transaction 5\)/],
    ['answers something that is not RELP', (c: Conn) => c.socket.write('HTTP/1.1 400 Bad Request\r\n\r\n'), 'ERELAY_RELP_PROTOCOL', /not RELP/],
  ])('a server that %s: a retryable error saying so', async (_what, open, code, text) => {
    const fake = await startFakeRelp({ open });
    const { sink } = await started(fake);
    const r = await send(sink, batch(0, 1));
    expect(r).toMatchObject({ status: 'retryable', error: { code, message: expect.stringMatching(text) } });
  });

  it('over TLS: the session after a serverclose resumes the TLS session the server offered', async () => {
    const fake = await startFakeRelp({}, true);
    const { sink, acked, resumed } = await started(fake, { tls: true });
    expect(await send(sink, batch(0, 5))).toEqual({ status: 'sent' });
    await vi.waitFor(() => expect(acked()).toEqual([[0, 5]]));
    (fake.conns[0] as Conn).serverclose();
    await vi.waitFor(() => expect(fake.conns[0]?.closed).toBe(true));
    await vi.waitFor(async () => expect(await send(sink, batch(5, 5))).toEqual({ status: 'sent' }));
    await vi.waitFor(() => expect(acked()).toEqual([[0, 5], [5, 5]]));
    expect(fake.conns).toHaveLength(2);
    expect(resumed).toEqual([false, true]);
    expect(assertRfc5424Frame((fake.conns[1] as Conn).syslog[0]!.data)).toMatchObject({ intakeKey: 'KEY', msg: msg(5) });
  });
});

describe('RELP sink: window and answers', () => {
  it('never has more than `window` transactions unanswered: the rest go out as answers come', async () => {
    const window = 8;
    const fake = await startFakeRelp({ syslog: () => {} });
    const { sink, acked } = await started(fake, { window });
    let done = false;
    const sending = send(sink, batch(0, 50)).then((r) => ((done = true), r));
    await vi.waitFor(() => expect(fake.conns[0]?.syslog.length).toBe(window));
    const c = fake.conns[0] as Conn;
    // Answer three at a time: each time, exactly three more are let out.
    while (c.syslog.length < 50) {
      expect(done).toBe(false);
      const before = c.syslog.length;
      c.answerOldest(3);
      await vi.waitFor(() => expect(c.syslog.length).toBe(Math.min(50, before + 3)));
    }
    expect(await sending).toEqual({ status: 'sent' });
    c.answerOldest(window);
    await vi.waitFor(() => expect(acked()).toEqual([[0, 50]]));
    expect(c.maxOutstanding).toBe(window);
    expect(numbers(c.syslog)).toEqual(range(0, 50));
    expect(c.syslog.map((f) => f.txnr)).toEqual(range(2, 52));
  });

  it('an answer other than 200 refuses that message only: refused and acknowledged ranges, in order, exactly', async () => {
    const bad = new Set([103, 104, 107]);
    const fake = await startFakeRelp({ syslog: (c, f) => c.answer(f.txnr, bad.has(f.n) ? '500 message refused' : '200 OK') });
    const { sink, reports } = await started(fake);
    await send(sink, batch(100, 10));
    await vi.waitFor(() => expect(reports.length).toBe(6));
    expect(reports.map((r) => (r[0] === 'refused' ? r.slice(0, 3) : r))).toEqual([
      ['connected'], ['acked', 100, 3], ['refused', 103, 2], ['acked', 105, 2], ['refused', 107, 1], ['acked', 108, 2],
    ]);
    const refusal = reports.find((r) => r[0] === 'refused')?.[3] as RelayError;
    expect(refusal.code).toBe('ERELAY_RELP_REFUSED');
    expect(refusal.message).toMatch(/refused 3 message\(s\) of a batch \(last answer: 500 message refused\)/);
    expect(sink.unacknowledged).toBe(0);
  });

  it('an intake that echoes the message in its refusal: the key does not reach the error (nor the log, nor /status)', async () => {
    const key = 'RelpKey0123456789abcdefRELPKEY01';
    // The whole key in one answer, and cut short in another (an answer's text is bounded).
    const fake = await startFakeRelp({ syslog: (c, f) => c.answer(f.txnr, `500 refused: ${f.data.toString('latin1').slice(0, f.n % 2 === 0 ? 200 : 75)}`) });
    const { sink, reports } = await started(fake, { intakeKey: key });
    await send(sink, batch(0, 2));
    await vi.waitFor(() => expect(reports.filter((r) => r[0] === 'refused')).toHaveLength(1));
    await send(sink, batch(2, 1));
    await vi.waitFor(() => expect(reports.filter((r) => r[0] === 'refused')).toHaveLength(2));
    for (const r of reports) {
      if (r[0] !== 'refused') continue;
      expect(r[3].message).toMatch(/last answer: 500 refused: .*\[redacted\]/);
      expect(r[3].message).not.toContain(key.slice(0, 6));
    }
  });

  it('answers out of order are matched by transaction number; batches are still reported oldest first', async () => {
    const fake = await startFakeRelp({ syslog: () => {} });
    const { sink, reports, lost } = await started(fake);
    await send(sink, batch(0, 5));
    await send(sink, batch(5, 5));
    const c = fake.conns[0] as Conn;
    await vi.waitFor(() => expect(c.syslog.length).toBe(10));
    // The second batch answered whole before the first.
    for (const t of [...c.outstanding].reverse()) c.answer(t);
    await vi.waitFor(() => expect(reports).toEqual([['connected'], ['acked', 0, 5], ['acked', 5, 5]]));
    expect(lost()).toEqual([]);
    expect(sink.unacknowledged).toBe(0);
  });

  it('an answer to a transaction nobody waits for ends the session as a protocol error', async () => {
    const fake = await startFakeRelp({ syslog: (c, f) => c.answer(f.txnr + 1000) });
    const { sink, lost } = await started(fake);
    await send(sink, batch(0, 2));
    await vi.waitFor(() => expect(lost()).toHaveLength(1));
    expect(lost()[0]?.[1]).toMatchObject({ code: 'ERELAY_RELP_PROTOCOL', message: expect.stringMatching(/answered transaction 1002, which is not waiting/) });
  });
});

describe('RELP sink: at rest', () => {
  it('no timer runs while nothing is unanswered: the first write arms it, the last answer lets it stop, the next write arms it again', async () => {
    const armed = vi.spyOn(globalThis, 'setInterval');
    const stopped = vi.spyOn(globalThis, 'clearInterval');
    try {
      const fake = await startFakeRelp({ syslog: () => {} });
      // ackTimeoutMs 2 s: a tick every 500 ms, and time enough to answer on a slow machine.
      const { sink, acked, lost } = await started(fake, { ackTimeoutMs: 2_000 });
      expect(armed).not.toHaveBeenCalled();
      expect(await send(sink, batch(0, 3))).toEqual({ status: 'sent' });
      expect(armed).toHaveBeenCalledTimes(1);
      const timer = armed.mock.results.at(-1)?.value as NodeJS.Timeout;
      await vi.waitFor(() => expect(fake.conns[0]?.syslog.length).toBe(3));
      (fake.conns[0] as Conn).answerOldest(3);
      await vi.waitFor(() => expect(acked()).toEqual([[0, 3]]));
      await vi.waitFor(() => expect(stopped).toHaveBeenCalledWith(timer), { timeout: 5_000 });
      // Unanswered again: watched again, so an intake that stops answering is still found out.
      expect(await send(sink, batch(3, 2))).toEqual({ status: 'sent' });
      expect(armed).toHaveBeenCalledTimes(2);
      await vi.waitFor(() => expect(lost().map(([, e]) => e.code)).toEqual(['ERELAY_ACK_TIMEOUT']), { timeout: 10_000 });
    } finally {
      armed.mockRestore();
      stopped.mockRestore();
    }
  });
});

describe('RELP sink: a lost session writes exactly the unanswered messages again, first and in order', () => {
  // The server answers the first `answered` with its closing (one write: no room opens before),
  // or resets without answering. The client's count is exact: what it wrote minus what was answered.
  it.each([
    ['serverclose', 4, (c: Conn) => c.socket.end(`${answersOf(c, 4)}0 serverclose 0\n`)],
    ['a plain close', 4, (c: Conn) => c.socket.end(answersOf(c, 4))],
    ['a reset', 0, (c: Conn) => c.socket.resetAndDestroy()],
  ])('%s mid-stream', async (_what, answered, close) => {
    const window = 10;
    const fake = await startFakeRelp({ syslog: (c) => c.syslog.length === window && close(c) });
    const { sink, lost, acked } = await started(fake, { window });
    expect(await send(sink, batch(0, 30))).toEqual({ status: 'sent' });
    await vi.waitFor(() => expect(lost()).toHaveLength(1));
    const first = fake.conns[0] as Conn;
    // Every byte the client wrote on the first session has reached the server.
    await vi.waitFor(() => expect(first.closed).toBe(true));
    expect(lost()[0]?.[1].code).toBe('ERELAY_CONNECTION_LOST');
    expect(first.syslog.length).toBeGreaterThanOrEqual(window);
    expect(numbers(first.syslog)).toEqual(range(0, first.syslog.length));
    expect(lost()[0]?.[2]).toBe(first.syslog.length - answered);
    expect(sink.unacknowledged).toBe(30);
    // The runner's empty batch after a lost session: the new session writes the unanswered first, then the rest.
    fake.script = {};
    expect(await send(sink, EMPTY)).toEqual({ status: 'sent' });
    await vi.waitFor(() => expect(acked()).toEqual([[0, 30]]));
    const second = fake.conns[1] as Conn;
    expect(numbers(second.syslog)).toEqual(range(answered, 30));
    // Byte for byte: the same messages as first written, numbered from txnr 2 on this session.
    const open = second.frames[0] as Seen;
    const expected = Buffer.concat([
      Buffer.from(`1 open ${open.data.length} `), open.data, Buffer.from('\n'),
      ...first.syslog.slice(answered).map((f, k) => Buffer.concat([Buffer.from(`${2 + k} syslog ${f.data.length} `), f.data, Buffer.from('\n')])),
    ]);
    expect(second.bytes().subarray(0, expected.length).toString('latin1')).toBe(expected.toString('latin1'));
    expect(fake.conns).toHaveLength(2);
    expect(sink.unacknowledged).toBe(0);
  });

  it('a session whose intake stops answering for ackTimeoutMs is dropped; what it had unanswered is written again', async () => {
    const fake = await startFakeRelp({ syslog: (c, f) => f.n < 2 && c.answer(f.txnr) });
    // Long enough that the two answers always come first, even on a slow machine.
    const { sink, lost, acked } = await started(fake, { ackTimeoutMs: 1_500 });
    await send(sink, batch(0, 5));
    await vi.waitFor(() => expect(lost()).toHaveLength(1), { timeout: 10_000 });
    expect(lost()[0]?.[1]).toMatchObject({ code: 'ERELAY_ACK_TIMEOUT', message: expect.stringMatching(/answered nothing for 1500 ms .* 3 message\(s\) waiting/) });
    expect(lost()[0]?.[2]).toBe(3);
    await vi.waitFor(() => expect(fake.conns[0]?.closedByClient).toBe(true));
    fake.script = {};
    await send(sink, EMPTY);
    await vi.waitFor(() => expect(acked()).toEqual([[0, 5]]));
    expect(numbers((fake.conns[1] as Conn).syslog)).toEqual([2, 3, 4]);
  });

  it('an answer too large for any rsp ends the session at once (not after the ack timeout)', async () => {
    const fake = await startFakeRelp({ syslog: (c, f) => c.socket.write(`${f.txnr} rsp 70000 200 ${'x'.repeat(69_996)}\n`) });
    const { sink, lost } = await started(fake);
    await send(sink, batch(0, 1));
    await vi.waitFor(() => expect(lost()).toHaveLength(1), { timeout: 10_000 });
    expect(lost()[0]?.[1]).toMatchObject({ code: 'ERELAY_RELP_PROTOCOL', message: expect.stringMatching(/70000-byte "rsp" frame/) });
    expect(lost()[0]?.[2]).toBe(1);
  });

  it('bytes that are not RELP in the same read as the open answer end the session at once', async () => {
    const fake = await startFakeRelp({ open: (c, f) => c.socket.write(`${f.txnr} rsp ${LIBRELP_OPEN.length} ${LIBRELP_OPEN}\ngarbage!\n`), syslog: () => {} });
    const { sink, lost } = await started(fake);
    await send(sink, batch(0, 2));
    await vi.waitFor(() => expect(lost()).toHaveLength(1), { timeout: 10_000 });
    expect(lost()[0]?.[1]).toMatchObject({ code: 'ERELAY_RELP_PROTOCOL', message: expect.stringMatching(/not RELP/) });
  });

  it('a serverclose in the same read as the open answer: connected, then lost (in that order); the batch, never written, goes back to the runner', async () => {
    let first = true;
    const fake = await startFakeRelp({
      open: (c, f) => {
        c.socket.write(`${f.txnr} rsp ${LIBRELP_OPEN.length} ${LIBRELP_OPEN}\n${first ? '0 serverclose 0\n' : ''}`);
        first = false;
      },
    });
    const { sink, reports } = await started(fake);
    const first3 = await send(sink, batch(0, 3));
    await vi.waitFor(() => expect(reports.map((r) => r[0])).toEqual(['connected', 'lost']));
    // Nothing of it was written: the runner keeps it (and retries it), not the sink.
    expect(first3.status).toBe('retryable');
    expect(sink.unacknowledged).toBe(0);
    expect(await send(sink, batch(0, 3))).toEqual({ status: 'sent' });
    await vi.waitFor(() => expect(reports.map((r) => r[0])).toEqual(['connected', 'lost', 'connected', 'acked']));
    expect(numbers((fake.conns[1] as Conn).syslog)).toEqual([0, 1, 2]);
  });
});

describe('RELP sink: an intake that loses every session', () => {
  it('holds no more than what it wrote: a batch that never went out is handed back to the runner, not piled up', async () => {
    // Answers the open, takes the window, answers nothing, and drops the session.
    const fake = await startFakeRelp({ syslog: (c) => c.socket.destroy() });
    const { sink } = await started(fake, { window: 4 });
    let retried = 0;
    for (let k = 0; k < 8; k++) {
      const r = await send(sink, batch(k * 10, 10));
      if (r.status === 'retryable') retried++;
      await vi.waitFor(() => expect(fake.conns.length).toBeGreaterThan(k));
    }
    expect(retried).toBeGreaterThan(0);
    // At most the batches that had something written: not one more per lost session.
    expect(sink.unacknowledged).toBeLessThanOrEqual(20);
  });
});

describe('RELP sink: stop and hand-over', () => {
  it('a stop at its deadline reports what was answered, and unconfirmed() names exactly the rest (for the caller to settle)', async () => {
    const answered = new Set([0, 1, 4]);
    const fake = await startFakeRelp({ syslog: (c, f) => answered.has(f.n) && c.answer(f.txnr) });
    const { sink, acked } = await started(fake);
    await send(sink, batch(0, 6));
    await vi.waitFor(() => expect((fake.conns[0] as Conn).syslog).toHaveLength(6));
    await vi.waitFor(() => expect((fake.conns[0] as Conn).outstanding.size).toBe(3));
    expect(await sink.stop(AbortSignal.timeout(300))).toBe(3);
    expect(acked()).toEqual([[0, 2], [4, 1]]);
    expect(sink.unconfirmed()).toEqual([[2, 2], [5, 1]]);
  });

  it('stop waits for every answer, then sends close and waits for its answer', async () => {
    const fake = await startFakeRelp({ syslog: () => {}, close: () => {} });
    const { sink, acked } = await started(fake);
    await send(sink, batch(0, 5));
    await send(sink, batch(5, 1));
    const c = fake.conns[0] as Conn;
    await vi.waitFor(() => expect(c.syslog).toHaveLength(6));
    let stopped: number | undefined;
    const stopping = sink.stop(AbortSignal.timeout(20_000)).then((n) => (stopped = n));
    c.answerOldest(5);
    await vi.waitFor(() => expect(acked()).toEqual([[0, 5]]));
    const beforeLastAnswer = c.frames.length;
    c.answerOldest(1);
    await vi.waitFor(() => expect(c.frames.at(-1)).toMatchObject({ command: 'close', txnr: 8, data: Buffer.alloc(0) }));
    // The close came after the last answer was sent, and alone.
    expect(c.frames.length).toBe(beforeLastAnswer + 1);
    expect(acked()).toEqual([[0, 5], [5, 1]]);
    expect(stopped).toBeUndefined();
    librelpClose(c, c.frames.at(-1) as Seen);
    expect(await stopping).toBe(0);
    expect(stopped).toBe(0);
  });

  it('a server that answers the close and waits for the client to close: stop closes at once, not at its deadline', async () => {
    const fake = await startFakeRelp({ close: (c, f) => c.answer(f.txnr) });
    const { sink, acked } = await started(fake);
    await send(sink, batch(0, 3));
    await vi.waitFor(() => expect(acked()).toEqual([[0, 3]]));
    const deadline = AbortSignal.timeout(5_000);
    expect(await sink.stop(deadline)).toBe(0);
    expect(deadline.aborted).toBe(false);
    const c = fake.conns[0] as Conn;
    expect(c.frames.at(-1)?.command).toBe('close');
    await vi.waitFor(() => expect(c.closedByClient).toBe(true));
  });

  it('stop with answers missing at its deadline: returns what is unanswered', async () => {
    const fake = await startFakeRelp({ syslog: (c, f) => f.n < 2 && c.answer(f.txnr) });
    const { sink } = await started(fake);
    await send(sink, batch(0, 5));
    await vi.waitFor(() => expect(fake.conns[0]?.outstanding.size).toBe(3));
    expect(await sink.stop(AbortSignal.timeout(300))).toBe(3);
  });

  // The server answers the first `answered` syslog transactions, then (once the stop waits for the
  // rest) drops the session. The test plays the runner: on the loss, an empty send.
  it.each([
    ['serverclose', 4, 60_000, (c: Conn) => c.socket.end(`${answersOf(c, 4)}0 serverclose 0\n`)],
    ['a reset', 0, 60_000, (c: Conn) => c.socket.resetAndDestroy()],
    ['no answer for ackTimeoutMs', 3, 1_500, undefined],
  ] as const)('a session lost while the stop waits for answers (%s): reported, and the empty send writes exactly the unanswered messages again on a new session; the stop ends with everything answered', async (_what, answered, ackTimeoutMs, drop) => {
    const fake = await startFakeRelp({ syslog: (c, f) => f.n < answered && drop === undefined && c.answer(f.txnr) });
    const { sink, reports, acked, lost } = await started(fake, { ackTimeoutMs });
    expect(await send(sink, batch(0, 10))).toEqual({ status: 'sent' });
    const first = fake.conns[0] as Conn;
    await vi.waitFor(() => expect(first.syslog).toHaveLength(10));
    let stopped: number | undefined;
    const stopping = sink.stop(AbortSignal.timeout(30_000)).then((n) => (stopped = n));
    // Stopping: a new batch is refused (the runner keeps it), nothing of it held.
    expect(await send(sink, batch(10, 2))).toMatchObject({ status: 'retryable', error: { code: 'ERELAY_SHUTDOWN' } });
    expect(sink.unacknowledged).toBe(10);
    drop?.(first);
    await vi.waitFor(() => expect(lost()).toHaveLength(1), { timeout: 10_000 });
    expect(lost()[0]?.[1].code).toBe(drop === undefined ? 'ERELAY_ACK_TIMEOUT' : 'ERELAY_CONNECTION_LOST');
    // Exactly what the session left unanswered (the runner counts it as resent).
    expect(lost()[0]?.[2]).toBe(10 - answered);
    await vi.waitFor(() => expect(first.closed).toBe(true));
    // The stop waits for the rewrite, which only the runner's empty send starts.
    expect(stopped).toBeUndefined();
    expect(fake.conns).toHaveLength(1);
    fake.script = {};
    expect(await send(sink, EMPTY)).toEqual({ status: 'sent' });
    expect(await stopping).toBe(0);
    const second = fake.conns[1] as Conn;
    expect(numbers(second.syslog)).toEqual(range(answered, 10));
    expect(second.syslog.map((f) => f.txnr)).toEqual(range(2, 12 - answered));
    // Closed once everything was answered, and closed by the client after the answer.
    expect(second.frames.at(-1)).toMatchObject({ command: 'close', txnr: 12 - answered });
    await vi.waitFor(() => expect(second.closed).toBe(true));
    // Every event acknowledged once, nothing refused, one loss, nothing left.
    expect(acked()).toEqual([[0, 10]]);
    expect(reports.filter((r) => r[0] === 'refused')).toEqual([]);
    expect(lost()).toHaveLength(1);
    expect(sink.unacknowledged).toBe(0);
    expect(sink.unconfirmed()).toEqual([]);
    expect(fake.conns).toHaveLength(2);
    // Stopped: even an empty send is refused now.
    expect(await send(sink, EMPTY)).toMatchObject({ status: 'retryable', error: { code: 'ERELAY_SHUTDOWN' } });
  });

  it('a session lost again while the stop writes the unanswered messages again: reported again, written again, until all are answered', async () => {
    const { fake, sink, acked, lost, stopping } = await lostWhileStopping(6, 2, 30_000);
    expect(lost()[0]?.[2]).toBe(4);
    // The second session answers one, then is reset.
    fake.script = { syslog: (c) => c.syslog.length === 4 && c.socket.end(`${answersOf(c, 1)}0 serverclose 0\n`) };
    await send(sink, EMPTY);
    await vi.waitFor(() => expect(lost()).toHaveLength(2));
    expect(lost()[1]?.[2]).toBe(3);
    fake.script = {};
    await send(sink, EMPTY);
    expect(await stopping).toBe(0);
    expect(fake.conns.map((c) => numbers(c.syslog))).toEqual([range(0, 6), [2, 3, 4, 5], [3, 4, 5]]);
    expect(acked()).toEqual([[0, 6]]);
    expect(sink.unacknowledged).toBe(0);
  });

  it('a stop whose lost session is not written again in time: at the deadline, what was answered is reported, the rest returned and named', async () => {
    const { fake, sink, acked, stopping } = await lostWhileStopping(5, 2, 500);
    // No empty send comes (the runner's backoff outlasts the deadline).
    expect(await stopping).toBe(3);
    expect(acked()).toEqual([[0, 2]]);
    expect(sink.unconfirmed()).toEqual([[2, 3]]);
    expect(fake.conns).toHaveLength(1);
  });

  it('with the runner: a session lost while the stop waits is written again after the backoff; every event acknowledged once, the rewrite counted as resent, nothing dropped', async () => {
    const fake = await startFakeRelp({ syslog: (c, f) => f.n < 4 && c.answer(f.txnr) });
    const queue = new BoundedQueue({ maxEvents: 1_000, maxBytes: 1 << 20, whenFull: 'block' });
    const b = batch(0, 10);
    queue.offer([...b.events], b.bytes, 'pause');
    const sink = relpSink(fake);
    let sinkStopping = false;
    const stopSink = sink.stop.bind(sink);
    sink.stop = (deadline, rewrite) => ((sinkStopping = true), stopSink(deadline, rewrite));
    const t = new FakeTelemetry();
    const runner = new SinkRunner({
      intake: 'i', queue, sink, batch: { maxEvents: 1_000, maxBytes: 1 << 20, lingerMs: 0 },
      backoff: { initialMs: 20, maxMs: 100 }, maxRetries: undefined, telemetry: t,
    });
    stops.push(() => fake.stop());
    await runner.start();
    await vi.waitFor(() => expect(fake.conns[0]?.syslog).toHaveLength(10));
    const first = fake.conns[0] as Conn;
    await vi.waitFor(() => expect(first.outstanding.size).toBe(6));
    queue.close();
    const stopping = runner.stop(AbortSignal.timeout(20_000));
    await vi.waitFor(() => expect(sinkStopping).toBe(true));
    fake.script = {};
    first.serverclose();
    expect(await stopping).toBe(0);
    expect(numbers((fake.conns[1] as Conn).syslog)).toEqual(range(4, 10));
    expect((fake.conns[1] as Conn).frames.at(-1)?.command).toBe('close');
    const sum = (m: Parameters<FakeTelemetry['args']>[0]): number => t.args(m).reduce((a, [n]) => a + (n as number), 0);
    expect(sum('acknowledged')).toBe(10);
    expect(sum('resent')).toBe(6);
    expect(t.args('dropped')).toEqual([]);
    expect(queue.pendingEvents).toBe(0);
    expect(sink.unacknowledged).toBe(0);
    expect(fake.conns).toHaveLength(2);
  });

  it('a stop with no runner to write again (rewrite: false, a background stop after a reload): a lost session ends it at once, no loss reported, the rest returned', async () => {
    const fake = await startFakeRelp({ syslog: () => {} });
    const { sink, acked, lost } = await started(fake);
    await send(sink, batch(0, 8));
    const first = fake.conns[0] as Conn;
    await vi.waitFor(() => expect(first.syslog).toHaveLength(8));
    // A deadline far away: the stop must not wait for it.
    const deadline = AbortSignal.timeout(60_000);
    const stopping = sink.stop(deadline, false);
    first.socket.end(`${answersOf(first, 3)}0 serverclose 0\n`);
    expect(await stopping).toBe(5);
    expect(deadline.aborted).toBe(false);
    expect(acked()).toEqual([[0, 3]]);
    expect(sink.unconfirmed()).toEqual([[3, 5]]);
    expect(lost()).toEqual([]);
    expect(await send(sink, EMPTY)).toMatchObject({ status: 'retryable', error: { code: 'ERELAY_SHUTDOWN' } });
    expect(fake.conns).toHaveLength(1);
  });

  it('a close not answered within ackTimeoutMs ends the stop (everything was answered), not its deadline', async () => {
    const fake = await startFakeRelp({ close: () => {} });
    const { sink, acked } = await started(fake, { ackTimeoutMs: 300 });
    await send(sink, batch(0, 3));
    await vi.waitFor(() => expect(acked()).toEqual([[0, 3]]));
    const deadline = AbortSignal.timeout(30_000);
    expect(await sink.stop(deadline)).toBe(0);
    expect(deadline.aborted).toBe(false);
    const c = fake.conns[0] as Conn;
    expect(c.frames.at(-1)?.command).toBe('close');
    await vi.waitFor(() => expect(c.closedByClient).toBe(true));
  });

  it('a reload reports what was answered, hands the unanswered messages to the next sink, which writes only those again and settles the rest', async () => {
    const answered = new Set([0, 1, 2, 3, 7]);
    const fake = await startFakeRelp({ syslog: (c, f) => answered.has(f.n) && c.answer(f.txnr) });
    const a = await started(fake);
    await send(a.sink, batch(0, 10));
    await vi.waitFor(() => expect(fake.conns[0]?.outstanding.size).toBe(5));
    const { state, events } = await a.sink.handOver(AbortSignal.timeout(300));
    expect(events).toBe(5);
    // What was answered counts at once (the books stay right through the reload).
    expect(a.acked()).toEqual([[0, 4], [7, 1]]);
    fake.script = {};
    const b = await started(fake);
    b.sink.adopt(state);
    // Only what the old sink did not report counts as unacknowledged here (the books stay right).
    expect(b.sink.unacknowledged).toBe(5);
    await send(b.sink, EMPTY);
    await vi.waitFor(() => expect(b.acked()).toEqual([[4, 3], [8, 2]]));
    expect(numbers((fake.conns[1] as Conn).syslog)).toEqual([4, 5, 6, 8, 9]);
    expect(b.sink.unacknowledged).toBe(0);
  });
});
