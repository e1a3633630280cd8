// Real peers as local processes on loopback: the intake emulator, util-linux logger, rsyslog,
// syslog-ng (unpacked by scripts/install-test-peers.sh) and haproxy.

import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import dgram from 'node:dgram';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IntakeEmulator, type ReceivedMessage } from '../../src/emulator/intake-emulator.ts';
import { tempDir, track as trackForTest } from './cleanup.ts';
import { TLS } from './relay.ts';

export const SYSLOG_NG_ROOT = process.env.SYSLOG_NG_ROOT ?? '/opt/intake-relay-test-peers/syslog-ng';

export function requirePeer(what: string, ok: boolean): void {
  if (!ok) throw new Error(`${what} is not installed: run scripts/install-test-peers.sh (as .ci/run does).`);
}

/**
 * Ports each test worker picks from: its own slice of 21000-32199, by its pool id. Above
 * 20516-20566, which the official forwarder's compose file publishes whole
 * (forwarder-compose.test.ts): a port another worker had picked there failed that test's start.
 */
const PORT_SLICE = 1_400;
const portBase = 21_000 + ((Math.max(1, Number(process.env.VITEST_POOL_ID ?? 1)) - 1) % 8) * PORT_SLICE;
/** Ports this worker handed out: a test that stops a peer and starts it again on the same port (a
 * restart after kill -9) must not find it taken by another test of this worker meanwhile. */
const handedOut = new Set<number>();

/**
 * A free TCP and UDP port on loopback (for peers that cannot listen on port 0 and tell us). Picked
 * at random below the kernel's ephemeral range (32768+), so that sockets other tests bind to port
 * 0 meanwhile never take it; from this worker's own slice, so that files running in parallel never
 * pick the same one; never one this worker handed out already; and checked free for both protocols.
 */
export async function freePort(): Promise<number> {
  if (handedOut.size > PORT_SLICE / 2) handedOut.clear();
  for (;;) {
    const port = portBase + Math.floor(Math.random() * PORT_SLICE);
    if (handedOut.has(port)) continue;
    if ((await bindable(port, 'tcp')) && (await bindable(port, 'udp'))) {
      handedOut.add(port);
      return port;
    }
  }
}

function bindable(port: number, proto: 'tcp' | 'udp'): Promise<boolean> {
  return new Promise((resolve) => {
    if (proto === 'udp') {
      const u = dgram.createSocket('udp4');
      u.once('error', () => resolve(false));
      u.bind(port, '127.0.0.1', () => u.close(() => resolve(true)));
      return;
    }
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

export interface TestIntake {
  readonly emulator: IntakeEmulator;
  readonly received: ReceivedMessage[];
  /** Every frame's bytes, as written by the relay (for assertRfc5424Frame in rfc5424-grammar.ts). */
  readonly frames: Buffer[];
  readonly protocolErrors: string[];
  readonly port: number;
  stop(): Promise<void>;
}

/** The intake emulator with the committed test certificate (server.crt for localhost/127.0.0.1). */
export async function startTestIntake(port = 0): Promise<TestIntake> {
  const received: ReceivedMessage[] = [];
  const frames: Buffer[] = [];
  const protocolErrors: string[] = [];
  const emulator = new IntakeEmulator({
    port,
    cert: readFileSync(`${TLS}server.crt`),
    key: readFileSync(`${TLS}server.key`),
    onMessage: (m) => received.push(m),
    onFrame: (f) => frames.push(Buffer.from(f)),
    onProtocolError: (e) => protocolErrors.push(e),
  });
  await emulator.start();
  return { emulator, received, frames, protocolErrors, port: emulator.port, stop: () => emulator.stop() };
}

export function logger(args: string[]): void {
  const r = spawnSync('logger', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`logger ${args.join(' ')} failed: ${r.stderr}`);
}

export interface Peer {
  readonly proc: ChildProcess;
  readonly dir: string;
  output(): string;
  /** Resolves once the peer accepts TCP on `port`; fails with the peer's own output. */
  listening(port: number): Promise<void>;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

function track(proc: ChildProcess, dir: string): Peer {
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return {
    proc,
    dir,
    output: () => out,
    async listening(port) {
      try {
        await waitListening(port);
      } catch (err) {
        throw new Error(`${(err as Error).message}; peer exit ${proc.exitCode ?? proc.signalCode ?? 'none'}, output:\n${out}`);
      }
    },
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      await exited;
    },
  };
}

/** rsyslogd in the foreground with its own config (given its work directory), pid file and state. */
export function startRsyslog(config: (dir: string) => string, dir = mkdtempSync(join(tmpdir(), 'rsyslog-'))): Peer {
  requirePeer('rsyslogd', existsSync('/usr/sbin/rsyslogd'));
  const conf = join(dir, 'rsyslog.conf');
  writeFileSync(conf, `global(workDirectory="${dir}")\n${config(dir)}\n`);
  const proc = spawn('/usr/sbin/rsyslogd', ['-n', '-f', conf, '-i', join(dir, 'pid')], { stdio: ['ignore', 'pipe', 'pipe'] });
  return track(proc, dir);
}

/** syslog-ng in the foreground from the unpacked package, with its own config (given its directory) and state. */
export function startSyslogNg(config: (dir: string) => string, dir = mkdtempSync(join(tmpdir(), 'syslog-ng-'))): Peer {
  const bin = join(SYSLOG_NG_ROOT, 'usr/sbin/syslog-ng');
  requirePeer('syslog-ng', existsSync(bin));
  const conf = join(dir, 'syslog-ng.conf');
  writeFileSync(conf, `@version: 3.38\n${config(dir)}\n`);
  const proc = spawn(
    bin,
    [
      '-F', '-f', conf,
      `--module-path=${join(SYSLOG_NG_ROOT, 'usr/lib/syslog-ng/3.38')}`,
      `--persist-file=${join(dir, 'persist')}`,
      `--pidfile=${join(dir, 'pid')}`,
      `--control=${join(dir, 'ctl')}`,
      '--no-caps',
      '--stderr',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LD_LIBRARY_PATH: join(SYSLOG_NG_ROOT, 'usr/lib/syslog-ng') } },
  );
  return track(proc, dir);
}

/** haproxy in the foreground (-db: no daemon, no service) with its own config file in `dir`. */
export function startHaproxy(config: string, dir = mkdtempSync(join(tmpdir(), 'haproxy-'))): Peer {
  requirePeer('haproxy', existsSync('/usr/sbin/haproxy'));
  const conf = join(dir, 'haproxy.cfg');
  writeFileSync(conf, config);
  const proc = spawn('/usr/sbin/haproxy', ['-db', '-f', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
  return track(proc, dir);
}

/**
 * A configuration for startSyslogNg: a TLS syslog() intake on `port` with the committed server
 * certificate, writing each message to out.log in its directory as `template` formats it.
 */
export function syslogNgIntake(port: number, template: string, options: readonly string[] = []): (dir: string) => string {
  const all = ['keep-hostname(yes)', 'use-dns(no)', 'chain-hostnames(no)', 'flush-lines(1)', 'stats-freq(0)', ...options];
  return (dir) => `options { ${all.map((o) => `${o}; `).join('')}};
source s_intake {
  syslog(ip("127.0.0.1") port(${port}) transport("tls") max-connections(10)
    tls(key-file("${TLS}server.key") cert-file("${TLS}server.crt") peer-verify(optional-untrusted)));
};
destination d_out { file("${dir}/out.log" template("${template}")); };
log { source(s_intake); destination(d_out); };`;
}

/** The lines a peer wrote to `file` so far (none while it does not exist yet). */
export function fileLines(file: string): string[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter((l) => l !== '');
}

/** Resolves once something accepts TCP connections on 127.0.0.1:port. */
export async function waitListening(port: number, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nothing listens on 127.0.0.1:${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Writes `data` over one TCP connection to 127.0.0.1:port and closes it. */
export function sendTcp(port: number, data: string | Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => s.end(data));
    s.on('error', reject);
    s.on('close', () => resolve());
  });
}

/**
 * Sends each datagram from the address `source` to 127.0.0.1:port, from `sockets` source ports in
 * turn, paced (2 ms every 100) so that no socket buffer overflows.
 */
export async function sendUdp(source: string, port: number, datagrams: readonly (string | Buffer)[], sockets = 1): Promise<void> {
  const socks = await Promise.all(
    Array.from({ length: sockets }, async () => {
      const s = dgram.createSocket('udp4');
      await new Promise<void>((r) => s.bind(0, source, () => r()));
      return s;
    }),
  );
  for (let i = 0; i < datagrams.length; i++) {
    await new Promise<void>((r) => (socks[i % sockets] as dgram.Socket).send(datagrams[i] as string | Buffer, port, '127.0.0.1', () => r()));
    if (i % 100 === 99) await new Promise((r) => setTimeout(r, 2));
  }
  for (const s of socks) s.close();
}

/** A port another UDP socket holds (closed when the test ends). */
export async function holdUdpPort(): Promise<number> {
  const holder = dgram.createSocket('udp4');
  await new Promise<void>((r) => holder.bind(0, '127.0.0.1', () => r()));
  trackForTest({ stop: () => new Promise<void>((r) => holder.close(() => r())) });
  return holder.address().port;
}

/**
 * `count` datagrams of 1,000 bytes (starting with `prefix`) to 127.0.0.1:port from another
 * process, `perTick` every `tickMs`, while this thread is blocked for `blockMs` (a relay running in
 * this process reads nothing meanwhile); resolves once that process has sent them all and exited.
 */
export async function udpBurstWhileBlocked(port: number, o: { count: number; perTick: number; tickMs: number; blockMs: number; prefix?: string }): Promise<void> {
  // The sender starts (a Node.js start: up to a second on a busy machine), says so, and sends on
  // SIGUSR2, sent just before this thread blocks: the whole burst falls within the block. (A pipe's
  // write was seen to reach it only after the block; a signal is delivered at once.)
  const child = spawn(process.execPath, ['-e', `
    const s = require('node:dgram').createSocket('udp4'); const p = Buffer.alloc(1000, 97); p.write(${JSON.stringify(o.prefix ?? '')});
    let i = 0; const tick = () => { for (let k = 0; k < ${o.perTick} && i < ${o.count}; k++, i++) s.send(p, ${port}, '127.0.0.1'); if (i < ${o.count}) setTimeout(tick, ${o.tickMs}); else setTimeout(() => s.close(), 100); };
    const waiting = setTimeout(() => process.exit(3), 60000); process.once('SIGUSR2', () => { clearTimeout(waiting); tick(); }); process.stdout.write('ready\\n');`], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((r) => child.once('exit', r));
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the UDP burst's sender exited (${code}) before it was ready`)));
  });
  child.kill('SIGUSR2');
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, o.blockMs);
  await exited;
}

/**
 * A shared object that makes recvmmsg(2) fail with ENOBUFS, for LD_PRELOAD (built here with the
 * compiler the addon was built with): the datagram stays readable, as with a read that keeps failing.
 */
export function recvmmsgFailingShim(): string {
  const dir = tempDir('recvmmsg-shim-');
  const shim = join(dir, 'shim.so');
  writeFileSync(join(dir, 'shim.c'), '#define _GNU_SOURCE\n#include <errno.h>\n#include <sys/socket.h>\nint recvmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags, struct timespec *t) { (void)fd; (void)v; (void)n; (void)flags; (void)t; errno = ENOBUFS; return -1; }\n');
  execFileSync('cc', ['-shared', '-fPIC', '-o', shim, join(dir, 'shim.c')]);
  return shim;
}

/**
 * A connection (from `localAddress`, if given) that writes 50 lines every 5 ms, line(n) numbered
 * from 0, until stopped; `sent` is how many it wrote, `closedByPeer` whether the relay closed it.
 */
export function steadySender(port: number, line: (n: number) => string, localAddress?: string) {
  const socket = net.connect({ port, host: '127.0.0.1', localAddress });
  let n = 0;
  let closedByPeer = false;
  let running = true;
  socket.on('close', () => (closedByPeer = running));
  socket.on('error', () => (closedByPeer = running));
  const timer = setInterval(() => {
    let chunk = '';
    for (let i = 0; i < 50; i++) chunk += `${line(n++)}\n`;
    socket.write(chunk);
  }, 5);
  return {
    get sent() {
      return n;
    },
    get closedByPeer() {
      return closedByPeer;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        running = false;
        clearInterval(timer);
        socket.end(() => resolve());
      }),
  };
}
