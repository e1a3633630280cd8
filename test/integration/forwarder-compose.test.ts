// A drop-in for the official forwarder's container: its documented compose template, run by
// docker-compose against podman's Docker API with only the image line changed, with an intakes.yaml
// of three intakes (TCP, UDP, TLS with ./certs) and a statistics intake, a host ./disk_queue owned
// by root (with a file the forwarder's rsyslog left there) and the documented port-514 recipe in
// ./extended_conf. The container runs on the project's own network, its ports published as the
// template says. An override file adds only what the test needs, since the platform cannot be
// reached from here: the intake pointed at a TLS stand-in on this host (REGION=OTHER, ENDPOINT
// host.containers.internal, the stand-in's CA) and the metrics port published.
// Checked: every event from logger (TCP, UDP) and a TLS client arrives once with its intake's key;
// the daemon runs as 10001 after taking ./disk_queue (and not the forwarder's file); its TLS key,
// root's, is read from a private copy; `docker-compose restart` during an intake outage loses
// nothing (the queue is in ./disk_queue); the extended_conf file is named at start and `validate`
// prints its listeners; the engine's health check passes.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { tempDir, track } from '../helpers/cleanup.ts';
import { engine, IMAGE, SOCKET, type Engine } from '../helpers/engine.ts';
import { IntakeEmulator, type ReceivedMessage } from '../../src/emulator/intake-emulator.ts';
import { freePort } from '../helpers/peers.ts';
import { TLS } from '../helpers/relay.ts';

const FIXTURES = new URL('../fixtures/forwarder/', import.meta.url).pathname;
const KEYS = { Techno1: 'ForwarderTcpKey00000000000000001', Techno2: 'ForwarderUdpKey00000000000000002', Techno3: 'ForwarderTlsKey00000000000000003', Stats: 'ForwarderStatsKey000000000000004' };
let eng: Engine;

beforeAll(async () => {
  eng = await engine();
  if (!eng.ok) console.warn(`forwarder compose test skipped: ${eng.why}`);
}, 600_000);

/** The forwarder's documented compose template, its image line changed. */
const TEMPLATE = `services:
  rsyslog:
    image: ${IMAGE}
    environment:
      - MEMORY_MESSAGES=2000000
      - DISK_SPACE=180g
      - REGION=FRA1
    ports:
      - "20516-20566:20516-20566"
      - "20516-20566:20516-20566/udp"
    volumes:
      - ./intakes.yaml:/intakes.yaml
      - ./disk_queue:/var/spool/rsyslog
      - ./certs:/certs
      - ./extended_conf:/extended_conf
    restart: always
`;

function compose(dir: string, project: string, args: readonly string[], timeoutMs = 120_000): Promise<{ status: number | null; out: string }> {
  return new Promise((resolve) => {
    const p = spawn('docker-compose', ['-p', project, '-f', 'docker-compose.yml', '-f', 'override.yml', ...args], {
      cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DOCKER_HOST: `unix://${SOCKET}` },
    });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, out });
    });
  });
}

/** The engine's name for this host, as containers on a bridge network reach it. */
const HOST = 'host.containers.internal';

/** A certificate for HOST from the test CA, made for the run. */
function hostCert(dir: string): { cert: Buffer; key: Buffer } {
  const [key, csr, cert] = ['stand-in.key', 'stand-in.csr', 'stand-in.crt'].map((f) => join(dir, f)) as [string, string, string];
  const run = (args: string[]): void => {
    const r = spawnSync('openssl', args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`openssl ${args[0]}: ${r.stderr}`);
  };
  run(['req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', csr, '-subj', `/CN=${HOST}`, '-addext', `subjectAltName=DNS:${HOST}`]);
  run(['x509', '-req', '-in', csr, '-CA', `${TLS}ca.crt`, '-CAkey', `${TLS}ca.key`, '-CAcreateserial', '-CAserial', join(dir, 'ca.srl'), '-days', '2', '-copy_extensions', 'copy', '-out', cert]);
  return { cert: readFileSync(cert), key: readFileSync(key) };
}

interface StandIn {
  readonly received: ReceivedMessage[];
  stop(): Promise<void>;
}

/** The intake's stand-in: the emulator over TLS on every address of this host (containers reach it through the bridge). */
async function standIn(port: number, tlsFiles: { cert: Buffer; key: Buffer }): Promise<StandIn> {
  const received: ReceivedMessage[] = [];
  const e = new IntakeEmulator({ host: '0.0.0.0', port, ...tlsFiles, onMessage: (m) => received.push(m) });
  await e.start();
  return track({ received, stop: () => e.stop() });
}

/** util-linux logger, one message per line of `lines`. */
function logger(args: readonly string[], lines: readonly string[]): void {
  const r = spawnSync('logger', [...args, '-t', 'app'], { input: `${lines.join('\n')}\n`, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`logger ${args.join(' ')}: ${r.stderr}`);
}

function sendTls(port: number, lines: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ca: readFileSync(`${TLS}ca.crt`) }, () => s.end(lines.map((l) => `<14>Nov 28 10:00:00 host app: ${l}\n`).join('')));
    s.on('error', reject);
    s.on('close', () => resolve());
  });
}

const ofKey = (intake: StandIn, key: string): Map<string, number> => {
  const m = new Map<string, number>();
  for (const r of intake.received.filter((x) => x.intakeKey === key)) m.set(r.message.trim(), (m.get(r.message.trim()) ?? 0) + 1);
  return m;
};
const range = (tag: string, from: number, to: number): string[] => Array.from({ length: to - from }, (_, i) => `${tag} ${from + i}`);
const once = (got: Map<string, number>, want: readonly string[]): string[] => want.filter((w) => got.get(w) !== 1);

async function metric(port: number, name: string, intake: string): Promise<number> {
  const text = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text()).catch(() => '');
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(`intake="${intake}"`));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : Number.NaN;
}

describe('the official forwarder\'s compose file, only its image line changed', () => {
  it('forwards TCP, UDP and TLS to the right intakes, keeps an outage\'s events across a restart, names extended_conf', async ({ skip }) => {
    if (!eng.ok) return skip(eng.why);
    if (spawnSync('docker-compose', ['--version']).status !== 0) return skip('docker-compose is not installed (scripts/install-test-peers.sh installs it)');
    const dir = tempDir('forwarder-');
    chmodSync(dir, 0o755);
    const intakePort = await freePort();
    const standInTls = hostCert(dir);
    let intake = await standIn(intakePort, standInTls);
    // Ports the template publishes (20516-20566), and the metrics port the override publishes.
    const [tcp, udp, tlsPort, metrics] = [20516, 20517, 20518, await freePort()];
    writeFileSync(join(dir, 'docker-compose.yml'), TEMPLATE);
    writeFileSync(join(dir, 'intakes.yaml'), `intakes:
- name: Techno1
  protocol: tcp
  port: ${tcp}
  intake_key: ${KEYS.Techno1}
- name: Techno2
  protocol: udp
  port: ${udp}
  intake_key: ${KEYS.Techno2}
- name: Techno3
  protocol: tls
  port: ${tlsPort}
  intake_key: ${KEYS.Techno3}
- name: Stats
  stats: true
  intake_key: ${KEYS.Stats}
`);
    // ./certs as the forwarder's documentation makes it: server.crt and server.key, the key root's alone.
    mkdirSync(join(dir, 'certs'));
    copyFileSync(`${TLS}server.crt`, join(dir, 'certs/server.crt'));
    copyFileSync(`${TLS}server.key`, join(dir, 'certs/server.key'));
    chmodSync(join(dir, 'certs/server.key'), 0o600);
    // ./disk_queue, root's, with what the forwarder's rsyslog left in it.
    mkdirSync(join(dir, 'disk_queue'), { mode: 0o755 });
    writeFileSync(join(dir, 'disk_queue/sekoia_techno1_queue.00000001'), 'rsyslog queue data');
    mkdirSync(join(dir, 'extended_conf'));
    copyFileSync(join(FIXTURES, 'port514.conf'), join(dir, 'extended_conf/port514.conf'));
    copyFileSync(`${TLS}ca.crt`, join(dir, 'intake-ca.crt'));
    writeFileSync(join(dir, 'override.yml'), `services:
  rsyslog:
    environment:
      - REGION=OTHER
      - ENDPOINT=${HOST}:${intakePort}
      - NODE_EXTRA_CA_CERTS=/test/intake-ca.crt
    ports:
      - "127.0.0.1:${metrics}:9750"
    volumes:
      - ./intake-ca.crt:/test/intake-ca.crt:ro
`);
    const project = `relayfwd${process.pid}`;
    const logs = async (): Promise<string> => (await compose(dir, project, ['logs', '--no-color'])).out;
    try {
      const up = await compose(dir, project, ['up', '-d']);
      expect(up.status, up.out).toBe(0);
      await vi.waitFor(async () => expect(await logs()).toContain('intake-relay started'), { timeout: 60_000, interval: 500 });
      const started = await logs();
      expect(started).toContain('The official forwarder\'s layout');
      expect(started).toMatch(/extended_conf\/port514\.conf is rsyslog configuration, which intake-relay does not read/);
      expect(started).toMatch(/running as user 10001 from now on/);
      for (const k of Object.values(KEYS)) expect(started).not.toContain(k);

      // TCP and UDP from logger, TLS from a client that checks the relay's certificate.
      logger(['-n', '127.0.0.1', '-P', String(tcp), '-T'], range('tcp', 0, 200));
      logger(['-n', '127.0.0.1', '-P', String(udp), '-d'], range('udp', 0, 100));
      await sendTls(tlsPort, range('tls', 0, 200));
      await vi.waitFor(() => {
        expect(once(ofKey(intake, KEYS.Techno1), range('tcp', 0, 200))).toEqual([]);
        expect(once(ofKey(intake, KEYS.Techno2), range('udp', 0, 100))).toEqual([]);
        expect(once(ofKey(intake, KEYS.Techno3), range('tls', 0, 200))).toEqual([]);
      }, { timeout: 30_000, interval: 200 });

      // Root only to prepare: the daemon is 10001, ./disk_queue its own, the forwarder's file untouched.
      const id = (await compose(dir, project, ['ps', '-q'])).out.trim().split('\n').at(-1) as string;
      const pid = Number(spawnSync('podman', ['inspect', id, '--format', '{{.State.Pid}}'], { encoding: 'utf8' }).stdout.trim());
      const child = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/)[0];
      expect(readFileSync(`/proc/${child}/status`, 'utf8')).toMatch(/^Uid:\s+10001\s+10001\s+10001\s+10001$/m);
      expect(statSync(join(dir, 'disk_queue')).uid).toBe(10001);
      expect(statSync(join(dir, 'disk_queue/queues/Techno1')).uid).toBe(10001);
      expect(statSync(join(dir, 'disk_queue/sekoia_techno1_queue.00000001')).uid).toBe(0);
      expect(statSync(join(dir, 'certs/server.key')).uid).toBe(0);
      // The engine's health check, as the image declares it.
      const h = spawnSync('podman', ['healthcheck', 'run', id], { encoding: 'utf8' });
      expect(h.status, h.stdout + h.stderr).toBe(0);
      // validate, in the container: the layout, and the recipe as shared listeners.
      const v = await compose(dir, project, ['exec', '-T', 'rsyslog', '/usr/bin/intake-relay', 'validate']);
      expect(v.status, v.out).toBe(0);
      expect(v.out).toContain('/intakes.yaml: the official forwarder\'s configuration');
      expect(v.out).toMatch(/listeners:\n\s+- type: tcp\n\s+name: tcp-514\n\s+port: 514\n\s+routes:\n\s+- \{ match: \{ sender: 192\.168\.10\.5 \}, intake: paloalto \}/);
      expect(v.out).not.toMatch(/PaloAltoKey|CiscoAsaKey/);

      // The intake goes away; events queue on ./disk_queue; the forwarder's restart; the intake comes back.
      await intake.stop();
      logger(['-n', '127.0.0.1', '-P', String(tcp), '-T'], range('outage', 0, 500));
      await vi.waitFor(async () => expect(await metric(metrics, 'intake_relay_disk_queue_events', 'Techno1')).toBe(500), { timeout: 30_000, interval: 200 });
      const t0 = Date.now();
      const restart = await compose(dir, project, ['restart'], 60_000);
      expect(restart.status, restart.out).toBe(0);
      const restartMs = Date.now() - t0;
      await vi.waitFor(async () => expect(await metric(metrics, 'intake_relay_disk_queue_recovered_events_total', 'Techno1')).toBe(500), { timeout: 60_000, interval: 500 });
      intake = await standIn(intakePort, standInTls);
      await vi.waitFor(() => expect(once(ofKey(intake, KEYS.Techno1), range('outage', 0, 500))).toEqual([]), { timeout: 60_000, interval: 200 });
      const all = await logs();
      expect(all).toMatch(/"msg":"Stopped[^"]*"/);
      for (const k of Object.values(KEYS)) expect(all).not.toContain(k);
      console.info(`forwarder drop-in: 200 TCP + 100 UDP + 200 TLS events once each; 500 queued on ./disk_queue during the outage, docker-compose restart in ${restartMs} ms, all 500 delivered once after; ${statSync(join(dir, 'disk_queue')).uid === 10001 ? './disk_queue now 10001\'s' : ''}`);
      console.info(all.split('\n').filter((l) => /layout|extended_conf|running as user|Stopped/.test(l)).map((l) => l.slice(0, 400)).join('\n'));
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${(await logs()).split('\n').filter((l) => !/systemd/.test(l)).slice(-30).join('\n')}`);
    } finally {
      const down = await compose(dir, project, ['down', '-v']);
      expect(down.status, down.out).toBe(0);
    }
  }, 300_000);
});
