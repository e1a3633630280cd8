// The syslog sink alone against a loopback TLS peer: what proves a batch read, and what the
// kernel's buffer sizes mean for the proof distance.
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Batch } from '../../src/core/event.ts';
import type { SendResult, SinkEvents } from '../../src/core/contracts.ts';
import { Rfc5424Formatter } from '../../src/syslog/format.ts';
import { SyslogTlsSink } from '../../src/outputs/syslog/sink.ts';
import { unreadCapacityBytes } from '../../src/outputs/syslog/tcp-buffers.ts';
import { headerlessEvent } from '../../src/syslog/parse.ts';
import { startFaultyIntake, type FaultyIntake } from '../helpers/faulty-intake.ts';
import { TLS } from '../helpers/relay.ts';

let intake: FaultyIntake | undefined;
afterEach(async () => {
  await intake?.stop();
  intake = undefined;
});

const D = { pri: 13, hostname: 'h', appName: 'a', procId: '-' };

function batch(seq: number, n: number, size: number): Batch {
  const text = Array.from({ length: n }, (_, i) => `m${String(seq + i).padStart(8, '0')} ${'x'.repeat(size)}`);
  const buf = Buffer.from(text.join(''));
  let off = 0;
  const events = text.map((t) => {
    const e = headerlessEvent(buf, off, off + t.length, Date.now(), '', D);
    off += t.length;
    return e;
  });
  return { events, bytes: buf.length, seq };
}

/** What a sink reports: `some`, and nothing for the rest. */
function sinkEvents(some: Partial<SinkEvents>): SinkEvents {
  return { acknowledged: () => {}, connectionLost: () => {}, connected: () => {}, wrote: () => {}, cut: () => {}, refused: () => {}, ...some };
}

function sink(port: number, proofBytes: number, confirmAfterMs: number): SyslogTlsSink {
  return new SyslogTlsSink({
    host: '127.0.0.1', port, serverName: 'localhost', ca: readFileSync(`${TLS}ca.crt`), cert: undefined, key: undefined,
    connectTimeoutMs: 5_000, confirmAfterMs, proofBytes, writeTimeoutMs: 10_000,
    formatter: new Rfc5424Formatter('K', 'received'),
  });
}

describe('syslog sink', () => {
  it('acknowledges a batch once proofBytes more bytes were taken after it: only batches the peer has read', async () => {
    intake = await startFaultyIntake(() => ({ kind: 'read' }));
    const proof = unreadCapacityBytes();
    const s = sink(intake.port, proof, 60_000);
    const acked: [number, number][] = [];
    await s.start(sinkEvents({
      acknowledged: (seq, n) => {
        // At the moment of the acknowledgement, the peer has read the batch's last event.
        for (let i = read.size; i < intake!.received.length; i++) read.add(intake!.received[i]!.message.slice(0, 9));
        if (!read.has(`m${String(seq + n - 1).padStart(8, '0')}`)) unread.push(seq);
        acked.push([seq, n]);
      },
    }));
    const read = new Set<string>();
    const unread: number[] = [];
    const batches = Math.ceil((proof + 16 * 1024 * 1024) / (1000 * 560));
    for (let k = 0; k < batches; k++) expect((await s.send(batch(k * 1000, 1000, 500), AbortSignal.timeout(10_000))).status).toBe('sent');
    await vi.waitFor(() => expect(acked.length).toBeGreaterThan(batches - Math.ceil(proof / (1000 * 560)) - 3), { timeout: 20_000 });
    expect(unread).toEqual([]);
    // In order, whole batches.
    acked.forEach(([seq, n], i) => expect([seq, n]).toEqual([i * 1000, 1000]));
    // The last proofBytes wait for a proof (no time-based close within 60 s): the stop confirms them.
    expect(acked.length).toBeLessThan(batches);
    expect(s.unacknowledged).toBe((batches - acked.length) * 1000);
    expect(await s.stop(AbortSignal.timeout(10_000))).toBe(0);
    expect(acked).toHaveLength(batches);
    expect(intake.received).toHaveLength(batches * 1000);
  });

  it('a peer that never reads: nothing is acknowledged, the close is not answered, everything is kept for the next connection', async () => {
    intake = await startFaultyIntake(() => ({ kind: 'blackhole', resetAfterMs: 60_000 }));
    const s = sink(intake.port, unreadCapacityBytes(), 200);
    let acked = 0;
    const lost: number[] = [];
    await s.start(sinkEvents({ acknowledged: (_seq, n) => (acked += n), connectionLost: (_e, n) => lost.push(n) }));
    for (let k = 0; k < 20; k++) await s.send(batch(k * 100, 100, 150), AbortSignal.timeout(5_000));
    // Closed after resend_window_ms for proof; the peer never answers; write_timeout_ms is 10 s.
    await vi.waitFor(() => expect(intake!.connections).toBeGreaterThanOrEqual(1));
    expect(acked).toBe(0);
    expect(await s.stop(AbortSignal.timeout(1_000))).toBe(2_000);
    expect(acked).toBe(0);
  });

  it('the next connection resumes the TLS session the intake offered; a session it no longer knows is a full handshake', async () => {
    intake = await startFaultyIntake(() => ({ kind: 'read' }));
    const port = intake.port;
    // Every batch is closed for confirmation 100 ms after it was written: a connection per batch.
    const s = sink(port, unreadCapacityBytes(), 100);
    let acked = 0;
    const resumed: boolean[] = [];
    await s.start(sinkEvents({ acknowledged: (_seq, n) => (acked += n), connected: (r) => resumed.push(r === true) }));
    for (let k = 0; k < 3; k++) {
      expect((await s.send(batch(k * 10, 10, 50), AbortSignal.timeout(5_000))).status).toBe('sent');
      await vi.waitFor(() => expect(acked).toBe((k + 1) * 10), { timeout: 5_000 });
    }
    expect(resumed).toEqual([false, true, true]);
    // The intake restarted: new ticket keys, the relay's session is unknown to it.
    await intake.stop();
    const before = intake.received.length;
    intake = await startFaultyIntake(() => ({ kind: 'read' }), port);
    expect((await s.send(batch(30, 10, 50), AbortSignal.timeout(5_000))).status).toBe('sent');
    await vi.waitFor(() => expect(acked).toBe(40), { timeout: 5_000 });
    expect(resumed).toEqual([false, true, true, false]);
    expect(before + intake.received.length).toBe(40);
    expect(await s.stop(AbortSignal.timeout(5_000))).toBe(0);
  });
});

/** TLS peers under the test's control: each connection reads (and counts) until paused or told to discard. */
async function controlledPeer() {
  const tls = await import('node:tls');
  const sockets: import('node:tls').TLSSocket[] = [];
  let read = 0;
  const discarding = new Set<unknown>();
  const server = tls.createServer({ cert: readFileSync(`${TLS}server.crt`), key: readFileSync(`${TLS}server.key`) }, (s) => {
    sockets.push(s);
    s.on('data', (d: Buffer) => {
      if (!discarding.has(s)) read += d.length;
    });
    s.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as import('node:net').AddressInfo).port,
    sockets,
    get read() {
      return read;
    },
    discard: (s: unknown) => discarding.add(s),
    stop: () => new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    }),
  };
}

function edgeSink(port: number, confirmAfterMs: number, writeTimeoutMs: number): SyslogTlsSink {
  return new SyslogTlsSink({
    host: '127.0.0.1', port, serverName: 'localhost', ca: readFileSync(`${TLS}ca.crt`), cert: undefined, key: undefined,
    connectTimeoutMs: 5_000, confirmAfterMs, proofBytes: 1 << 30, writeTimeoutMs, formatter: new Rfc5424Formatter('K', 'received'),
  });
}

describe('syslog sink, edges', () => {
  it('after a lull longer than write_timeout_ms, a batch the intake takes a moment to read does not fail the connection', async () => {
    const peer = await controlledPeer();
    const s = edgeSink(peer.port, 60_000, 1_000);
    const lost: string[] = [];
    await s.start(sinkEvents({ connectionLost: (e) => lost.push(e.code) }));
    await s.send(batch(0, 10, 10), AbortSignal.timeout(5_000));
    await vi.waitFor(() => expect(peer.read).toBeGreaterThan(0));
    await new Promise((r) => setTimeout(r, 1_500)); // the lull
    peer.sockets[0]!.pause();
    // One batch larger than the kernel buffers: its write completes only once the peer reads again.
    const sending = s.send(batch(1_000, 80_000, 500), AbortSignal.timeout(10_000));
    await new Promise((r) => setTimeout(r, 400));
    peer.sockets[0]!.resume();
    await sending;
    await vi.waitFor(() => expect(peer.read).toBeGreaterThan(40_000_000), { timeout: 10_000 });
    expect(lost).toEqual([]);
    await s.stop(AbortSignal.timeout(5_000));
    await peer.stop();
  });

  it('at rest no timer runs: it stops once nothing is left to watch, and the next send arms it again', async () => {
    const peer = await controlledPeer();
    const armed = vi.spyOn(globalThis, 'setInterval');
    const stopped = vi.spyOn(globalThis, 'clearInterval');
    try {
      const s = edgeSink(peer.port, 100, 10_000);
      let acked = 0;
      await s.start(sinkEvents({ acknowledged: (_seq, n) => (acked += n) }));
      expect(armed).not.toHaveBeenCalled();
      await s.send(batch(0, 10, 10), AbortSignal.timeout(5_000));
      expect(armed).toHaveBeenCalledTimes(1);
      const timer = armed.mock.results.at(-1)?.value as NodeJS.Timeout;
      // Confirmed by a close (the proof distance is 1 GiB): the timer's work.
      await vi.waitFor(() => expect(acked).toBe(10), { timeout: 5_000 });
      await vi.waitFor(() => expect(stopped).toHaveBeenCalledWith(timer), { timeout: 5_000 });
      const arms = armed.mock.calls.length;
      await s.send(batch(10, 10, 10), AbortSignal.timeout(5_000));
      expect(armed.mock.calls.length).toBe(arms + 1);
      await vi.waitFor(() => expect(acked).toBe(20), { timeout: 5_000 });
      expect(await s.stop(AbortSignal.timeout(5_000))).toBe(0);
    } finally {
      armed.mockRestore();
      stopped.mockRestore();
      await peer.stop();
    }
  });

  it('a connect slower than the timer\'s last tick: the batch it then writes is still confirmed by a close (the timer is armed by the write)', async () => {
    const net = await import('node:net');
    const tls = await import('node:tls');
    // The intake starts its TLS handshake 600 ms after the TCP connection: many of the timer's ticks.
    const server = net.createServer((raw) => {
      setTimeout(() => {
        const t = new tls.TLSSocket(raw, { isServer: true, cert: readFileSync(`${TLS}server.crt`), key: readFileSync(`${TLS}server.key`) });
        t.on('data', () => {});
        t.on('error', () => {});
      }, 600);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const s = edgeSink((server.address() as import('node:net').AddressInfo).port, 100, 10_000);
      let acked = 0;
      await s.start(sinkEvents({ acknowledged: (_seq, n) => (acked += n) }));
      // A first batch, confirmed; the timer then stops with nothing to watch.
      expect((await s.send(batch(0, 10, 10), AbortSignal.timeout(5_000))).status).toBe('sent');
      await vi.waitFor(() => expect(acked).toBe(10), { timeout: 5_000 });
      await new Promise((r) => setTimeout(r, 300));
      // The next connect takes 600 ms; nothing is watched meanwhile.
      expect((await s.send(batch(10, 10, 10), AbortSignal.timeout(5_000))).status).toBe('sent');
      await vi.waitFor(() => expect(acked).toBe(20), { timeout: 3_000 });
      expect(await s.stop(AbortSignal.timeout(5_000))).toBe(0);
    } finally {
      server.close();
    }
  });

  it('an intake that closes its side on its own while ours is still being written confirms nothing', async () => {
    const peer = await controlledPeer();
    const s = edgeSink(peer.port, 100, 10_000);
    let acked = 0;
    const lost: number[] = [];
    await s.start(sinkEvents({ acknowledged: (_seq, n) => (acked += n), connectionLost: (_e, n) => lost.push(n) }));
    await s.send(batch(0, 10, 10), AbortSignal.timeout(5_000));
    await vi.waitFor(() => expect(peer.sockets).toHaveLength(1));
    const first = peer.sockets[0]!;
    first.pause();
    void s.send(batch(10, 80_000, 500), AbortSignal.timeout(10_000)); // more than the buffers hold
    // The relay closes this connection for confirmation (resend_window_ms 100); our close waits behind the batch.
    await new Promise((r) => setTimeout(r, 500));
    // The intake closes its side on its own (an idle timeout, a restart) and throws away what follows.
    peer.discard(first);
    first.end();
    first.resume();
    await vi.waitFor(() => expect(lost.reduce((a, b) => a + b, 0)).toBeGreaterThan(0), { timeout: 10_000 });
    expect(acked).toBe(0);
    await s.stop(AbortSignal.timeout(1_000));
    await peer.stop();
  });
});

/**
 * A TLS intake that keeps each message's id (m00000042) and answers a close with a close. The
 * connections it holds (`hold(i)`, i counted from 0) read nothing, and so answer no close, until
 * release() (or a reset, as an intake that crashed).
 */
async function idPeer(hold: (i: number) => boolean) {
  const net = await import('node:net');
  const tls = await import('node:tls');
  const ctx = tls.createSecureContext({ cert: readFileSync(`${TLS}server.crt`), key: readFileSync(`${TLS}server.key`) });
  const raws: import('node:net').Socket[] = [];
  const sockets: import('node:tls').TLSSocket[] = [];
  const ids: string[] = [];
  let released = false;
  let holding = false;
  const server = net.createServer((raw) => {
    const held = !released && hold(raws.length);
    raws.push(raw);
    raw.on('error', () => {});
    const s = new tls.TLSSocket(raw, { isServer: true, secureContext: ctx });
    sockets.push(s);
    s.on('error', () => {});
    if (held) s.once('secure', () => (holding = true));
    let text = '';
    s.setEncoding('latin1');
    s.on('data', (chunk: string) => {
      text += chunk;
      for (;;) {
        const sp = text.indexOf(' ');
        const n = Number(text.slice(0, sp));
        if (sp < 0 || text.length < sp + 1 + n) break;
        ids.push(/m\d{8}/.exec(text.slice(sp + 1, sp + 1 + n))?.[0] ?? '?');
        text = text.slice(sp + 1 + n);
      }
    });
    s.on('end', () => s.end());
    if (held) s.pause();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as import('node:net').AddressInfo).port,
    ids,
    get connections() {
      return raws.length;
    },
    /** A held connection is open (its handshake done on this side too) and reads nothing. */
    get holding() {
      return holding;
    },
    release: () => {
      released = true;
      for (const s of sockets) s.resume();
    },
    /** Resets a connection (a plain TCP reset, as an intake that crashed). */
    reset: (i = 0) => raws[i]!.resetAndDestroy(),
    stop: () => new Promise<void>((r) => {
      for (const raw of raws) raw.destroy();
      server.close(() => r());
    }),
  };
}

const EMPTY: Batch = { events: [], bytes: 0, seq: 0 };

describe('syslog sink, stop', () => {
  it.each([
    ['resets the connection', 10_000, 'ERELAY_CONNECTION_LOST'],
    ['does not answer the close within write_timeout_ms', 300, 'ERELAY_WRITE_TIMEOUT'],
  ])('the intake %s while the stop waits for its answer: reported as lost; an empty send writes the window again on a new connection, closed at once; the stop ends once it is confirmed', async (_what, writeTimeoutMs, code) => {
    const peer = await idPeer((i) => i === 0);
    const s = edgeSink(peer.port, 60_000, writeTimeoutMs);
    const acked: [number, number][] = [];
    const lost: [string, number][] = [];
    await s.start(sinkEvents({ acknowledged: (seq, n) => acked.push([seq, n]), connectionLost: (e, n) => lost.push([e.code, n]) }));
    expect((await s.send(batch(0, 100, 50), AbortSignal.timeout(5_000))).status).toBe('sent');
    expect(s.unacknowledged).toBe(100);
    await vi.waitFor(() => expect(peer.holding).toBe(true));
    let undelivered: number | undefined;
    const stopping = s.stop(AbortSignal.timeout(20_000)).then((n) => (undelivered = n));
    if (code === 'ERELAY_CONNECTION_LOST') peer.reset();
    await vi.waitFor(() => expect(lost).toEqual([[code, 100]]), { timeout: 5_000 });
    // Still waiting: for the window to be written again and confirmed, or the deadline.
    expect(undelivered).toBeUndefined();
    expect(acked).toEqual([]);
    // While stopping, new batches are refused; an empty send writes the window again.
    expect((await s.send(batch(100, 1, 10), AbortSignal.timeout(5_000))).status).toBe('retryable');
    expect((await s.send(EMPTY, AbortSignal.timeout(5_000))).status).toBe('sent');
    await stopping;
    expect(undelivered).toBe(0);
    expect(acked).toEqual([[0, 100]]);
    expect(s.unacknowledged).toBe(0);
    expect(peer.connections).toBe(2);
    expect(new Set(peer.ids).size).toBe(100);
    expect(peer.ids).toHaveLength(100);
    await peer.stop();
  });

  it('a window lost during the stop and not written again by the deadline: the stop returns it as unconfirmed; sends afterwards are refused', async () => {
    const peer = await idPeer((i) => i === 0);
    const s = edgeSink(peer.port, 60_000, 10_000);
    const lost: number[] = [];
    let acked = 0;
    await s.start(sinkEvents({ acknowledged: (_seq, n) => (acked += n), connectionLost: (_e, n) => lost.push(n) }));
    await s.send(batch(0, 100, 50), AbortSignal.timeout(5_000));
    await vi.waitFor(() => expect(peer.holding).toBe(true));
    const deadline = new AbortController();
    let undelivered: number | undefined;
    const stopping = s.stop(deadline.signal).then((n) => (undelivered = n));
    peer.reset();
    await vi.waitFor(() => expect(lost).toEqual([100]), { timeout: 5_000 });
    expect(undelivered).toBeUndefined();
    deadline.abort();
    await stopping;
    expect(undelivered).toBe(100);
    expect(s.unconfirmed()).toEqual([[0, 100]]);
    expect((await s.send(EMPTY, AbortSignal.timeout(5_000))).status).toBe('retryable');
    expect(acked).toBe(0);
    expect(lost).toEqual([100]); // the deadline's own close is not reported as a loss
    expect(peer.connections).toBe(1);
    await peer.stop();
  });

  it('a stop with no runner to write again (rewrite: false, a background stop after a reload): a lost window ends it at once, returned as unconfirmed', async () => {
    const peer = await idPeer((i) => i === 0);
    const s = edgeSink(peer.port, 60_000, 10_000);
    await s.start(sinkEvents({}));
    await s.send(batch(0, 100, 50), AbortSignal.timeout(5_000));
    await vi.waitFor(() => expect(peer.holding).toBe(true));
    // A deadline far away: the stop must not wait for it.
    const stopping = s.stop(AbortSignal.timeout(60_000), false);
    peer.reset();
    expect(await stopping).toBe(100);
    expect(s.unconfirmed()).toEqual([[0, 100]]);
    await peer.stop();
  });

  it('a hand-over does not wait for a lost window to be written again (the next sink writes it first), and reports no loss', async () => {
    const peer = await idPeer((i) => i === 0);
    const s = edgeSink(peer.port, 60_000, 10_000);
    const lost: number[] = [];
    await s.start(sinkEvents({ connectionLost: (_e, n) => lost.push(n) }));
    await s.send(batch(0, 100, 50), AbortSignal.timeout(5_000));
    await vi.waitFor(() => expect(peer.holding).toBe(true));
    const handing = s.handOver(AbortSignal.timeout(20_000));
    peer.reset();
    const { state, events } = await handing;
    expect(events).toBe(100);
    expect((state as { seq: number; events: number }[]).map((w) => [w.seq, w.events])).toEqual([[0, 100]]);
    expect(lost).toEqual([]);
    expect(s.unacknowledged).toBe(0);
    await peer.stop();
  });
});

describe('proof distance', () => {
  it('is this host\'s TCP send maximum plus its receive maximum plus 1 MiB, with Linux\'s defaults where /proc is unreadable', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sysctl-'));
    mkdirSync(join(dir, 'ipv4'));
    writeFileSync(join(dir, 'ipv4', 'tcp_wmem'), '4096\t16384\t4194304\n');
    writeFileSync(join(dir, 'ipv4', 'tcp_rmem'), '4096\t131072\t33554432\n');
    expect(unreadCapacityBytes(join(dir, 'ipv4'))).toBe(4194304 + 33554432 + 1048576);
    expect(unreadCapacityBytes(join(dir, 'missing'))).toBe((4 + 6 + 1) * 1048576);
    writeFileSync(join(dir, 'ipv4', 'tcp_rmem'), 'garbage\n');
    expect(unreadCapacityBytes(join(dir, 'ipv4'))).toBe(4194304 + 6 * 1048576 + 1048576);
    // intake_receive_buffer_bytes in place of this host's receive maximum.
    expect(unreadCapacityBytes(join(dir, 'ipv4'), 64 * 1048576)).toBe(4194304 + 64 * 1048576 + 1048576);
  });
});

function windowSink(port: number, windowBytes: number, writeTimeoutMs = 10_000): SyslogTlsSink {
  return new SyslogTlsSink({
    host: '127.0.0.1', port, serverName: 'localhost', ca: readFileSync(`${TLS}ca.crt`), cert: undefined, key: undefined,
    connectTimeoutMs: 5_000, confirmAfterMs: 60_000, proofBytes: unreadCapacityBytes(), windowBytes, writeTimeoutMs,
    formatter: new Rfc5424Formatter('K', 'received'),
  });
}

/**
 * Sends 100-event batches to a peer holding every connection until one waits at the window's bound: the bytes written
 * (the peer confirms nothing yet) reach the window and that send has not returned.
 */
async function fillWindow(s: SyslogTlsSink, window: number, wrote: () => number): Promise<{ pending: Promise<SendResult>; k: number }> {
  for (let k = 0; k < 20; k++) {
    const sending = s.send(batch(k * 100, 100, 50), AbortSignal.timeout(30_000));
    const first = await Promise.race([sending, new Promise<'waiting'>((r) => setTimeout(() => r('waiting'), 300))]);
    if (first !== 'waiting') {
      expect(first.status).toBe('sent');
      continue;
    }
    // Not returned yet: at the bound, or only a connect slower than 300 ms (a busy machine).
    if (wrote() >= window) return { pending: sending, k: k + 1 };
    expect((await sending).status).toBe('sent');
  }
  throw new Error('the window never filled');
}

describe('syslog sink, a resend window smaller than the proof distance', () => {
  it('a connection holding half the window is closed for confirmation and a new one takes the next batches: all confirmed, each after the intake read it, never more than the window held', async () => {
    const peer = await idPeer(() => false);
    const window = 256 * 1024;
    const s = windowSink(peer.port, window);
    const acked: [number, number][] = [];
    const unread: number[] = [];
    let written = 0;
    let frame = Infinity;
    let maxHeld = 0;
    await s.start(sinkEvents({
      acknowledged: (seq, n) => {
        if (!peer.ids.includes(`m${String(seq + n - 1).padStart(8, '0')}`)) unread.push(seq);
        acked.push([seq, n]);
      },
      wrote: (bytes) => {
        frame = Math.min(frame, bytes / 100);
      },
    }));
    const batches = 40;
    for (let k = 0; k < batches; k++) {
      // No time-based close (60 s) and no proof by volume (tens of MB): only the window's closes confirm.
      expect((await s.send(batch(k * 100, 100, 500), AbortSignal.timeout(10_000))).status).toBe('sent');
      written += 100;
      maxHeld = Math.max(maxHeld, s.unacknowledged);
    }
    await vi.waitFor(() => expect(acked.reduce((a, [, n]) => a + n, 0)).toBe(batches * 100), { timeout: 20_000 });
    expect(unread).toEqual([]);
    acked.forEach(([seq, n], i) => expect([seq, n]).toEqual([i * 100, 100]));
    // 40 batches of ~60 KB: a close every 128 KiB and what came while the next connection opened.
    expect(peer.connections).toBeGreaterThanOrEqual(4);
    // At most the window, and the batch that crossed it, unconfirmed at any time.
    expect(maxHeld * frame).toBeLessThanOrEqual(window + 100 * frame);
    expect(written).toBe(batches * 100);
    expect(new Set(peer.ids).size).toBe(batches * 100);
    expect(peer.ids).toHaveLength(batches * 100);
    expect(await s.stop(AbortSignal.timeout(5_000))).toBe(0);
    await peer.stop();
  });

  it('at the bound, a send waits for a confirmation (not a failure), and goes on once the intake reads', async () => {
    const peer = await idPeer(() => true);
    const window = 64 * 1024;
    const s = windowSink(peer.port, window);
    const lost: number[] = [];
    let acked = 0;
    let wrote = 0;
    await s.start(sinkEvents({ acknowledged: (_seq, n) => (acked += n), connectionLost: (_e, n) => lost.push(n), wrote: (b) => (wrote += b) }));
    // ~14 KB per batch: the fifth or so reaches the bound; the intake reads nothing yet.
    const { pending, k } = await fillWindow(s, window, () => wrote);
    expect(peer.connections).toBeGreaterThanOrEqual(2);
    expect(acked).toBe(0);
    peer.release();
    expect((await pending).status).toBe('sent');
    expect(await s.stop(AbortSignal.timeout(10_000))).toBe(0);
    expect(acked).toBe(k * 100);
    expect(lost).toEqual([]);
    expect(new Set(peer.ids).size).toBe(k * 100);
    await peer.stop();
  });

  it('a connection that fails while a send waits at the bound: the send is retried after the backoff, and the next one writes what it held again', async () => {
    const peer = await idPeer(() => true);
    const window = 64 * 1024;
    const s = windowSink(peer.port, window);
    const lost: [string, number][] = [];
    let acked = 0;
    let wrote = 0;
    await s.start(sinkEvents({ acknowledged: (_seq, n) => (acked += n), connectionLost: (e, n) => lost.push([e.code, n]), wrote: (b) => (wrote += b) }));
    const { pending, k } = await fillWindow(s, window, () => wrote);
    peer.reset(0);
    const r = await pending;
    expect(r.status).toBe('retryable');
    expect(r.status === 'retryable' && r.error.code).toBe('ERELAY_UNCONFIRMED');
    expect(lost.map(([code]) => code)).toEqual(['ERELAY_CONNECTION_LOST']);
    // The runner's retry of the same batch: what the first connection held goes first.
    peer.release();
    expect((await s.send(batch((k - 1) * 100, 100, 50), AbortSignal.timeout(20_000))).status).toBe('sent');
    // The stop closes the last connection: its answer confirms what is left.
    expect(await s.stop(AbortSignal.timeout(10_000))).toBe(0);
    expect(acked).toBe(k * 100);
    // Everything arrived; what the reset connection held at least once more.
    expect(new Set(peer.ids).size).toBe(k * 100);
    await peer.stop();
  });

  it('a stop while a send waits at the bound: the send returns (the batch stays queued), and the stop counts what the intake never confirmed', async () => {
    const peer = await idPeer(() => true);
    const window = 64 * 1024;
    const s = windowSink(peer.port, window);
    let acked = 0;
    let wrote = 0;
    await s.start(sinkEvents({ acknowledged: (_seq, n) => (acked += n), wrote: (b) => (wrote += b) }));
    const { pending, k } = await fillWindow(s, window, () => wrote);
    const stopping = s.stop(AbortSignal.timeout(500));
    const r = await pending;
    expect(r.status === 'retryable' && r.error.code).toBe('ERELAY_SHUTDOWN');
    // Everything written but the waiting batch: the intake read nothing, so nothing is confirmed.
    expect(await stopping).toBe((k - 1) * 100);
    expect(acked).toBe(0);
    await peer.stop();
  });
});
