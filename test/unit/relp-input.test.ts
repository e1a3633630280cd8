// The RELP input's sessions against a raw RELP client speaking bytes (librelp doc/relp.html): the
// open's offers, answers in command order, refusals (500) and protocol errors, and the promise the
// input makes: "rsp 200" only once the event is safe (memory queue: delivered; disk queue: fsynced).
// The test is the output: it takes batches from the queue and settles them when it chooses.
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import type { Routing, Target, TlsFiles } from '../../src/core/component.ts';
import type { ProxyProtocolSettings } from '../../src/core/config-values.ts';
import { DiskQueue } from '../../src/core/disk-queue.ts';
import { messageText, type LogEvent } from '../../src/core/event.ts';
import { BoundedQueue } from '../../src/core/queue.ts';
import { type EventQueue } from '../../src/core/event-queue.ts';
import { FrameBuilder } from '../../src/inputs/frame-builder.ts';
import { RelpInput } from '../../src/inputs/relp/input.ts';
import { MAX_REPLY_BYTES, RelpServerSession } from '../../src/inputs/relp/session.ts';
import { inletTelemetry } from '../../src/pipeline/instruments.ts';
import { relpInputTelemetry } from '../../src/inputs/syslog-instruments.ts';
import { FilterSet } from '../../src/routing/filters.ts';
import { Inlet } from '../../src/routing/inlet.ts';
import { Metrics } from '../../src/telemetry/metrics.ts';
import { tempDir, track } from '../helpers/cleanup.ts';
import { NO_SIGHTINGS } from '../helpers/frame-input.ts';
import { metricValue, TLS } from '../helpers/relay.ts';

const OFFERS = 'relp_version=0\nrelp_software=test-client\ncommands=syslog';

/** A whole RELP frame, its DATALEN counted in octets. */
function frame(txnr: number, command: string, data: string | Buffer = ''): Buffer {
  const body = typeof data === 'string' ? Buffer.from(data) : data;
  return body.length === 0 ? Buffer.from(`${txnr} ${command} 0\n`) : Buffer.concat([Buffer.from(`${txnr} ${command} ${body.length} `), body, Buffer.from('\n')]);
}
const open = (txnr = 1, offers = OFFERS): Buffer => frame(txnr, 'open', offers);
const msg = (i: number): string => `<13>1 2024-01-01T00:00:00Z host app - - - message ${i} é`;
const syslog = (txnr: number, text = msg(txnr)): Buffer => frame(txnr, 'syslog', text);

interface Answer {
  readonly txnr: number;
  readonly command: string;
  readonly data: string;
  /** The queue's settledBelow and safeBelow when the answer arrived. */
  readonly settled: number;
  readonly safe: number;
}

/** A RELP client on a raw socket: writes bytes as told, parses every frame it gets back. */
class Client {
  readonly socket: net.Socket;
  readonly answers: Answer[] = [];
  /** The server ended its side (FIN), and the connection closed. */
  ended = false;
  closed = false;
  #buf = Buffer.alloc(0);
  readonly #queue: EventQueue | undefined;
  readonly connected: Promise<void>;

  /** `allowHalfOpen`: a client that keeps its side open after the server's end (plain TCP); `tls`: over TLS. */
  constructor(port: number, queue?: EventQueue, o: { allowHalfOpen?: boolean; tls?: tls.ConnectionOptions } = {}) {
    this.#queue = queue;
    this.socket = o.tls
      ? tls.connect({ port, host: '127.0.0.1', servername: 'localhost', ...o.tls })
      : net.connect({ port, host: '127.0.0.1', allowHalfOpen: o.allowHalfOpen ?? false });
    this.socket.setNoDelay(true);
    this.connected = new Promise((resolve, reject) => {
      this.socket.once(o.tls ? 'secureConnect' : 'connect', resolve);
      this.socket.once('error', reject);
    });
    this.socket.on('error', () => {});
    this.socket.on('data', (d: Buffer) => this.#parse(Buffer.concat([this.#buf, d])));
    this.socket.on('end', () => (this.ended = true));
    this.socket.on('close', () => (this.closed = true));
    track({ stop: () => this.socket.destroy() });
  }

  #parse(buf: Buffer): void {
    for (;;) {
      const m = /^(\d+) ([A-Za-z]+) (\d+)[ \n]/.exec(buf.toString('latin1', 0, Math.min(buf.length, 64)));
      if (!m) break;
      const len = Number(m[3]);
      const start = m[0].length - (len === 0 ? 1 : 0);
      if (buf.length < start + len + 1) break;
      expect(buf[start + len], 'a frame ends with LF').toBe(0x0a);
      const q = this.#queue;
      this.answers.push({ txnr: Number(m[1]), command: m[2] as string, data: buf.toString('utf8', start, start + len), settled: q?.settledBelow ?? -1, safe: q?.safeBelow ?? -1 });
      buf = buf.subarray(start + len + 1);
    }
    this.#buf = Buffer.from(buf);
  }

  write(data: Buffer | string): Promise<void> {
    return new Promise((resolve, reject) => this.socket.write(data, (err) => (err ? reject(err) : resolve())));
  }

  /** The answer to transaction `txnr` ("rsp" frames only). */
  rsp(txnr: number): Answer | undefined {
    return this.answers.find((a) => a.command === 'rsp' && a.txnr === txnr);
  }

  /** "open", answered 200. */
  async open(): Promise<void> {
    await this.connected;
    await this.write(open());
    await vi.waitFor(() => expect(this.rsp(1)?.data).toMatch(/^200 /));
  }

  /** The answers' "txnr code" (or "txnr command" for other frames), in the order they came. */
  get summary(): string[] {
    return this.answers.map((a) => `${a.txnr} ${a.command === 'rsp' ? a.data.slice(0, 3) || 'rsp' : a.command}`);
  }
}

interface Setup {
  readonly input: RelpInput;
  readonly queue: EventQueue;
  readonly metrics: Metrics;
  readonly port: number;
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  client(): Client;
}

interface SetupOptions {
  readonly queue?: EventQueue;
  /** A shared listener: more intakes' queues, and which of them each event goes to. */
  readonly routes?: { readonly queues: readonly EventQueue[]; route(e: LogEvent): number };
  readonly maxMessageBytes?: number;
  /** Default here: delivered, the mode whose answers wait (the queue's own mechanics); `auto` is tested apart. */
  readonly respondWhen?: 'auto' | 'queued' | 'delivered';
  readonly idleTimeoutMs?: number;
  readonly maxConnections?: number;
  readonly tls?: TlsFiles;
  readonly proxy?: ProxyProtocolSettings;
}

async function setup(o: SetupOptions = {}): Promise<Setup> {
  const metrics = new Metrics(false);
  const queue = o.queue ?? new BoundedQueue({ maxEvents: 100_000, maxBytes: 1 << 26, whenFull: 'block' });
  const target = (q: EventQueue, k: number): Target => ({ intake: `i${k}`, intakeKey: '', queue: q, filters: new FilterSet([]) });
  const routing: Routing = o.routes ? { targets: o.routes.queues.map(target), router: o.routes } : { targets: [target(queue, 0)] };
  const sender = new Inlet(routing, { mode: 'wait' }, inletTelemetry(metrics, 'in'));
  const telemetry = relpInputTelemetry(metrics, pino({ level: 'silent' }), o.routes ? '' : 'i0', 'in', NO_SIGHTINGS);
  const input = new RelpInput(
    {
      label: 'in', address: '127.0.0.1', port: 0, maxConnections: o.maxConnections ?? 1000, idleTimeoutMs: o.idleTimeoutMs ?? 0,
      maxMessageBytes: o.maxMessageBytes ?? 1024, respondWhen: o.respondWhen ?? 'delivered', tls: o.tls, defaults: { pri: 13, hostname: '', appName: '', procId: '' }, proxy: o.proxy,
    },
    sender,
    telemetry,
  );
  await input.start();
  track({ stop: async () => { await input.stop(); await input.finish(100); input.dispose(); } });
  return {
    input, queue, metrics, port: input.port,
    metric: (name, labels = {}) => metricValue(metrics, name, labels),
    client: () => new Client(input.port, queue),
  };
}

const NEVER = new AbortController().signal;

/** The output, played by the test: takes up to `n` events and settles them (delivered). */
async function deliver(queue: EventQueue, n = 100_000): Promise<string[]> {
  // take() waits for data: ask only when there is some (what was taken is always settled here).
  if (queue.pendingEvents === 0) return [];
  const batch = await queue.take({ maxEvents: n, maxBytes: 1 << 30, lingerMs: 0 }, NEVER);
  if (!batch) return [];
  queue.release(batch);
  queue.settle(batch.seq, batch.events.length);
  return batch.events.map(messageText);
}

/**
 * Lets whatever the server would write now reach the client: a whole open/answer round trip on
 * another session, which needs the server's event loop to run several turns after this point.
 */
async function roundTrip(s: Setup): Promise<void> {
  const other = s.client();
  await other.open();
  other.socket.destroy();
}

describe('RELP input: the session', () => {
  it('answers "open" with its offers: relp_version and commands=syslog', async () => {
    const s = await setup();
    const c = s.client();
    await c.open();
    const a = c.rsp(1)!;
    const [status, ...offers] = a.data.split('\n');
    expect(status).toBe('200 OK');
    expect(offers).toContain('relp_version=0');
    expect(offers).toContain('commands=syslog');
    expect(offers.find((l) => l.startsWith('relp_software='))).toMatch(/^relp_software=intake-relay,/);
    // Opens are counted apart from messages.
    expect(await s.metric('intake_relay_relp_sessions_opened_total')).toBe(1);
    expect(await s.metric('intake_relay_relp_answers_total', { code: '200' })).toBe(0);
  });

  it.each([
    ['without relp_version', 'relp_software=x\ncommands=syslog'],
    ['without commands=syslog', 'relp_version=0\ncommands=other'],
    ['without any offers', ''],
  ])('refuses an "open" %s (500); the session stays closed to syslog', async (_what, offers) => {
    const s = await setup();
    const c = s.client();
    await c.connected;
    await c.write(Buffer.concat([open(1, offers), syslog(2)]));
    await vi.waitFor(() => expect(c.summary).toEqual(['1 500', '2 500']));
    expect(s.queue.pendingEvents).toBe(0);
    expect(await s.metric('intake_relay_relp_answers_total', { code: '500' })).toBe(2);
  });

  it('answers a "syslog" before "open" with 500 (nothing queued); the session can still open', async () => {
    const s = await setup();
    const c = s.client();
    await c.connected;
    await c.write(syslog(1));
    await vi.waitFor(() => expect(c.summary).toEqual(['1 500']));
    expect(c.rsp(1)!.data).toMatch(/^500 .*not open/);
    await c.write(Buffer.concat([open(2), syslog(3)]));
    await vi.waitFor(() => expect(s.queue.pendingEvents).toBe(1));
    expect(await deliver(s.queue)).toEqual([msg(3).slice(msg(3).indexOf('message'))]);
    await vi.waitFor(() => expect(c.summary).toEqual(['1 500', '2 200', '3 200']));
  });

  it('one read with open, syslog, an unknown command and close: answers in command order, then serverclose and the end', async () => {
    const s = await setup();
    const c = s.client();
    await c.connected;
    await c.write(Buffer.concat([open(1), syslog(2), syslog(3), frame(4, 'bogus', 'x'), syslog(5), frame(6, 'close')]));
    await vi.waitFor(() => expect(s.queue.pendingEvents).toBe(3));
    await roundTrip(s);
    // Nothing of that read is answered before its events are delivered: the answers keep their order.
    expect(c.answers).toEqual([]);
    await deliver(s.queue);
    await vi.waitFor(() => expect(c.closed).toBe(true));
    expect(c.summary).toEqual(['1 200', '2 200', '3 200', '4 500', '5 200', '6 rsp', '0 serverclose']);
    expect(c.rsp(4)!.data).toMatch(/^500 .*bogus.*not supported/);
    expect(c.rsp(6)!.data).toBe('');
    expect(c.ended).toBe(true);
    // Messages (and refusals) only; the two opens (this session's and the round trip's) apart.
    expect(await s.metric('intake_relay_relp_answers_total', { code: '200' })).toBe(3);
    expect(await s.metric('intake_relay_relp_sessions_opened_total')).toBe(2);
    expect(await s.metric('intake_relay_relp_answers_total', { code: '500' })).toBe(1);
  });

  it('close: answered "rsp 0", then the serverclose hint, then the server ends the connection', async () => {
    const s = await setup();
    const c = s.client();
    await c.open();
    await c.write(frame(2, 'close'));
    await vi.waitFor(() => expect(c.ended).toBe(true));
    expect(c.answers.slice(1).map((a) => [a.txnr, a.command, a.data])).toEqual([[2, 'rsp', ''], [0, 'serverclose', '']]);
  });

  it('a stream that is not RELP: what came before the bad bytes is answered, then serverclose and the end; counted', async () => {
    const s = await setup();
    const c = s.client();
    await c.open();
    await c.write(Buffer.concat([syslog(2), Buffer.from('GET / HTTP/1.1\r\n\r\n')]));
    await vi.waitFor(() => expect(s.queue.pendingEvents).toBe(1));
    await deliver(s.queue);
    await vi.waitFor(() => expect(c.closed).toBe(true));
    expect(c.summary).toEqual(['1 200', '2 200', '0 serverclose']);
    expect(await s.metric('intake_relay_framing_errors_total', { reason: 'relp_protocol' })).toBe(1);
    // A DATALEN that does not match its data is no RELP either.
    const d = s.client();
    await d.open();
    await d.write(Buffer.from('2 syslog 3 toolong\n'));
    await vi.waitFor(() => expect(d.closed).toBe(true));
    expect(d.summary).toEqual(['1 200', '0 serverclose']);
    expect(await s.metric('intake_relay_framing_errors_total', { reason: 'relp_protocol' })).toBe(2);
    expect(s.queue.pendingEvents).toBe(0);
  });

  it('a message over max_message_bytes: answered 500 and counted too_large; the next one is accepted, also when the big one is split over reads', async () => {
    const s = await setup({ maxMessageBytes: 1024 });
    const c = s.client();
    await c.open();
    await c.write(Buffer.concat([syslog(2, `<13>${'x'.repeat(2000)}`), syslog(3)]));
    await vi.waitFor(() => expect(s.queue.pendingEvents).toBe(1));
    await deliver(s.queue);
    await vi.waitFor(() => expect(c.summary).toEqual(['1 200', '2 500', '3 200']));
    expect(c.rsp(2)!.data).toMatch(/^500 .*1024/);
    // The big one's data arrives in several reads: skipped, never held; the stream stays in step.
    const big = syslog(4, `<13>${'y'.repeat(5000)}`);
    for (let at = 0; at < big.length; at += 700) {
      await c.write(big.subarray(at, at + 700));
      await new Promise((r) => setImmediate(r));
    }
    await c.write(syslog(5));
    await vi.waitFor(() => expect(s.queue.pendingEvents).toBe(1));
    expect(await deliver(s.queue)).toEqual(['message 5 é']);
    await vi.waitFor(() => expect(c.summary).toEqual(['1 200', '2 500', '3 200', '4 500', '5 200']));
    expect(await s.metric('intake_relay_framing_errors_total', { reason: 'too_large' })).toBe(2);
    expect(await s.metric('intake_relay_events_dropped_total', { reason: 'too_large' })).toBe(2);
    expect(await s.metric('intake_relay_relp_answers_total', { code: '500' })).toBe(2);
  });

  it('frames split anywhere over reads (one byte at a time, then odd sizes): every message once, answered in order', async () => {
    const s = await setup();
    const c = s.client();
    await c.connected;
    const stream = Buffer.concat([open(1), ...Array.from({ length: 30 }, (_, i) => syslog(i + 2)), frame(32, 'close')]);
    let at = 0;
    for (const size of [1, 1, 1, 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53]) {
      await c.write(stream.subarray(at, at + size));
      at += size;
      await new Promise((r) => setImmediate(r));
    }
    while (at < stream.length) {
      await c.write(stream.subarray(at, at + 97));
      at += 97;
      await new Promise((r) => setImmediate(r));
    }
    const got: string[] = [];
    await vi.waitFor(async () => {
      got.push(...(await deliver(s.queue)));
      expect(c.closed).toBe(true);
    });
    expect(got).toEqual(Array.from({ length: 30 }, (_, i) => `message ${i + 2} é`));
    expect(c.summary).toEqual(['1 200', ...Array.from({ length: 30 }, (_, i) => `${i + 2} 200`), '32 rsp', '0 serverclose']);
  });

  it('many sessions at once: each answered in its own order, every message queued once', async () => {
    const s = await setup();
    const sessions = 40;
    const per = 50;
    const clients = Array.from({ length: sessions }, () => s.client());
    await Promise.all(clients.map((c) => c.open()));
    await Promise.all(clients.map(async (c, k) => {
      for (let i = 0; i < per; i += 10) {
        await c.write(Buffer.concat(Array.from({ length: 10 }, (_, j) => syslog(i + j + 2, `<13>s${k} m${i + j}`))));
      }
    }));
    const got: string[] = [];
    await vi.waitFor(async () => {
      got.push(...(await deliver(s.queue)));
      expect(got).toHaveLength(sessions * per);
      for (const c of clients) expect(c.answers).toHaveLength(per + 1);
    }, { timeout: 20_000 });
    expect(new Set(got).size).toBe(sessions * per);
    for (const c of clients) expect(c.summary).toEqual(['1 200', ...Array.from({ length: per }, (_, i) => `${i + 2} 200`)]);
  });

  it('a full queue pauses the reading (no drop): every message is answered 200 once the output drains it', async () => {
    const queue = new BoundedQueue({ maxEvents: 20, maxBytes: 1 << 20, whenFull: 'drop_newest' });
    const s = await setup({ queue });
    const c = s.client();
    await c.open();
    const n = 300;
    // One message per write, as omrelp sends them: many reads, each pushing the queue past its limit.
    const writing = (async () => {
      for (let i = 0; i < n; i++) await c.write(syslog(i + 2));
    })();
    await vi.waitFor(async () => expect(await s.metric('intake_relay_input_pauses_total')).toBeGreaterThan(0));
    const got: string[] = [];
    await vi.waitFor(async () => {
      got.push(...(await deliver(queue, 7)));
      expect(c.answers).toHaveLength(n + 1);
    }, { timeout: 20_000, interval: 5 });
    await writing;
    expect(got).toEqual(Array.from({ length: n }, (_, i) => `message ${i + 2} é`));
    expect(c.summary.slice(1)).toEqual(Array.from({ length: n }, (_, i) => `${i + 2} 200`));
    expect(await s.metric('intake_relay_events_dropped_total')).toBe(0);
  });

  it('refusals piling up behind a message not yet safe pause the reading (memory bounded); it resumes once they are written', async () => {
    const metrics = new Metrics(false);
    const queue = new BoundedQueue({ maxEvents: 100, maxBytes: 1 << 20, whenFull: 'block' });
    const sender = new Inlet({ targets: [{ intake: 'i0', intakeKey: '', queue, filters: new FilterSet([]) }] }, { mode: 'wait' }, inletTelemetry(metrics, 'in'));
    const telemetry = relpInputTelemetry(metrics, pino({ level: 'silent' }), 'i0', 'in', NO_SIGHTINGS);
    const builder = new FrameBuilder(sender, telemetry, { pri: 13, hostname: '', appName: '', procId: '' });
    // The socket as the session sees it; the test reads into the session only while it is not paused, as a real socket does.
    const written: Buffer[] = [];
    const socket = Object.assign(new EventEmitter(), {
      paused: false,
      write: (b: Buffer) => written.push(b) > 0,
      pause: () => void (socket.paused = true),
      resume: () => void (socket.paused = false),
      end: () => {},
    });
    const session = new RelpServerSession(socket as unknown as net.Socket, '10.0.0.1', { maxMessageBytes: 1024, respondWhen: 'delivered' }, sender, builder, telemetry);
    session.read(open());
    // Its answer waits until the output delivers it; so does every answer after it.
    session.read(syslog(2));
    await vi.waitFor(() => expect(written).toHaveLength(1));
    // Commands that take no queue space, 1,000 a read: without a bound, each read would add its answers to memory.
    const perRead = 1000;
    const junk = Buffer.from('3 nope 0\n'.repeat(perRead));
    const reads = 100;
    let taken = 0;
    while (taken < reads && !socket.paused) {
      session.read(junk);
      taken++;
    }
    expect(socket.paused).toBe(true);
    // Counted as the other pauses are.
    expect(await metricValue(metrics, 'intake_relay_input_pauses_total')).toBe(1);
    const refusal = '3 rsp 32 500 command "nope" not supported\n';
    expect(taken).toBe(Math.floor(MAX_REPLY_BYTES / (perRead * refusal.length)) + 1);
    // A turn of the event loop later (the session's answer steps ran as far as they can): still paused, nothing written.
    await new Promise((resolve) => setImmediate(resolve));
    expect(socket.paused).toBe(true);
    expect(written).toHaveLength(1);
    // Delivered: its answer and the refusals behind it are written, and the reading resumes.
    expect(await deliver(queue)).toEqual(['message 2 é']);
    await vi.waitFor(() => expect(socket.paused).toBe(false));
    while (taken < reads) {
      if (socket.paused) await session.answered;
      else {
        session.read(junk);
        taken++;
      }
    }
    await session.answered;
    expect(session.unanswered).toBe(0);
    const out = Buffer.concat(written).toString();
    expect(out).toMatch(/^1 rsp \d+ 200 OK\n[^]*\n2 rsp 6 200 OK\n3 rsp 32 500 command "nope" not supported\n/);
    expect(out.split(refusal)).toHaveLength(reads * perRead + 1);
    expect(await metricValue(metrics, 'intake_relay_relp_answers_total', { code: '500' })).toBe(reads * perRead);
    expect(await metricValue(metrics, 'intake_relay_relp_answers_total', { code: '200' })).toBe(1);
    expect(await metricValue(metrics, 'intake_relay_relp_sessions_opened_total')).toBe(1);
  });
});

describe('RELP input: "rsp 200" only once the message is safe', () => {
  it('respond_when: auto (the default) with a memory queue answers once queued, as rsyslog imrelp does', async () => {
    const s = await setup({ respondWhen: 'auto' });
    const c = s.client();
    await c.open();
    await c.write(Buffer.concat([syslog(2), syslog(3)]));
    await vi.waitFor(() => expect(c.summary).toEqual(['1 200', '2 200', '3 200']));
    expect(c.answers.map((a) => a.settled)).toEqual([0, 0, 0]);
    expect(s.queue.pendingEvents).toBe(2);
    expect(await s.metric('intake_relay_relp_answers_total', { code: '200' })).toBe(2);
  });

  it('respond_when: delivered with a memory queue: a message is answered only after the output delivered it; later answers, even refusals, wait their turn', async () => {
    const s = await setup({ respondWhen: 'delivered' });
    const c = s.client();
    await c.open();
    // Each write its own read: the server sees three transactions, then a command it refuses.
    for (const [k, data] of [syslog(2), syslog(3), syslog(4)].entries()) {
      await c.write(data);
      await vi.waitFor(() => expect(s.queue.nextSeq).toBe(k + 1));
    }
    await c.write(frame(5, 'nope'));
    await roundTrip(s);
    await roundTrip(s);
    expect(c.summary).toEqual(['1 200']);
    expect(await deliver(s.queue, 1)).toEqual(['message 2 é']);
    await vi.waitFor(() => expect(c.summary).toEqual(['1 200', '2 200']));
    await roundTrip(s);
    expect(c.summary).toEqual(['1 200', '2 200']);
    expect(await deliver(s.queue)).toEqual(['message 3 é', 'message 4 é']);
    await vi.waitFor(() => expect(c.summary).toEqual(['1 200', '2 200', '3 200', '4 200', '5 500']));
    // When each answer arrived, the events of its transaction (and all before) were delivered.
    expect(c.answers.slice(1).map((a) => a.settled)).toEqual([1, 3, 3, 3]);
  });

  it('respond_when: queued answers as soon as the message is queued, delivered or not', async () => {
    const s = await setup({ respondWhen: 'queued' });
    const c = s.client();
    await c.open();
    await c.write(Buffer.concat([syslog(2), syslog(3)]));
    await vi.waitFor(() => expect(c.summary).toEqual(['1 200', '2 200', '3 200']));
    expect(c.answers.map((a) => a.settled)).toEqual([0, 0, 0]);
    expect(s.queue.pendingEvents).toBe(2);
  });

  it('respond_when: auto with a disk queue: a message is answered once written and fsynced, without waiting for delivery', async () => {
    const dir = tempDir('relp-disk-');
    let synced = 0;
    // A periodic fsync far away: what answers them is the group commit untilSafe asks for.
    const queue = new DiskQueue(
      { dir, maxBytes: 1 << 24, whenFull: 'block', memoryEvents: 1000, memoryBytes: 1 << 20, segmentBytes: 1 << 20, fsyncIntervalMs: 60_000 },
      { onError: (err) => { throw err; }, onLost: () => {}, onWrite: () => {}, onSync: () => synced++ },
    );
    track({ stop: async () => { queue.close(); await queue.finish(); } });
    const s = await setup({ queue, respondWhen: 'auto' });
    const c = s.client();
    await c.open();
    const clients = [c, s.client(), s.client()];
    await Promise.all(clients.slice(1).map((x) => x.open()));
    await Promise.all(clients.map((x, k) => x.write(Buffer.concat([syslog(2, `<13>c${k} a`), syslog(3, `<13>c${k} b`)]))));
    await vi.waitFor(() => clients.forEach((x) => expect(x.summary).toEqual(['1 200', '2 200', '3 200'])));
    for (const x of clients) {
      for (const a of x.answers.slice(1)) {
        // Nothing was delivered; yet each message's transaction was on stable storage when answered.
        expect(a.settled).toBe(0);
        expect(a.safe).toBeGreaterThanOrEqual(2);
      }
    }
    expect(queue.safeBelow).toBe(6);
    expect(queue.settledBelow).toBe(0);
  });
});

describe('RELP input: listening', () => {
  it('as a shared listener whose other intake\'s queue closed (removed by a reload): nothing of the read is answered 200; serverclose, so the sender resends', async () => {
    const kept = new BoundedQueue({ maxEvents: 100_000, maxBytes: 1 << 26, whenFull: 'block' });
    const removed = new BoundedQueue({ maxEvents: 100_000, maxBytes: 1 << 26, whenFull: 'block' });
    const s = await setup({ queue: kept, routes: { queues: [kept, removed], route: (e) => (messageText(e).endsWith('1 é') ? 1 : 0) }, respondWhen: 'queued' });
    const c = s.client();
    await c.open();
    removed.close();
    await c.write(Buffer.concat([syslog(2), syslog(11)]));
    await vi.waitFor(() => expect(c.ended).toBe(true));
    expect(c.summary).toEqual(['1 200', '0 serverclose']);
    expect(await s.metric('intake_relay_events_dropped_total', { intake: 'i1', reason: 'shutdown' })).toBe(1);
  });

  it('as a shared listener: a read whose events go to two intakes is answered once both have them safe', async () => {
    const queues = [0, 1].map(() => new BoundedQueue({ maxEvents: 1000, maxBytes: 1 << 20, whenFull: 'block' }));
    const s = await setup({ routes: { queues, route: (e) => (e.hostname === 'b' ? 1 : 0) } });
    const c = s.client();
    await c.open();
    await c.write(Buffer.concat([syslog(2, '<13>1 - a app - - - to a'), syslog(3, '<13>1 - b app - - - to b')]));
    await vi.waitFor(() => expect(queues.map((q) => q.pendingEvents)).toEqual([1, 1]));
    expect(await deliver(queues[0]!)).toEqual(['to a']);
    await roundTrip(s);
    expect(c.summary).toEqual(['1 200']);
    expect(await deliver(queues[1]!)).toEqual(['to b']);
    await vi.waitFor(() => expect(c.summary).toEqual(['1 200', '2 200', '3 200']));
  });

  it('over mutual TLS: a client with a certificate of the CA is served (also when it half-closes); one without is refused and counted', async () => {
    const s = await setup({ tls: { cert: readFileSync(`${TLS}server.crt`), key: readFileSync(`${TLS}server.key`), ca: readFileSync(`${TLS}ca.crt`) } });
    const ca = readFileSync(`${TLS}ca.crt`);
    const c = new Client(s.port, s.queue, { tls: { ca, cert: readFileSync(`${TLS}client.crt`), key: readFileSync(`${TLS}client.key`) } });
    await c.open();
    await c.write(Buffer.concat([syslog(2), syslog(3)]));
    c.socket.end();
    await vi.waitFor(() => expect(s.queue.pendingEvents).toBe(2));
    expect(await deliver(s.queue)).toEqual(['message 2 é', 'message 3 é']);
    await vi.waitFor(() => expect(c.closed).toBe(true));
    expect(c.summary).toEqual(['1 200', '2 200', '3 200']);
    const anonymous = new Client(s.port, s.queue, { tls: { ca } });
    anonymous.socket.on('secureConnect', () => anonymous.socket.write(open()));
    await vi.waitFor(() => expect(anonymous.closed).toBe(true));
    expect(anonymous.answers).toEqual([]);
    await vi.waitFor(async () => expect(await s.metric('intake_relay_input_connections_rejected_total', { reason: 'tls_handshake' })).toBe(1));
  });

  it('max_connections: a session over the limit is refused and counted', async () => {
    const s = await setup({ maxConnections: 2 });
    const [a, b] = [s.client(), s.client()];
    await Promise.all([a.open(), b.open()]);
    const over = s.client();
    await vi.waitFor(() => expect(over.closed).toBe(true));
    expect(over.answers).toEqual([]);
    expect(await s.metric('intake_relay_input_connections_rejected_total', { reason: 'max_connections' })).toBe(1);
    // Room again once one leaves.
    a.socket.destroy();
    await vi.waitFor(async () => expect(await s.metric('intake_relay_input_connections')).toBe(1));
    await s.client().open();
  });
});

describe('RELP input: stopping and closing', () => {
  it('a sender that half-closes after its messages still gets their answers, then the end', async () => {
    const s = await setup();
    const c = s.client();
    await c.open();
    await c.write(Buffer.concat([syslog(2), syslog(3)]));
    c.socket.end();
    await vi.waitFor(() => expect(s.queue.pendingEvents).toBe(2));
    await deliver(s.queue);
    await vi.waitFor(() => expect(c.closed).toBe(true));
    expect(c.summary).toEqual(['1 200', '2 200', '3 200']);
  });

  it('stop: no more reading; answers that become due within the grace are written, then serverclose', async () => {
    const s = await setup();
    const c = s.client();
    const d = s.client();
    await Promise.all([c.open(), d.open()]);
    await c.write(syslog(2));
    await vi.waitFor(() => expect(s.queue.pendingEvents).toBe(1));
    await s.input.stop();
    // Sent after the stop: not read, never answered (the sender sends it again elsewhere).
    await d.write(syslog(2, '<13>late'));
    const finishing = s.input.finish(10_000);
    expect(await deliver(s.queue)).toEqual(['message 2 é']);
    await finishing;
    await vi.waitFor(() => expect(c.closed && d.closed).toBe(true));
    expect(c.summary).toEqual(['1 200', '2 200', '0 serverclose']);
    expect(d.summary).toEqual(['1 200', '0 serverclose']);
    expect(s.queue.pendingEvents).toBe(0);
  });

  it('stop: an answer not safe within the grace is never sent (serverclose instead), and a second close does no harm', async () => {
    const s = await setup();
    const c = s.client();
    await c.open();
    await c.write(Buffer.concat([syslog(2), frame(3, 'close')]));
    await vi.waitFor(() => expect(s.queue.pendingEvents).toBe(1));
    await s.input.stop();
    await s.input.finish(200);
    await vi.waitFor(() => expect(c.closed).toBe(true));
    expect(c.summary).toEqual(['1 200', '0 serverclose']);
    // Delivered after the session is gone: its answer is not written to a closed socket.
    await deliver(s.queue);
    expect(await s.metric('intake_relay_relp_answers_total', { code: '200' })).toBe(0);
    expect(await s.metric('intake_relay_relp_sessions_opened_total')).toBe(1);
  });

  it('idle_timeout_ms closes an idle session (counted), not one waiting for its answers', async () => {
    const s = await setup({ idleTimeoutMs: 300 });
    const waiting = s.client();
    await waiting.open();
    await waiting.write(syslog(2));
    await vi.waitFor(() => expect(s.queue.pendingEvents).toBe(1));
    // Quiet since after the other's last traffic: its timeout comes later, so once it is closed the
    // waiting session's first timeout has come too, and passed.
    const idle = s.client();
    await idle.open();
    await vi.waitFor(() => expect(idle.closed).toBe(true), { timeout: 10_000 });
    expect(idle.summary).toEqual(['1 200', '0 serverclose']);
    expect(await s.metric('intake_relay_input_connections_rejected_total', { reason: 'idle_timeout' })).toBe(1);
    expect(waiting.closed).toBe(false);
    await deliver(s.queue);
    // Answered, then idle in turn: closed too.
    await vi.waitFor(() => expect(waiting.closed).toBe(true), { timeout: 10_000 });
    expect(waiting.summary).toEqual(['1 200', '2 200', '0 serverclose']);
    expect(await s.metric('intake_relay_input_connections_rejected_total', { reason: 'idle_timeout' })).toBe(2);
  });

  it('idle_timeout_ms: a session that does not close its side after serverclose is cut at the next timeout, counted once', async () => {
    const s = await setup({ idleTimeoutMs: 200 });
    const stubborn = new Client(s.port, s.queue, { allowHalfOpen: true });
    await stubborn.open();
    await vi.waitFor(() => expect(stubborn.ended).toBe(true), { timeout: 10_000 });
    expect(await s.metric('intake_relay_input_connections')).toBe(1);
    // The client cannot tell (its side stays open): the server's count of connections can.
    await vi.waitFor(async () => expect(await s.metric('intake_relay_input_connections')).toBe(0), { timeout: 10_000 });
    expect(stubborn.summary).toEqual(['1 200', '0 serverclose']);
    expect(await s.metric('intake_relay_input_connections_rejected_total', { reason: 'idle_timeout' })).toBe(1);
  });
});
