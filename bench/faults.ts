// `npm run faults [-- blackhole|storm|restarts|kill9]`: the fault scenarios of the reliability
// issue, with the relay as its own process and a misbehaving TLS intake on loopback. Prints what
// the intake really read (lost, duplicated) beside what the relay counted. For reading, never
// asserted by tests. RELAY_ROOT=<another checkout> runs that checkout's relay (before/after).
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFaultyIntake, type Behaviour, type FaultyIntake } from '../test/helpers/faulty-intake.ts';
import { freePort } from './ports.ts';
import { useRunTempDir } from './temp-dir.ts';

const root = process.env.RELAY_ROOT ?? new URL('..', import.meta.url).pathname;
const TLS = new URL('../test/fixtures/tls/', import.meta.url).pathname;
const scenarios = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const want = (s: string): boolean => scenarios.length === 0 || scenarios.includes(s);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});
useRunTempDir('faults-run-');

interface Relay {
  readonly proc: ChildProcess;
  readonly tcpPort: number;
  metric(name: string): Promise<number>;
}

async function startRelay(dir: string, intakePort: number, input: string, queue = '', tcpPort?: number, metricsPort?: number): Promise<Relay> {
  tcpPort ??= await freePort();
  metricsPort ??= await freePort();
  writeFileSync(join(dir, 'relay.yaml'), `log_level: error
data_dir: ${dir}
metrics: { address: 127.0.0.1, port: ${metricsPort} }
intakes:
  - name: f
    intake_key: FaultKey0123456789abcdefABCDEF01
    inputs:
${input.replace('TCP_PORT', String(tcpPort))}
    output: { type: syslog, host: 127.0.0.1, port: ${intakePort}, server_name: localhost, ca_file: ${TLS}ca.crt }
${queue}`);
  const proc = spawn(process.execPath, [join(root, 'src/main.ts'), 'run', '-c', join(dir, 'relay.yaml')], { stdio: ['ignore', 'inherit', 'inherit'] });
  children.add(proc);
  proc.once('exit', () => children.delete(proc));
  const port = metricsPort;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/readyz`)).status > 0) break;
    } catch {
      if (i > 300) throw new Error('relay did not start');
      await sleep(50);
    }
  }
  return {
    proc,
    tcpPort,
    async metric(name) {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      let sum = 0;
      for (const line of text.split('\n')) if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
      return sum;
    },
  };
}

const line = (i: number): string => `<14>Nov 23 10:00:00 host app: seq=${String(i).padStart(7, '0')} ${'x'.repeat(150)}\n`;
const seqOf = (m: string): string => m.slice(0, 11);

/** Writes `total` events at `perSecond` over one TCP connection (batches every 50 ms). */
async function paced(port: number, total: number, perSecond: number): Promise<void> {
  const s = net.connect(port, '127.0.0.1');
  await new Promise((r) => s.once('connect', r));
  const t0 = Date.now();
  let i = 0;
  while (i < total) {
    const due = Math.min(total, Math.floor(((Date.now() - t0) / 1000) * perSecond));
    let chunk = '';
    for (; i < due; i++) chunk += line(i);
    if (chunk) s.write(chunk);
    await sleep(50);
  }
  await new Promise<void>((r) => s.end(r));
}

type Received = FaultyIntake['received'];

function tally(received: Received, total: number): { unique: number; lost: number; duplicates: number } {
  const unique = new Set(received.map((m) => seqOf(m.message))).size;
  return { unique, lost: total - unique, duplicates: received.length - unique };
}

/** Waits until every event arrived (or the timeout), then 3 s more for late duplicates and confirmations. */
async function settle(received: () => Received, total: number, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (tally(received(), total).unique < total && Date.now() < until) await sleep(200);
  await sleep(3_000);
}

const tcpInput = '      - { type: tcp, address: 127.0.0.1, port: TCP_PORT }';

async function blackhole(): Promise<void> {
  // The case: 60,000 events at 6k/s; the intake completes the handshake, reads nothing for 15 s, then resets.
  const stallMs = 15_000;
  const total = 60_000;
  const intake = await startFaultyIntake((_i, t): Behaviour => (t < stallMs ? { kind: 'blackhole', resetAfterMs: stallMs - t } : { kind: 'read' }));
  const t0 = Date.now();
  const relay = await startRelay(mkdtempSync(join(tmpdir(), 'faults-')), intake.port, tcpInput);
  await paced(relay.tcpPort, total, 6_000);
  await sleep(Math.max(0, stallMs - 500 - (Date.now() - t0)));
  // Half a second before the stall ends: what the relay counts as sent, against what was read.
  const sentInStall = await relay.metric('intake_relay_events_sent_total');
  const readInStall = intake.received.length;
  await settle(() => intake.received, total, 45_000);
  const t = tally(intake.received, total);
  console.log(`blackhole: ${total} sent at 6k/s, intake read nothing for 15 s then reset: lost ${t.lost}, duplicated ${t.duplicates}; 0.5 s before the reset the relay counted ${sentInStall} sent (intake had read ${readInStall}); at the end sent ${await relay.metric('intake_relay_events_sent_total')}, resent ${await relay.metric('intake_relay_events_resent_total')}`);
  relay.proc.kill('SIGKILL');
  await intake.stop();
}

async function storm(): Promise<void> {
  // Accepts, takes 512 KiB, resets, over and over for 12 s; a 60,000-event stream meanwhile.
  const stormMs = 12_000;
  const total = 60_000;
  const intake = await startFaultyIntake((_i, t): Behaviour => (t < stormMs ? { kind: 'reset_after', bytes: 512 * 1024 } : { kind: 'read' }));
  const relay = await startRelay(mkdtempSync(join(tmpdir(), 'faults-')), intake.port, tcpInput);
  await paced(relay.tcpPort, total, 6_000);
  await sleep(2_500);
  const resentInStorm = await relay.metric('intake_relay_events_resent_total');
  const readInStorm = intake.received.length;
  const connsInStorm = intake.connections;
  await settle(() => intake.received, total, 60_000);
  const t = tally(intake.received, total);
  console.log(`storm: 12 s of "take 512 KiB, reset": ${connsInStorm} connections, relay resent ${resentInStorm} events, intake read ${readInStorm} frames in the storm; at the end lost ${t.lost}, duplicated ${t.duplicates} of ${total}`);
  relay.proc.kill('SIGKILL');
  await intake.stop();
}

async function restarts(): Promise<void> {
  // 100,000 events at 10k/s; the intake stops (its sockets closed, as a crash or restart does) at
  // 2, 4, 6 and 8 s and returns 0.5 s later.
  const total = 100_000;
  const port = await freePort();
  const earlier: Received = [];
  let intake = await startFaultyIntake(() => ({ kind: 'read' }), port);
  const relay = await startRelay(mkdtempSync(join(tmpdir(), 'faults-')), port, tcpInput);
  const sending = paced(relay.tcpPort, total, 10_000);
  for (let k = 0; k < 4; k++) {
    await sleep(1_500);
    await intake.stop();
    earlier.push(...intake.received);
    await sleep(500);
    intake = await startFaultyIntake(() => ({ kind: 'read' }), port);
  }
  await sending;
  const all = (): Received => [...earlier, ...intake.received];
  await settle(all, total, 30_000);
  const t = tally(all(), total);
  console.log(`restarts: ${total} events at 10k/s, 4 intake restarts: lost ${t.lost}, duplicated ${t.duplicates} (${Math.round(t.duplicates / 4)} per restart); relay resent ${await relay.metric('intake_relay_events_resent_total')}`);
  relay.proc.kill('SIGKILL');
  await intake.stop();
}

async function kill9(): Promise<void> {
  // A file input and a disk queue: 70,000 lines appended at 5k/s; the relay is killed (-9) every 2 s, six times, and restarted at once.
  const total = 70_000;
  const dir = mkdtempSync(join(tmpdir(), 'faults-'));
  const file = join(dir, 'app.log');
  writeFileSync(file, '');
  const intake = await startFaultyIntake(() => ({ kind: 'read' }));
  const input = `      - { type: file, paths: [${file}], read_from: beginning, syslog_header: keep }`;
  const queue = '    queue: { type: disk }';
  const metricsPort = await freePort();
  let relay = await startRelay(dir, intake.port, input, queue, undefined, metricsPort);
  let written = 0;
  const t0 = Date.now();
  const writer = (async () => {
    while (written < total) {
      const due = Math.min(total, Math.floor(((Date.now() - t0) / 1000) * 5_000));
      let chunk = '';
      for (; written < due; written++) chunk += line(written);
      if (chunk) appendFileSync(file, chunk);
      await sleep(50);
    }
  })();
  const duplicates = (): number => tally(intake.received, total).duplicates;
  const perKill: number[] = [];
  for (let k = 0; k < 6; k++) {
    await sleep(2_000);
    const before = duplicates();
    relay.proc.kill('SIGKILL');
    await new Promise((r) => relay.proc.once('exit', r));
    relay = await startRelay(dir, intake.port, input, queue, undefined, metricsPort);
    await sleep(1_500);
    perKill.push(duplicates() - before);
  }
  await writer;
  await settle(() => intake.received, total, 30_000);
  const t = tally(intake.received, total);
  console.log(`kill9: ${total} lines at 5k/s through a disk queue, 6 × kill -9: lost ${t.lost}, duplicated ${t.duplicates} (per kill, within 1.5 s of the restart: ${perKill.join(', ')})`);
  relay.proc.kill('SIGKILL');
  await intake.stop();
}

if (want('blackhole')) await blackhole();
if (want('storm')) await storm();
if (want('restarts')) await restarts();
if (want('kill9')) await kill9();
process.exit(0);
