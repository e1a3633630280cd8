// `npm run bench [-- tcp|udp|scale|file|disk|disk-outage|http|http-gzip|http-in|http-in-disk|routing|relp|relp-sink|relp-in]`: the relay as a separate process pinned to core 1 (taskset), the load
// and the receiver on core 0, all on loopback. Prints events/s, relay CPU seconds and peak RSS, and
// checks that every event arrived; peak RSS is printed with the peak anonymous memory beside it
// (RssAnon sampled every 100 ms: file pages do not count). Figures are for reading, never asserted by tests. Knobs:
// BENCH_RUNS (3), RELAY_NODE_FLAGS (added to the relay's node flags), RELAY_BIN (a single executable
// to run instead of dist/main.js), RELAY_ENV (VAR=value ...
// added to its environment), BENCH_QUEUE (the intake's queue, e.g. "{ max_bytes: 16777216 }"),
// BENCH_OUTPUT_EXTRA (one more line of the syslog output, e.g. "resend_window_bytes: 2097152"),
// BENCH_UDP_THREADS (the UDP input's receive_threads), BENCH_NO_PEER (skip rsyslog's runs);
// on a machine with more cores: BENCH_LOAD_CORES (the load generator's and receiver's cores, "0"),
// BENCH_RELAY_CORES (the relay's, "1"), BENCH_SCALE_CORES (the scale runs' core sets, "1;0,1"),
// BENCH_SCALE_WORKERS=1 (scale without workers), RSYSLOGD and RSYSLOG_MODDIR (an rsyslogd elsewhere).
import { fork, spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import dgram from 'node:dgram';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { udpSocketDrops } from '../src/inputs/udp/input.ts';
import { freePort } from './ports.ts';
import { useRunTempDir } from './temp-dir.ts';
import { imrelpConfig, TEST_CA, WrittenLines } from './imrelp.ts';

const root = new URL('..', import.meta.url).pathname;
const TICKS = 100; // USER_HZ on Linux
const scenarios = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const want = (s: string): boolean => scenarios.length === 0 || scenarios.includes(s);

// Load generator and receiver on core 0 (BENCH_LOAD_CORES); the relay gets core 1 to itself.
const LOAD_CORES = process.env.BENCH_LOAD_CORES ?? '0';
const pin = spawnSync('taskset', ['-a', '-p', '-c', LOAD_CORES, String(process.pid)], { encoding: 'utf8' });
const pinned = pin.status === 0;

function cpuOf(pid: number): number {
  const { user, system } = cpuSplit(pid);
  return user + system;
}

/** User and kernel CPU seconds of a process (/proc/PID/stat utime, stime). */
function cpuSplit(pid: number): { user: number; system: number } {
  const f = readFileSync(`/proc/${pid}/stat`, 'latin1');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) / TICKS, system: Number(fields[12]) / TICKS };
}

interface Receiver {
  proc: ChildProcess;
  port: number;
  ca: string;
  /** The peer the receiver runs (rsyslogd for imrelp), whose CPU counts as the receiver's. */
  pid?: number;
  count(): Promise<{ frames: number; refused: number }>;
}

/** CPU seconds of the receiver, its peer and the bench's own process (the load). */
function loadAndReceiverCpu(receiver: Receiver): number {
  return cpuOf(receiver.proc.pid as number) + (receiver.pid ? cpuOf(receiver.pid) : 0) + cpuOf(process.pid);
}

async function startReceiver(script = 'bench/receiver.ts', args: string[] = []): Promise<Receiver> {
  const proc = fork(join(root, script), args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.add(proc);
  if (pinned) spawnSync('taskset', ['-a', '-p', '-c', LOAD_CORES, String(proc.pid)]);
  const hello = await new Promise<{ port: number; ca: string; pid?: number }>((resolve) => proc.once('message', (m) => resolve(m as { port: number; ca: string; pid?: number })));
  // A receiver that runs a peer (rsyslog imrelp) names it, so that it never outlives the bench.
  if (hello.pid) {
    const peer = hello.pid;
    process.on('exit', () => {
      try {
        process.kill(peer, 'SIGKILL');
      } catch {
        // gone already
      }
    });
  }
  return {
    proc,
    ...hello,
    count: () =>
      new Promise((resolve) => {
        proc.once('message', (m) => resolve(m as { frames: number; refused: number }));
        proc.send('count');
      }),
  };
}

interface Relay {
  proc: ChildProcess;
  tcpPort: number;
  udpPort: number;
  metricsPort: number;
  cpuSeconds(): number;
  peakRssMb(): number;
  /** RSS a second after it listens, before any load. */
  readonly idleRssMb: number;
  stop(): Promise<void>;
}

/** Resident memory of a process now (VmRSS) or at its peak (VmHWM), in MiB. */
function rssMb(pid: number, which: 'VmRSS' | 'VmHWM'): number {
  return Number(new RegExp(`${which}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1]) / 1024;
}

/**
 * Peak anonymous memory (RssAnon, what the kernel cannot take back: no file page counts) of each
 * process the bench started, sampled every 100 ms from /proc/PID/status while it runs.
 */
const anonPeaks = new Map<number, number>();
function watchAnon(pid: number): void {
  const t = setInterval(() => {
    try {
      const kb = Number(/RssAnon:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1]);
      if (kb > 0) anonPeaks.set(pid, Math.max(anonPeaks.get(pid) ?? 0, kb / 1024));
    } catch {
      clearInterval(t);
    }
  }, 100);
  t.unref();
}
/** " (anonymous N)": the peak anonymous memory of `pid`, to print after its peak RSS. */
function anon(pid: number | undefined): string {
  const mb = pid === undefined ? undefined : anonPeaks.get(pid);
  return mb === undefined ? '' : `, anonymous ${mb.toFixed(0)} MiB`;
}

/** `exe args` on `cores` (taskset, where it works), killed when the bench ends. */
function spawnPinned(cores: string, exe: string, args: string[], options: SpawnOptions): ChildProcess {
  const proc = spawn(pinned ? 'taskset' : exe, [...(pinned ? ['-c', cores, exe] : []), ...args], options);
  children.add(proc);
  return proc;
}

/** Once `proc` listens on `tcpPort` and has had a second to settle: its pid and its RSS at rest. */
async function settled(proc: ChildProcess, tcpPort: number): Promise<{ pid: number; idleRssMb: number }> {
  await waitListening(tcpPort);
  const pid = proc.pid as number;
  watchAnon(pid);
  await new Promise((r) => setTimeout(r, 1000));
  return { pid, idleRssMb: rssMb(pid, 'VmRSS') };
}

/** The output part of the relay's config for a scenario. */
type OutputYaml = (receiver: Receiver, caFile: string) => string;

const syslogOutput: OutputYaml = (receiver, caFile) => `    output:
      type: syslog
      host: 127.0.0.1
      port: ${receiver.port}
      server_name: localhost
      ca_file: ${caFile}
${process.env.BENCH_OUTPUT_EXTRA ? `      ${process.env.BENCH_OUTPUT_EXTRA}\n` : ''}`;

const relpOutput: OutputYaml = (receiver, caFile) => `    output:
      type: relp
      host: 127.0.0.1
      port: ${receiver.port}
      server_name: localhost
      ca_file: ${caFile}
${process.env.BENCH_OUTPUT_EXTRA ? `      ${process.env.BENCH_OUTPUT_EXTRA}\n` : ''}`;

const httpOutput = (gzip: boolean): OutputYaml => (receiver, caFile) => `    output:
      type: http
      url: https://localhost:${receiver.port}
      ca_file: ${caFile}
      proxy: none
      gzip: ${gzip}
`;

/** Ten routes: nine that fail in different ways (CIDR, prefix, regex, facility, severity, suffix), then the match. */
const TEN_ROUTES = `    routes:
      - { match: { sender: 10.0.0.0/8 }, intake: bench }
      - { match: { hostname: "fw-*" }, intake: bench }
      - { match: { hostname: '/^db-\\d+$/' }, intake: bench }
      - { match: { facility: local7 }, intake: bench }
      - { match: { app_name: "squid*" }, intake: bench }
      - { match: { app_name: nginx }, intake: bench }
      - { match: { severity: [emerg, alert] }, intake: bench }
      - { match: { app_name: "*.exe" }, intake: bench }
      - { match: { hostname: "proxy-*" }, intake: bench }
      - { match: { app_name: "app*" }, intake: bench }
    default: drop
`;

/** The cores the relay (and rsyslog, for comparison) may run on: core 1, or both for the scale runs. */
let relayCores = process.env.BENCH_RELAY_CORES ?? '1';
/** The relay's `workers` (the scale runs give it one per core). */
let relayWorkers = 1;
const RSYSLOGD = process.env.RSYSLOGD ?? '/usr/sbin/rsyslogd';
const RSYSLOG_ARGS = process.env.RSYSLOG_MODDIR ? ['-M', process.env.RSYSLOG_MODDIR] : [];

/** How many cores a taskset list names ("1", "0,1", "1-8"). */
function coreCount(list: string): number {
  return list.split(',').reduce((n, part) => {
    const [a, b] = part.split('-').map(Number);
    return n + (b === undefined ? 1 : (b - (a as number) + 1));
  }, 0);
}

async function startRelay(receiver: Receiver, output: OutputYaml = syslogOutput, httpPort = 0, routed = false, file = '', queue = '', relpPort = 0): Promise<Relay> {
  const dir = mkdtempSync(join(tmpdir(), 'relay-bench-'));
  writeFileSync(join(dir, 'ca.pem'), receiver.ca);
  const [tcpPort, udpPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
  writeFileSync(
    join(dir, 'relay.yaml'),
    `log_level: warn
data_dir: ${join(dir, 'state')}
workers: ${relayWorkers}
metrics: { address: 127.0.0.1, port: ${metricsPort} }
intakes:
  - name: bench
    intake_key: BenchKey0123456789abcdefABCDEF01
    inputs:${routed ? '' : `
      - type: tcp
        address: 127.0.0.1
        port: ${tcpPort}`}
      - type: udp
        address: 127.0.0.1
        port: ${udpPort}
        receive_buffer_bytes: 8388608${process.env.BENCH_UDP_THREADS ? `
        receive_threads: ${process.env.BENCH_UDP_THREADS}` : ''}${file ? `
      - type: file
        paths: [${file}]
        new_files_from: beginning` : ''}${relpPort ? `
      - type: relp
        address: 127.0.0.1
        port: ${relpPort}` : ''}
${output(receiver, join(dir, 'ca.pem'))}${queue || process.env.BENCH_QUEUE ? `    queue: ${queue || process.env.BENCH_QUEUE}\n` : ''}${routed ? `listeners:
  - type: tcp
    name: shared
    address: 127.0.0.1
    port: ${tcpPort}
${TEN_ROUTES}` : ''}${httpPort ? `listeners:
  - type: http
    name: api
    address: 127.0.0.1
    port: ${httpPort}
    respond_when: ${queue ? 'auto' : 'queued'}
` : ''}`,
  );
  // Runs the build (npm run bench builds first) with the flags the shipped launchers use;
  // RELAY_NODE_FLAGS adds more (e.g. "--cpu-prof"). RELAY_BIN runs a single executable instead
  // (`npm run package`: what the Debian package and the image install), which has that flag built
  // in and takes more through --node-options.
  const more = (process.env.RELAY_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  const run = ['run', '-c', join(dir, 'relay.yaml')];
  const bin = process.env.RELAY_BIN;
  const [exe, args] = bin
    ? [bin, [...(more.length > 0 ? [`--node-options=${more.join(' ')}`] : []), ...run]]
    : [process.execPath, ['--max-semi-space-size=2', '--heap-growing-percent=50', '--expose-gc', '--no-allocation-site-pretenuring', ...more, join(root, process.env.RELAY_ENTRY ?? 'dist/main.js'), ...run]];
  const env = { ...process.env, ...Object.fromEntries((process.env.RELAY_ENV ?? '').split(' ').filter(Boolean).map((kv) => kv.split('=', 2) as [string, string])) };
  const proc = spawnPinned(relayCores, exe, args, { stdio: ['ignore', 'inherit', 'inherit'], env });
  const { pid, idleRssMb } = await settled(proc, tcpPort);
  return {
    proc,
    tcpPort,
    udpPort,
    metricsPort,
    cpuSeconds: () => cpuOf(pid),
    peakRssMb: () => rssMb(pid, 'VmHWM'),
    idleRssMb,
    stop: () =>
      new Promise((resolve) => {
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
      }),
  };
}

async function waitListening(port: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`relay did not listen on ${port}`);
}

async function metric(relay: Relay, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${relay.metricsPort}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

async function waitFrames(receiver: Receiver, n: number, timeoutMs: number): Promise<{ frames: number; refused: number; at: number }> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const c = await receiver.count();
    if (c.frames >= n || Date.now() > until) return { ...c, at: performance.now() };
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * 200-byte BSD syslog lines, LF-terminated, each with its sequence number, padded with random
 * letters and digits (a worst case for gzip; real logs compress better).
 */
function lines(n: number, size = 200, apps = 1): Buffer {
  const alphabet = Buffer.from('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789');
  const buf = randomFillSync(Buffer.alloc(n * size));
  for (let i = 0; i < buf.length; i++) buf[i] = alphabet[(buf[i] as number) % alphabet.length] as number;
  for (let i = 0; i < n; i++) {
    const head = `<14>Nov 22 10:00:00 bench-host app${apps > 1 ? i % apps : ''}[1234]: seq=${String(i).padStart(8, '0')} `;
    buf.write(head, i * size, 'latin1');
    buf[(i + 1) * size - 1] = 0x0a;
  }
  return buf;
}

/** Samples the relay's heap and off-heap memory from its own /metrics while a run goes on. */
function sampleMemory(relay: Relay): { stop(): Promise<string> } {
  const peak = { heap: 0, external: 0, buffers: 0 };
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const heap = await metric(relay, 'intake_relay_nodejs_heap_size_used_bytes');
        const external = await metric(relay, 'intake_relay_nodejs_external_memory_bytes');
        peak.heap = Math.max(peak.heap, heap);
        peak.external = Math.max(peak.external, external);
      } catch {
        // the relay may be busy or gone; the next sample will tell
      }
      // Every 500 ms: each scrape costs the relay CPU that rsyslog's runs do not pay.
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return `peak heap used ${(peak.heap / 2 ** 20).toFixed(0)} MiB, peak external ${(peak.external / 2 ** 20).toFixed(0)} MiB`;
    },
  };
}

interface RunFigures {
  readonly rate: number;
  readonly cpuShare: number;
  readonly rssMb: number;
  /** RSS once started and settled, before the load (undefined where not measured). */
  readonly idleRssMb: number | undefined;
  readonly line: string;
}

/** Runs a scenario `runs` times (the VM's noise is ±15% run to run); prints each and the median. */
async function repeat(name: string, runs: number, once: () => Promise<RunFigures>): Promise<void> {
  const all: RunFigures[] = [];
  for (let i = 0; i < runs; i++) {
    const f = await once();
    console.log(`  run ${i + 1}: ${f.line}`);
    all.push(f);
  }
  const rates = all.map((f) => f.rate).sort((a, b) => a - b);
  const fmt = (n: number): string => Math.round(n).toLocaleString('en');
  const idle = all.flatMap((f) => (f.idleRssMb === undefined ? [] : [f.idleRssMb]));
  console.log(
    `${name}: median ${fmt(rates[Math.floor(rates.length / 2)] as number)} events/s (range ${fmt(rates[0] as number)}-${fmt(rates[rates.length - 1] as number)}), ` +
      `CPU ${Math.round(Math.max(...all.map((f) => f.cpuShare)))}% of a core at most, ${idle.length > 0 ? `idle RSS ${Math.round(Math.max(...idle))} MiB at most, ` : ''}peak RSS ${Math.round(Math.max(...all.map((f) => f.rssMb)))} MiB at most`,
  );
}

/** Stops a run's processes, flags missing events, and gives its figures. */
async function finish(relay: Relay, receiver: Receiver, done: { frames: number; refused: number }, n: number, secs: number, cpu: number, rss: number, line: string): Promise<RunFigures> {
  await relay.stop();
  receiver.proc.send('stop');
  if (done.frames < n || done.refused > 0) process.exitCode = 1;
  return { rate: n / secs, cpuShare: (100 * cpu) / secs, rssMb: rss, idleRssMb: relay.idleRssMb, line };
}

async function tcpScenario(receiverScript = 'bench/receiver.ts', output: OutputYaml = syslogOutput, routed = false, apps = 1, queue = '', connections = 1): Promise<RunFigures> {
  const n = 1_000_000;
  const receiver = await startReceiver(receiverScript);
  const relay = await startRelay(receiver, output, 0, routed, '', queue);
  const memory = sampleMemory(relay);
  const data = lines(n, 200, apps);
  const cpu0 = relay.cpuSeconds();
  const other0 = loadAndReceiverCpu(receiver);
  const t0 = performance.now();
  await sendTcpMany(relay.tcpPort, data, connections);
  const done = await waitFrames(receiver, n, 120_000);
  const secs = (done.at - t0) / 1000;
  const cpu = relay.cpuSeconds() - cpu0;
  const other = loadAndReceiverCpu(receiver) - other0;
  const rss = relay.peakRssMb();
  const resent = await metric(relay, 'intake_relay_events_resent_total');
  const connects = await metric(relay, 'intake_relay_output_connects_total');
  const wire = await metric(relay, 'intake_relay_bytes_sent_total');
  const json = await metric(relay, 'intake_relay_http_body_bytes_total');
  const compression = json > 0 ? `; ${(json / 2 ** 20).toFixed(0)} MiB of JSON sent as ${(wire / 2 ** 20).toFixed(0)} MiB` : '';
  const mem = await memory.stop();
  if (process.env.BENCH_MEMORY_DETAIL) {
    for (const m of ['nodejs_heap_size_total_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_external_memory_bytes', 'process_resident_memory_bytes']) {
      console.log(`  ${m}: ${((await metric(relay, `intake_relay_${m}`)) / 2 ** 20).toFixed(0)} MiB`);
    }
    console.log(readFileSync(`/proc/${relay.proc.pid}/smaps_rollup`, 'latin1').split('\n').filter((l) => /^(Rss|Anonymous|Private_Dirty|Shared_Clean)/.test(l)).join('\n'));
  }
  return finish(relay, receiver, done, n, secs, cpu, rss,
      `${n} events of 200 bytes in ${secs.toFixed(2)} s = ${Math.round(n / secs).toLocaleString('en')} events/s; ` +
      `relay CPU ${cpu.toFixed(2)} s (${Math.round((100 * cpu) / secs)}% of a core, ${((1e6 * cpu) / n).toFixed(2)} µs per event); idle RSS ${relay.idleRssMb.toFixed(0)} MiB, peak RSS ${rss.toFixed(0)} MiB${anon(relay.proc.pid)} (${mem}); ` +
      `received ${done.frames}/${n}${done.frames === n ? ' (all)' : ' (MISSING EVENTS)'}, refused ${done.refused}, resent ${resent}, output connections ${connects}; ` +
      `load + receiver CPU ${other.toFixed(2)} s on the other core${compression}`,
  );
}

/** Writes `data` split over `connections` connections to `port` at once (whole lines each), as fast as they are taken. */
async function sendTcpMany(port: number, data: Buffer, connections: number): Promise<void> {
  const per = Math.ceil(data.length / 200 / connections) * 200;
  const parts: Buffer[] = [];
  for (let off = 0; off < data.length; off += per) parts.push(data.subarray(off, off + per));
  await Promise.all(parts.map((p) => sendTcp(port, p)));
}

/** Writes `data` over one connection to `port`, as fast as it is taken; resolves once all is written. */
function sendTcp(port: number, data: Buffer): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', async () => {
      for (let off = 0; off < data.length; off += 1 << 20) {
        if (!s.write(data.subarray(off, off + (1 << 20)))) await new Promise((r) => s.once('drain', r));
      }
      s.end(resolve);
    });
    s.on('error', reject);
  });
}

/** Offers `n` datagrams (200-byte lines) to `port` at `rate` per second, 1000 every 10 ms, from `sources` source ports in turn; resolves with the seconds it took. */
async function offerUdp(port: number, n: number, rate: number, sources = 1): Promise<number> {
  const socks = Array.from({ length: sources }, () => dgram.createSocket('udp4'));
  const payload = lines(1000);
  const t0 = performance.now();
  for (let sent = 0; sent < n; ) {
    const due = t0 + (sent / rate) * 1000;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const burst = Math.min(1000, n - sent);
    await new Promise<void>((resolve) => {
      let left = burst;
      for (let i = 0; i < burst; i++) (socks[i % sources] as dgram.Socket).send(payload, i * 200, 199, port, '127.0.0.1', () => { if (--left === 0) resolve(); });
    });
    sent += burst;
  }
  for (const sock of socks) sock.close();
  return (performance.now() - t0) / 1000;
}

async function udpScenario(rate = 100_000, sources = 1): Promise<RunFigures> {
  const seconds = 5;
  const n = rate * seconds;
  const receiver = await startReceiver();
  const relay = await startRelay(receiver);
  const cpu0 = relay.cpuSeconds();
  const split0 = cpuSplit(relay.proc.pid as number);
  const offeredSecs = await offerUdp(relay.udpPort, n, rate, sources);
  const done = await waitFrames(receiver, n, 30_000);
  const cpu = relay.cpuSeconds() - cpu0;
  const split = cpuSplit(relay.proc.pid as number);
  const sys = split.system - split0.system;
  const rss = relay.peakRssMb();
  const kernelDrops = await metric(relay, 'intake_relay_udp_kernel_drops_total');
  const dropped = await metric(relay, 'intake_relay_events_dropped_total');
  const connects = await metric(relay, 'intake_relay_output_connects_total');
  await relay.stop();
  receiver.proc.send('stop');
  if (done.frames < n) process.exitCode = 1;
  return {
    rate: done.frames / offeredSecs,
    cpuShare: (100 * cpu) / offeredSecs,
    rssMb: rss,
    idleRssMb: relay.idleRssMb,
    line:
      `${n} datagrams offered at ${Math.round(n / offeredSecs).toLocaleString('en')}/s for ${offeredSecs.toFixed(1)} s; ` +
      `received ${done.frames}/${n}, kernel drops ${kernelDrops}, relay drops ${dropped}; relay CPU ${cpu.toFixed(2)} s = ${Math.round((100 * cpu) / offeredSecs)}% of a core, ${((1e6 * cpu) / n).toFixed(2)} µs per datagram (${Math.round((100 * sys) / cpu)}% of it in the kernel); idle RSS ${relay.idleRssMb.toFixed(0)} MiB, peak RSS ${rss.toFixed(0)} MiB${anon(relay.proc.pid)}; output connections ${connects}`,
  };
}

console.log(`intake-relay bench on node ${process.version}; ${pinned ? `relay pinned to core(s) ${relayCores}${want('scale') ? ' (scale: the core sets below)' : ''}, load and receiver to ${LOAD_CORES}` : 'taskset unavailable: not pinned'}`);
/** HTTP in (the intake API over keep-alive, 1,000 events per request) -> TLS out. */
/** `queue`: the intake's queue (a disk queue answers once events are on disk); none: a memory queue answering once queued. */
async function httpInScenario(queue = ''): Promise<RunFigures> {
  const requests = 1000;
  const perRequest = 1000;
  const n = requests * perRequest;
  const receiver = await startReceiver();
  const port = await freePort();
  const relay = await startRelay(receiver, syslogOutput, port, false, '', queue);
  await waitListening(port);
  const { Pool } = await import('undici');
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 4, pipelining: 1 });
  const raw = lines(perRequest);
  const events: string[] = [];
  for (let i = 0; i < perRequest; i++) events.push(raw.toString('latin1', i * 200 + 45, (i + 1) * 200 - 1));
  const body = JSON.stringify({ events });
  const auth = `Basic ${Buffer.from(':BenchKey0123456789abcdefABCDEF01').toString('base64')}`;
  const cpu0 = relay.cpuSeconds();
  const t0 = performance.now();
  let next = 0;
  let throttled = 0;
  const worker = async (): Promise<void> => {
    while (next < requests) {
      next++;
      for (;;) {
        const res = await pool.request({ method: 'POST', path: '/jsons?path=%24.events', headers: { authorization: auth, 'content-type': 'application/json' }, body });
        await res.body.dump();
        if (res.statusCode === 200) break;
        throttled++;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  const done = await waitFrames(receiver, n, 120_000);
  const secs = (done.at - t0) / 1000;
  const cpu = relay.cpuSeconds() - cpu0;
  const rss = relay.peakRssMb();
  await pool.close();
  return finish(relay, receiver, done, n, secs, cpu, rss,
      `${requests} requests x ${perRequest} events in ${secs.toFixed(2)} s = ${Math.round(n / secs).toLocaleString('en')} events/s; relay CPU ${cpu.toFixed(2)} s; ` +
      `idle RSS ${relay.idleRssMb.toFixed(0)} MiB, peak RSS ${rss.toFixed(0)} MiB${anon(relay.proc.pid)}; received ${done.frames}/${n}${done.frames === n ? ' (all)' : ' (MISSING EVENTS)'}; 429 answers ${throttled}`,
  );
}

/** 1,000,000 lines of 200 bytes appended to a followed file as fast as the disk cache takes them. */
async function fileScenario(): Promise<RunFigures> {
  const n = 1_000_000;
  const receiver = await startReceiver();
  const dir = mkdtempSync(join(tmpdir(), 'relay-bench-files-'));
  const file = join(dir, 'app.log');
  const relay = await startRelay(receiver, syslogOutput, 0, false, file);
  const memory = sampleMemory(relay);
  const data = lines(n);
  const cpu0 = relay.cpuSeconds();
  const t0 = performance.now();
  const fd = openSync(file, 'a');
  for (let off = 0; off < data.length; off += 1 << 20) writeSync(fd, data.subarray(off, off + (1 << 20)));
  closeSync(fd);
  const written = (performance.now() - t0) / 1000;
  const done = await waitFrames(receiver, n, 120_000);
  const secs = (done.at - t0) / 1000;
  const cpu = relay.cpuSeconds() - cpu0;
  const rss = relay.peakRssMb();
  const mem = await memory.stop();
  const figures = await finish(relay, receiver, done, n, secs, cpu, rss,
    `${n} lines of 200 bytes appended in ${written.toFixed(2)} s, all forwarded in ${secs.toFixed(2)} s = ${Math.round(n / secs).toLocaleString('en')} lines/s; ` +
      `relay CPU ${cpu.toFixed(2)} s (${Math.round((100 * cpu) / secs)}% of a core); idle RSS ${relay.idleRssMb.toFixed(0)} MiB, peak RSS ${rss.toFixed(0)} MiB${anon(relay.proc.pid)} (${mem}); ` +
      `received ${done.frames}/${n}${done.frames === n ? ' (all)' : ' (MISSING EVENTS)'}, refused ${done.refused}`,
  );
  rmSync(dir, { recursive: true, force: true });
  return figures;
}

/**
 * An intake outage with the disk queue: the receiver goes down, `n` events (200 B) are sent and
 * pile up on disk, then it comes back and the backlog drains. Peak RSS is sampled during both.
 */
async function outageScenario(n = 5_000_000): Promise<RunFigures> {
  const receiver = await startReceiver();
  const relay = await startRelay(receiver, syslogOutput, 0, false, '', '{ type: disk, max_bytes: 4294967296 }');
  const tell = (m: string): Promise<void> => new Promise((resolve) => {
    receiver.proc.once('message', () => resolve());
    receiver.proc.send(m);
  });
  await tell('down');
  const data = lines(1_000_000);
  const cpu0 = relay.cpuSeconds();
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) => {
    const s = net.connect(relay.tcpPort, '127.0.0.1', async () => {
      for (let k = 0; k < n / 1_000_000; k++) {
        for (let off = 0; off < data.length; off += 1 << 20) {
          if (!s.write(data.subarray(off, off + (1 << 20)))) await new Promise((r) => s.once('drain', r));
        }
      }
      s.end(resolve);
    });
    s.on('error', reject);
  });
  // Wait until the relay has everything on disk.
  while ((await metric(relay, 'intake_relay_events_received_total')) < n) await new Promise((r) => setTimeout(r, 100));
  const inSecs = (performance.now() - t0) / 1000;
  const onDisk = await metric(relay, 'intake_relay_disk_queue_bytes');
  const rssIn = relay.peakRssMb();
  const cpuIn = relay.cpuSeconds() - cpu0;
  await tell('up');
  const t1 = performance.now();
  const done = await waitFrames(receiver, n, 600_000);
  const outSecs = (done.at - t1) / 1000;
  const cpu = relay.cpuSeconds() - cpu0 - cpuIn;
  const rss = relay.peakRssMb();
  return finish(relay, receiver, done, n, outSecs, cpu, rss,
    `${n.toLocaleString('en')} events (200 B) taken in during the outage in ${inSecs.toFixed(1)} s (${Math.round(n / inSecs).toLocaleString('en')}/s), ` +
      `${(onDisk / 2 ** 30).toFixed(2)} GiB on disk, idle RSS ${relay.idleRssMb.toFixed(0)} MiB, peak RSS ${rssIn.toFixed(0)} MiB${anon(relay.proc.pid)}; backlog delivered after the intake came back in ${outSecs.toFixed(1)} s = ` +
      `${Math.round(n / outSecs).toLocaleString('en')} events/s; peak RSS over the whole run ${rss.toFixed(0)} MiB; relay CPU ${cpuIn.toFixed(1)} s taking in, ${cpu.toFixed(1)} s draining; ` +
      `received ${done.frames}/${n}${done.frames === n ? ' (all)' : ' (MISSING EVENTS)'}, refused ${done.refused}`,
  );
}

/**
 * The same path through rsyslog for comparison: imtcp (one connection) -> omrelp over TLS
 * (OpenSSL, window 128 as librelp's default, the platform's RFC 5424 template with the key
 * element) -> the same imrelp receiver; rsyslogd pinned to core 1 like the relay.
 */
async function rsyslogRelpScenario(): Promise<RunFigures> {
  const n = 1_000_000;
  const dir = mkdtempSync(join(tmpdir(), 'rsyslog-bench-'));
  const [relpPort, tcpPort] = [await freePort(), await freePort()];
  const out = join(dir, 'out.log');
  // The receiver: imrelp over TLS, as bench/relp-receiver.ts runs it for the relay, on core 0.
  writeFileSync(join(dir, 'receiver.conf'), imrelpConfig(dir, relpPort, out));
  mkdirSync(join(dir, 'peer'));
  writeFileSync(
    join(dir, 'peer.conf'),
    `global(workDirectory="${dir}/peer" maxMessageSize="256k")
module(load="imtcp")
module(load="omrelp" tls.tlslib="openssl")
input(type="imtcp" port="${tcpPort}" address="127.0.0.1")
template(name="sekoia" type="string" string="<%pri%>1 %timegenerated:::date-rfc3339% %hostname% %app-name% %procid% LOG [SEKOIA@53288 intake_key=\\"BenchKey0123456789abcdefABCDEF01\\"] %msg%")
action(type="omrelp" target="127.0.0.1" port="${relpPort}" tls="on" tls.caCert="${TEST_CA}" tls.authMode="name" tls.permittedPeer=["localhost"] template="sekoia")
`,
  );
  const rsyslogd = (conf: string, core: number): ChildProcess => {
    return spawnPinned(String(core), RSYSLOGD, [...RSYSLOG_ARGS, '-n', '-f', join(dir, `${conf}.conf`), '-i', join(dir, `${conf}.pid`)], { stdio: 'ignore' });
  };
  const receiver = rsyslogd('receiver', 0);
  await new Promise((r) => setTimeout(r, 1000));
  const proc = rsyslogd('peer', 1);
  await waitListening(tcpPort);
  const pid = proc.pid as number;
  watchAnon(pid);
  const written = new WrittenLines(out);
  const count = (): number => written.count();
  // One event first, delivered before the clock starts: omrelp's session is open.
  await new Promise<void>((resolve, reject) => {
    const s = net.connect(tcpPort, '127.0.0.1', () => s.end(lines(1)));
    s.on('error', reject);
    s.on('close', () => resolve());
  });
  for (let i = 0; count() < 1 && i < 600; i++) await new Promise((r) => setTimeout(r, 50));
  const idle = rssMb(pid, 'VmRSS');
  const data = lines(n);
  const cpu0 = cpuOf(pid);
  const t0 = performance.now();
  // Not awaited: rsyslog takes the load only as fast as it delivers (its queues are bounded).
  const load = net.connect(tcpPort, '127.0.0.1', async () => {
    for (let off = 0; off < data.length && !load.destroyed; off += 1 << 20) {
      if (!load.write(data.subarray(off, off + (1 << 20)))) await new Promise((r) => load.once('drain', r));
    }
    load.end();
  });
  load.on('error', () => {});
  // rsyslog's omrelp may be far slower than the relay: past RSYSLOG_RELP_LIMIT_S (120 s) its rate
  // is what it delivered so far, said as such.
  const limitS = Number(process.env.RSYSLOG_RELP_LIMIT_S ?? 120);
  let frames = 0;
  while ((frames = count() - 1) < n && performance.now() - t0 < limitS * 1000) await new Promise((r) => setTimeout(r, 500));
  const secs = (performance.now() - t0) / 1000;
  const cpu = cpuOf(pid) - cpu0;
  const rss = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1]) / 1024;
  load.destroy();
  // Measured: a SIGTERM would wait for rsyslog to drain what it still holds.
  for (const p of [proc, receiver]) {
    await new Promise<void>((resolve) => {
      p.once('exit', () => resolve());
      p.kill('SIGKILL');
    });
  }
  rmSync(dir, { recursive: true, force: true });
  const keyless = written.keyless;
  if (keyless > 0) process.exitCode = 1;
  const partial = frames < n;
  return {
    rate: frames / secs,
    cpuShare: (100 * cpu) / secs,
    rssMb: rss,
    idleRssMb: idle,
    line:
      `${frames} events of 200 bytes in ${secs.toFixed(2)} s = ${Math.round(frames / secs).toLocaleString('en')} events/s${partial ? ` (stopped after ${limitS} s with ${frames} of ${n} delivered)` : ''}; ` +
      `rsyslogd CPU ${cpu.toFixed(2)} s (${Math.round((100 * cpu) / secs)}% of a core, ${((1e6 * cpu) / Math.max(1, frames)).toFixed(1)} µs per event); ` +
      `idle RSS ${idle.toFixed(0)} MiB, peak RSS ${rss.toFixed(0)} MiB${anon(pid)}; without the key element ${keyless}`,
  };
}

/**
 * RELP in: one rsyslog omrelp session at librelp's defaults (plain TCP, window 128), fed by imtcp,
 * into the relay's RELP input (memory queue, syslog output over TLS to the receiver), or into
 * rsyslog's own imrelp forwarding the same way (omfwd, OpenSSL driver). The sender runs on the load
 * core; what is measured is how fast the receiving side lets one session go: events/s at the
 * receiver, and the receiving process's CPU. The relay's input answers at its default (respond_when: auto).
 */
async function relpInScenario(target: 'relay' | 'rsyslog'): Promise<RunFigures> {
  const n = Number(process.env.BENCH_RELP_IN_N ?? 300_000);
  const receiver = await startReceiver('bench/receiver.ts', ['test-ca']);
  const dir = mkdtempSync(join(tmpdir(), 'relp-in-bench-'));
  const relpPort = await freePort();
  let pid: number;
  let idle: number;
  let stop: () => Promise<void>;
  if (target === 'relay') {
    const relay = await startRelay(receiver, syslogOutput, 0, false, '', '', relpPort);
    pid = relay.proc.pid as number;
    idle = relay.idleRssMb;
    stop = () => relay.stop();
  } else {
    mkdirSync(join(dir, 'work'));
    writeFileSync(join(dir, 'imrelp.conf'), `global(workDirectory="${dir}/work" maxMessageSize="256k" defaultNetstreamDriverCAFile="${TEST_CA}")
module(load="imrelp")
input(type="imrelp" port="${relpPort}" address="127.0.0.1" maxDataSize="256k")
template(name="sekoia" type="string" string="<%pri%>1 %timegenerated:::date-rfc3339% %hostname% %app-name% %procid% LOG [SEKOIA@53288 intake_key=\\"BenchKey0123456789abcdefABCDEF01\\"] %msg%")
action(type="omfwd" target="127.0.0.1" port="${receiver.port}" protocol="tcp" TCP_Framing="octet-counted" StreamDriver="ossl" StreamDriverMode="1" StreamDriverAuthMode="x509/name" StreamDriverPermittedPeers="localhost" template="sekoia")
`);
    const proc = spawnPinned(relayCores, RSYSLOGD, [...RSYSLOG_ARGS, '-n', '-f', join(dir, 'imrelp.conf'), '-i', join(dir, 'imrelp.pid')], { stdio: 'ignore' });
    const s = await settled(proc, relpPort);
    pid = s.pid;
    idle = s.idleRssMb;
    stop = () => new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGKILL');
    });
  }
  // The sender: imtcp -> omrelp at its defaults, on the load core.
  const tcpPort = await freePort();
  mkdirSync(join(dir, 'sender'));
  writeFileSync(join(dir, 'sender.conf'), `global(workDirectory="${dir}/sender" maxMessageSize="256k")
module(load="imtcp")
module(load="omrelp")
input(type="imtcp" port="${tcpPort}" address="127.0.0.1")
action(type="omrelp" target="127.0.0.1" port="${relpPort}" queue.type="LinkedList" queue.size="${n * 2}")
`);
  const sender = spawnPinned(LOAD_CORES, RSYSLOGD, [...RSYSLOG_ARGS, '-n', '-f', join(dir, 'sender.conf'), '-i', join(dir, 'sender.pid')], { stdio: 'ignore' });
  await waitListening(tcpPort);
  // One event first, delivered before the clock starts: the session is open.
  await sendTcp(tcpPort, lines(1));
  await waitFrames(receiver, 1, 30_000);
  const data = lines(n);
  const cpu0 = cpuOf(pid);
  const t0 = performance.now();
  await sendTcp(tcpPort, data);
  const limitS = Number(process.env.RELP_IN_LIMIT_S ?? 120);
  const done = await waitFrames(receiver, n + 1, limitS * 1000);
  const frames = done.frames - 1;
  const secs = (done.at - t0) / 1000;
  const cpu = cpuOf(pid) - cpu0;
  const rss = rssMb(pid, 'VmHWM');
  await new Promise<void>((resolve) => {
    sender.once('exit', () => resolve());
    sender.kill('SIGKILL');
  });
  await stop();
  receiver.proc.send('stop');
  rmSync(dir, { recursive: true, force: true });
  if (frames < n || done.refused > 0) process.exitCode = 1;
  const who = target === 'relay' ? 'relay' : 'rsyslogd (imrelp)';
  return {
    rate: frames / secs,
    cpuShare: (100 * cpu) / secs,
    rssMb: rss,
    idleRssMb: idle,
    line:
      `${frames} of ${n} events (200 B) from one omrelp session in ${secs.toFixed(2)} s = ${Math.round(frames / secs).toLocaleString('en')} events/s${frames < n ? ` (stopped after ${limitS} s)` : ''}; ` +
      `${who} CPU ${cpu.toFixed(2)} s (${Math.round((100 * cpu) / secs)}% of a core, ${((1e6 * cpu) / Math.max(1, frames)).toFixed(2)} µs per event); idle RSS ${idle.toFixed(0)} MiB, peak RSS ${rss.toFixed(0)} MiB${anon(pid)}; refused ${done.refused}`,
  };
}

/** rsyslogd forwarding as the relay does: imtcp and imudp in, omfwd out over TLS. */
interface RsyslogForwarder {
  readonly proc: ChildProcess;
  readonly pid: number;
  readonly tcpPort: number;
  readonly udpPort: number;
  readonly idleRssMb: number;
  stop(): Promise<void>;
}

/**
 * rsyslog on the relay's path, for comparison in the same run: imtcp and imudp (8 MiB receive
 * buffer, as the relay's) -> omfwd over TLS with the OpenSSL driver, octet-counted, the platform's
 * RFC 5424 template with the key element -> the same receiver kind (serving the test certificate);
 * rsyslogd pinned to core 1 like the relay, its queues at their defaults.
 */
async function startRsyslogForwarder(receiver: Receiver, threads = 1): Promise<RsyslogForwarder> {
  const dir = mkdtempSync(join(tmpdir(), 'rsyslog-bench-'));
  const [tcpPort, udpPort] = [await freePort(), await freePort()];
  mkdirSync(join(dir, 'work'));
  writeFileSync(
    join(dir, 'rsyslog.conf'),
    `global(workDirectory="${dir}/work" maxMessageSize="256k" defaultNetstreamDriverCAFile="${TEST_CA}")
${threads > 1
    // Threaded inputs (this rsyslog's imtcp is single-threaded: imptcp reads plain TCP with helper threads), and as many queue workers.
    ? `module(load="imptcp" threads="${threads}")
module(load="imudp" threads="${threads}")
main_queue(queue.workerThreads="${threads}")
input(type="imptcp" port="${tcpPort}" address="127.0.0.1")`
    : `module(load="imtcp")
module(load="imudp")
input(type="imtcp" port="${tcpPort}" address="127.0.0.1")`}
input(type="imudp" port="${udpPort}" address="127.0.0.1" rcvbufSize="8m")
template(name="sekoia" type="string" string="<%pri%>1 %timegenerated:::date-rfc3339% %hostname% %app-name% %procid% LOG [SEKOIA@53288 intake_key=\\"BenchKey0123456789abcdefABCDEF01\\"] %msg%")
action(type="omfwd" target="127.0.0.1" port="${receiver.port}" protocol="tcp" TCP_Framing="octet-counted" StreamDriver="ossl" StreamDriverMode="1" StreamDriverAuthMode="x509/name" StreamDriverPermittedPeers="localhost" template="sekoia")
`,
  );
  const proc = spawnPinned(relayCores, RSYSLOGD, [...RSYSLOG_ARGS, '-n', '-f', join(dir, 'rsyslog.conf'), '-i', join(dir, 'rsyslog.pid')], { stdio: 'ignore' });
  const { pid, idleRssMb } = await settled(proc, tcpPort);
  return {
    proc,
    pid,
    tcpPort,
    udpPort,
    idleRssMb,
    async stop() {
      await new Promise<void>((resolve) => {
        proc.once('exit', () => resolve());
        proc.kill('SIGKILL');
      });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The tcp scenario through rsyslog: 1,000,000 RFC 3164 lines over one connection -> TLS. */
async function rsyslogTcpScenario(connections = 1, threads = 1): Promise<RunFigures> {
  const n = 1_000_000;
  const receiver = await startReceiver('bench/receiver.ts', ['test-ca']);
  const rsyslog = await startRsyslogForwarder(receiver, threads);
  const data = lines(n);
  const cpu0 = cpuOf(rsyslog.pid);
  const t0 = performance.now();
  await sendTcpMany(rsyslog.tcpPort, data, connections);
  const done = await waitFrames(receiver, n, 120_000);
  const secs = (done.at - t0) / 1000;
  const cpu = cpuOf(rsyslog.pid) - cpu0;
  const rss = rssMb(rsyslog.pid, 'VmHWM');
  await rsyslog.stop();
  receiver.proc.send('stop');
  if (done.frames < n || done.refused > 0) process.exitCode = 1;
  return {
    rate: n / secs,
    cpuShare: (100 * cpu) / secs,
    rssMb: rss,
    idleRssMb: rsyslog.idleRssMb,
    line:
      `${n} events of 200 bytes in ${secs.toFixed(2)} s = ${Math.round(n / secs).toLocaleString('en')} events/s; ` +
      `rsyslogd CPU ${cpu.toFixed(2)} s (${Math.round((100 * cpu) / secs)}% of a core, ${((1e6 * cpu) / n).toFixed(2)} µs per event); idle RSS ${rsyslog.idleRssMb.toFixed(0)} MiB, peak RSS ${rss.toFixed(0)} MiB${anon(rsyslog.pid)}; ` +
      `received ${done.frames}/${n}${done.frames === n ? ' (all)' : ' (MISSING EVENTS)'}, refused ${done.refused}`,
  };
}

/** The udp scenario through rsyslog: 100,000 datagrams/s offered for 5 s -> TLS. */
async function rsyslogUdpScenario(rate = 100_000, sources = 1, threads = 1): Promise<RunFigures> {
  const n = rate * 5;
  const receiver = await startReceiver('bench/receiver.ts', ['test-ca']);
  const rsyslog = await startRsyslogForwarder(receiver, threads);
  const cpu0 = cpuOf(rsyslog.pid);
  const drops0 = (udpSocketDrops('/proc/net/udp', rsyslog.udpPort) ?? 0);
  const offeredSecs = await offerUdp(rsyslog.udpPort, n, rate, sources);
  const done = await waitFrames(receiver, n, 30_000);
  const cpu = cpuOf(rsyslog.pid) - cpu0;
  const drops = (udpSocketDrops('/proc/net/udp', rsyslog.udpPort) ?? 0) - drops0;
  const rss = rssMb(rsyslog.pid, 'VmHWM');
  await rsyslog.stop();
  receiver.proc.send('stop');
  return {
    rate: done.frames / offeredSecs,
    cpuShare: (100 * cpu) / offeredSecs,
    rssMb: rss,
    idleRssMb: rsyslog.idleRssMb,
    line:
      `${n} datagrams offered at ${Math.round(n / offeredSecs).toLocaleString('en')}/s for ${offeredSecs.toFixed(1)} s; received ${done.frames}/${n}, kernel drops ${drops}; ` +
      `rsyslogd CPU ${cpu.toFixed(2)} s = ${Math.round((100 * cpu) / offeredSecs)}% of a core, ${((1e6 * cpu) / n).toFixed(2)} µs per datagram; idle RSS ${rsyslog.idleRssMb.toFixed(0)} MiB, peak RSS ${rss.toFixed(0)} MiB${anon(rsyslog.pid)}`,
  };
}


// Never leave a receiver or relay behind, whatever ends this process.
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});
useRunTempDir('bench-run-');

const runs = Number(process.env.BENCH_RUNS ?? 3);
if (want('scale')) {
  // The relay (workers: one per core), then rsyslog with threaded inputs (imptcp and imudp
  // threads, queue workers, one per core), given core 1, then both cores: TCP from 8
  // connections, UDP from 8 source ports. With both cores the relay shares one with the load
  // generator and the receiver. BENCH_SCALE_CORES names other core sets (on a larger machine).
  const udpRate = Number(process.env.BENCH_SCALE_UDP_RATE ?? 200_000);
  const saved = relayCores;
  for (const cores of (process.env.BENCH_SCALE_CORES ?? '1;0,1').split(';')) {
    relayCores = cores;
    const k = coreCount(cores);
    relayWorkers = process.env.BENCH_SCALE_WORKERS ? Number(process.env.BENCH_SCALE_WORKERS) : k;
    const given = `${k} core${k > 1 ? 's' : ''} (${cores})`;
    const w = `workers: ${relayWorkers}`;
    await repeat(`scale, ${given}: tcp -> tls, 1,000,000 x 200 B over 8 connections, ${w}`, runs, () => tcpScenario('bench/receiver.ts', syslogOutput, false, 1, '', 8));
    if (!process.env.BENCH_NO_PEER) await repeat(`scale, ${given}: rsyslog, imptcp (${k} thread${k > 1 ? 's' : ''}) -> omfwd`, runs, () => rsyslogTcpScenario(8, k));
    await repeat(`scale, ${given}: udp -> tls, ${udpRate.toLocaleString('en')}/s offered for 5 s from 8 source ports, ${w}`, runs, () => udpScenario(udpRate, 8));
    if (!process.env.BENCH_NO_PEER) await repeat(`scale, ${given}: rsyslog, imudp (${k} thread${k > 1 ? 's' : ''}) -> omfwd`, runs, () => rsyslogUdpScenario(udpRate, 8, k));
  }
  relayCores = saved;
  relayWorkers = 1;
}
if (want('tcp')) {
  await repeat('tcp -> tls (1,000,000 x 200 B RFC 3164 lines, one connection)', runs, () => tcpScenario());
  if (!process.env.BENCH_NO_PEER) await repeat('rsyslog on the same path (imtcp -> omfwd, OpenSSL driver)', runs, () => rsyslogTcpScenario());
}
if (want('udp')) {
  await repeat('udp -> tls (100,000/s offered for 5 s)', runs, () => udpScenario());
  if (!process.env.BENCH_NO_PEER) await repeat('rsyslog on the same path (imudp -> omfwd, OpenSSL driver)', runs, () => rsyslogUdpScenario());
}
if (want('routing')) {
  // Ten app names in turn: consecutive events differ. A thousand: the router's memo cannot help,
  // every event walks the ten routes.
  for (const apps of [10, 1000]) {
    await repeat(`tcp -> tls, plain input, ${apps} app names`, runs, () => tcpScenario('bench/receiver.ts', syslogOutput, false, apps));
    await repeat(`tcp -> tls, shared listener with 10 routes, ${apps} app names`, runs, () => tcpScenario('bench/receiver.ts', syslogOutput, true, apps));
  }
}
if (want('relp') || want('relp-rsyslog') || want('relp-sink')) {
  if (want('relp')) await repeat('tcp -> relp/tls to rsyslog imrelp (1,000,000 x 200 B, one connection, window 128)', runs, () => tcpScenario('bench/relp-receiver.ts', relpOutput));
  // imrelp fills its core at 60,000-80,000 messages/s (the load and receiver CPU printed): a
  // receiver that answers each read in one write shows the output's own limit.
  if (want('relp') || want('relp-sink')) await repeat('tcp -> relp/tls to a RELP sink answering per read (bench/relp-sink.ts; window 128)', runs, () => tcpScenario('bench/relp-sink.ts', relpOutput));
  // The output is slower than the input here, so the queue fills: its size is most of the memory.
  if (want('relp') && !process.env.BENCH_NO_PEER) await repeat('the same with queue.max_events: 10000', runs, () => tcpScenario('bench/relp-receiver.ts', relpOutput, false, 1, '{ max_events: 10000 }'));
  if (!process.env.BENCH_NO_PEER) await repeat('rsyslog: imtcp -> omrelp/tls to the same imrelp (1,000,000 x 200 B, window 128)', runs, rsyslogRelpScenario);
}
if (want('relp-in')) {
  // Interleaved, so that both see the same phase of a shared machine.
  for (let i = 0; i < runs; i++) {
    await repeat('relp in: rsyslog omrelp (defaults: plain TCP, window 128) -> relay RELP input (memory queue) -> tls', 1, () => relpInScenario('relay'));
    if (!process.env.BENCH_NO_PEER) await repeat('relp in: the same omrelp session -> rsyslog imrelp -> omfwd tls', 1, () => relpInScenario('rsyslog'));
  }
}
if (want('disk')) await repeat('tcp -> tls through the disk queue (1,000,000 x 200 B, one connection)', runs, () => tcpScenario('bench/receiver.ts', syslogOutput, false, 1, '{ type: disk }'));
if (want('disk-outage')) await repeat('disk queue through an intake outage (5,000,000 x 200 B pile up, then drain)', Math.min(runs, 1), () => outageScenario());
if (want('file')) await repeat('file -> tls (1,000,000 lines x 200 B appended as fast as possible)', runs, fileScenario);
if (want('http-in')) await repeat('http /jsons in (1,000 x 1,000 events, keep-alive, respond_when: queued) -> tls', runs, () => httpInScenario());
if (want('http-in-disk')) await repeat('http /jsons in (1,000 x 1,000 events, keep-alive) -> disk queue -> tls', runs, () => httpInScenario('{ type: disk }'));
if (want('http')) await repeat('tcp -> https /jsons (1,000,000 x 200 B)', runs, () => tcpScenario('bench/http-receiver.ts', httpOutput(false)));
if (want('http-gzip')) await repeat('tcp -> https /jsons, gzip (1,000,000 x 200 B)', runs, () => tcpScenario('bench/http-receiver.ts', httpOutput(true)));
