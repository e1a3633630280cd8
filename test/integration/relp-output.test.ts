// The RELP output against the real thing: rsyslog's imrelp (librelp) over TLS, writing each
// message it answers to a file (%rawmsg%, synchronously: a "200" means the line is written). The
// relay runs as its own process. Checked: every field and the key, byte for byte and by the strict
// RFC 5424 grammar; imrelp stopped (and killed) and restarted under load: nothing lost, duplicates
// within the window per restart and counted as resent; kill -9 of the relay with a disk queue:
// nothing lost. Every test checks the books: received = sent + dropped + queued + unacknowledged.
import { readFileSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { tempDir, track } from '../helpers/cleanup.ts';
import { freePort, sendTcp, startRsyslog, type Peer } from '../helpers/peers.ts';
import { exited, startRelayProcess, type CliProcess } from '../helpers/process.ts';
import { TEST_KEY, TLS } from '../helpers/relay.ts';
import { assertRfc5424Frame } from '../helpers/rfc5424-grammar.ts';

/** imrelp over TLS (OpenSSL, no client certificate asked) on `port`; each message as received, one per line, in out.log. */
function imrelp(port: number): (dir: string) => string {
  return (dir) => `global(maxMessageSize="256k")
module(load="imrelp" tls.tlslib="openssl")
input(type="imrelp" address="127.0.0.1" port="${port}" tls="on" tls.caCert="${TLS}ca.crt" tls.myCert="${TLS}server.crt" tls.myPrivKey="${TLS}server.key" maxDataSize="256k" ruleset="out")
template(name="raw" type="string" string="%rawmsg%\\n")
ruleset(name="out" queue.type="Direct") { action(type="omfile" file="${dir}/out.log" template="raw") }`;
}

interface Setup {
  readonly dir: string;
  readonly relpPort: number;
  readonly tcpPort: number;
  readonly metricsPort: number;
  readonly config: string;
  readonly out: string;
}

/** Ports, a relay configuration (TCP in, RELP out over TLS to imrelp) and where imrelp writes. */
async function setup(output = '', queue = ''): Promise<Setup> {
  const dir = tempDir('relp-output-');
  const [relpPort, tcpPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
  const config = join(dir, 'relay.yaml');
  writeFileSync(config, `log_level: info
metrics: { address: 127.0.0.1, port: ${metricsPort} }
shutdown_timeout_ms: 2000
data_dir: ${dir}
intakes:
  - name: t
    intake_key: ${TEST_KEY}
    inputs:
      - { type: tcp, address: 127.0.0.1, port: ${tcpPort}, name: in }
    output:
      type: relp
      host: 127.0.0.1
      port: ${relpPort}
      ca_file: ${TLS}ca.crt
      backoff: { initial_ms: 50, max_ms: 500 }
${output}
${queue}
`);
  return { dir, relpPort, tcpPort, metricsPort, config, out: join(dir, 'out.log') };
}

async function startImrelp(s: Setup): Promise<Peer> {
  const peer = track(startRsyslog(imrelp(s.relpPort), s.dir));
  await peer.listening(s.relpPort);
  return peer;
}

async function startRelayProc(s: Setup): Promise<CliProcess> {
  const r = startRelayProcess(s.config);
  await vi.waitFor(() => expect(r.output()).toContain('intake-relay started'), { timeout: 20_000, interval: 50 });
  return r;
}

/** Sum of a metric's series (whose labels include `labels`) on the relay's /metrics. */
async function metric(s: Setup, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${s.metricsPort}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = m[2] ?? '';
    if (Object.entries(labels).every(([k, v]) => have.includes(`${k}="${v}"`))) sum += Number(m[3]);
  }
  return sum;
}

/** The books of intake t: what came in (and what a disk queue held at start) against where it went. */
async function books(s: Setup) {
  const received = (await metric(s, 'intake_relay_events_received_total')) + (await metric(s, 'intake_relay_disk_queue_recovered_events_total'));
  const sent = await metric(s, 'intake_relay_events_sent_total');
  const dropped = await metric(s, 'intake_relay_events_dropped_total');
  const queued = await metric(s, 'intake_relay_queue_events');
  const unacked = await metric(s, 'intake_relay_output_unacked_events');
  return { received, sent, dropped, queued, unacked, balanced: received === sent + dropped + queued + unacked };
}

const lines = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(0, -1) : []);

/** Events of one size: BSD lines carrying their number, so that imrelp's file can be counted by its size. */
const body = (i: number): string => `ev${String(i).padStart(7, '0')} ${'r'.repeat(80)}`;
const bsd = (from: number, to: number): string => {
  let s = '';
  for (let i = from; i < to; i++) s += `<14>Nov 23 10:00:00 loadhost app: ${body(i)}\n`;
  return s;
};
/** Lines written so far, from the file's size (every line the same length). */
function written(file: string, lineLength: number): number {
  return existsSync(file) ? Math.floor(statSync(file).size / lineLength) : 0;
}

/** How many times each event number arrived, from imrelp's file. */
function arrivals(file: string): Map<number, number> {
  const c = new Map<number, number>();
  for (const l of lines(file)) {
    const m = / ev(\d{7}) /.exec(l);
    if (!m) throw new Error(`unexpected line ${JSON.stringify(l.slice(0, 200))}`);
    const n = Number(m[1]);
    c.set(n, (c.get(n) ?? 0) + 1);
  }
  return c;
}

describe('RELP output to rsyslog imrelp over TLS', () => {
  it('every field and the key arrive as sent, each line RFC 5424 by the strict grammar; the key is never logged', async () => {
    const s = await setup('      timestamp: source');
    await startImrelp(s);
    const relay = await startRelayProc(s);
    const big = 'B'.repeat(200_000); // within imrelp's maxDataSize (256k) and the input's 256000
    const sent = [
      '<165>1 2026-11-23T10:00:00.123456+01:00 host.example.com my-app 4242 ID47 [ex@32473 a="1" b="x\\"y\\]z"][ex2@32473 c="2"] first ünïcödé — 字',
      '<13>1 2026-11-23T09:00:00Z h2 - - - - no SD here',
      '<191>1 2026-02-28T23:59:59.9Z h3 a3 p3 m3 [only@1 k="v"]',
      `<14>1 2026-11-23T10:00:01Z big app - - - ${big}`,
    ];
    const expected = [
      { pri: 165, timestamp: '2026-11-23T10:00:00.123456+01:00', hostname: 'host.example.com', appName: 'my-app', procId: '4242', msgId: 'LOG', extraSd: '[ex@32473 a="1" b="x\\"y\\]z"][ex2@32473 c="2"]', msg: 'first ünïcödé — 字' },
      { pri: 13, timestamp: '2026-11-23T09:00:00Z', hostname: 'h2', appName: '', procId: '', msgId: 'LOG', extraSd: '', msg: 'no SD here' },
      { pri: 191, timestamp: '2026-02-28T23:59:59.9Z', hostname: 'h3', appName: 'a3', procId: 'p3', msgId: 'LOG', extraSd: '[only@1 k="v"]', msg: '' },
      { pri: 14, timestamp: '2026-11-23T10:00:01Z', hostname: 'big', appName: 'app', procId: '', msgId: 'LOG', extraSd: '', msg: big },
    ];
    await sendTcp(s.tcpPort, sent.map((l) => `${l}\n`).join(''));
    await vi.waitFor(() => expect(lines(s.out)).toHaveLength(sent.length), { timeout: 20_000, interval: 50 });
    const got = lines(s.out).map((l) => assertRfc5424Frame(Buffer.from(l)));
    expect(got).toEqual(expected.map((e) => ({ ...e, intakeKey: TEST_KEY })));
    // Byte for byte: the header the relay writes, the key element first, then the source's SD and MSG.
    expect(lines(s.out)[0]).toBe(`<165>1 2026-11-23T10:00:00.123456+01:00 host.example.com my-app 4242 LOG [SEKOIA@53288 intake_key="${TEST_KEY}"][ex@32473 a="1" b="x\\"y\\]z"][ex2@32473 c="2"] first ünïcödé — 字`);
    await vi.waitFor(async () => expect(await books(s)).toMatchObject({ received: 4, sent: 4, dropped: 0, queued: 0, unacked: 0, balanced: true }), { timeout: 10_000 });
    expect(await metric(s, 'intake_relay_events_resent_total')).toBe(0);
    relay.proc.kill('SIGTERM');
    await exited(relay.proc);
    expect(relay.output()).not.toContain(TEST_KEY);
  }, 60_000);

  it('imrelp stopped, killed and restarted under load: every event arrives; duplicates within the window per restart, counted as resent', async () => {
    const window = 64;
    const s = await setup(`      window: ${window}\n      ack_timeout_ms: 5000`);
    let peer = await startImrelp(s);
    const relay = await startRelayProc(s);
    const total = 30_000;
    const lineLength = Buffer.byteLength(`<14>1 2026-11-23T10:00:00.000Z loadhost app - LOG [SEKOIA@53288 intake_key="${TEST_KEY}"] ${body(0)}\n`);
    // All at once: what the relay cannot deliver while imrelp is down waits in its queue (or in TCP).
    const sending = sendTcp(s.tcpPort, bsd(0, total));
    const restarts: NodeJS.Signals[] = ['SIGTERM', 'SIGKILL', 'SIGTERM'];
    for (const [k, signal] of restarts.entries()) {
      // Mid-stream: some of the load delivered since the last restart, most of it still to come.
      const at = Math.floor(((k + 1) * total) / (restarts.length + 2));
      await vi.waitFor(() => expect(written(s.out, lineLength)).toBeGreaterThanOrEqual(at), { timeout: 30_000, interval: 20 });
      await peer.stop(signal);
      peer = await startImrelp(s);
    }
    await sending;
    await vi.waitFor(() => expect(arrivals(s.out).size).toBe(total), { timeout: 40_000, interval: 200 });
    const c = arrivals(s.out);
    for (let i = 0; i < total; i++) expect(c.get(i), `event ${i}`).toBeGreaterThanOrEqual(1);
    const duplicates = lines(s.out).length - total;
    await vi.waitFor(async () => expect(await books(s)).toMatchObject({ received: total, sent: total, dropped: 0, queued: 0, unacked: 0, balanced: true }), { timeout: 15_000 });
    expect(duplicates).toBeLessThanOrEqual(window * restarts.length);
    expect(duplicates).toBeLessThanOrEqual(await metric(s, 'intake_relay_events_resent_total'));
    // The restarts were noticed as lost sessions (not as refusals).
    expect(await metric(s, 'intake_relay_output_errors_total')).toBeGreaterThan(0);
    expect(await metric(s, 'intake_relay_events_dropped_total', { reason: 'rejected' })).toBe(0);
    relay.proc.kill('SIGTERM');
    await exited(relay.proc);
  }, 90_000);

  it('with a disk queue, kill -9 of the relay mid-stream and a restart: every event arrives', async () => {
    const s = await setup('', '    queue: { type: disk, memory_events: 2000, fsync_interval_ms: 100 }');
    await startImrelp(s);
    let relay = await startRelayProc(s);
    const half = 20_000;
    const lineLength = Buffer.byteLength(`<14>1 2026-11-23T10:00:00.000Z loadhost app - LOG [SEKOIA@53288 intake_key="${TEST_KEY}"] ${body(0)}\n`);
    await sendTcp(s.tcpPort, bsd(0, half));
    // Killed once it has read every event (they are in the disk queue) and has begun to deliver them.
    await vi.waitFor(async () => expect(await metric(s, 'intake_relay_events_received_total')).toBe(half), { timeout: 20_000, interval: 20 });
    await vi.waitFor(() => expect(written(s.out, lineLength)).toBeGreaterThan(0), { timeout: 20_000, interval: 10 });
    relay.proc.kill('SIGKILL');
    await exited(relay.proc);
    const atKill = written(s.out, lineLength);
    relay = await startRelayProc(s);
    await sendTcp(s.tcpPort, bsd(half, 2 * half));
    await vi.waitFor(() => expect(arrivals(s.out).size).toBe(2 * half), { timeout: 40_000, interval: 200 });
    const c = arrivals(s.out);
    for (let i = 0; i < 2 * half; i++) expect(c.get(i), `event ${i}`).toBeGreaterThanOrEqual(1);
    // Only what was written before the kill can come twice.
    expect(lines(s.out).length - 2 * half).toBeLessThanOrEqual(atKill);
    // The second process's books: what it recovered from disk and what it received, all delivered.
    await vi.waitFor(async () => expect(await books(s)).toMatchObject({ dropped: 0, queued: 0, unacked: 0, balanced: true }), { timeout: 15_000 });
    const b = await books(s);
    expect(b.received).toBeGreaterThanOrEqual(half);
    expect(b.sent).toBe(b.received);
    relay.proc.kill('SIGTERM');
    await exited(relay.proc);
  }, 90_000);
});
