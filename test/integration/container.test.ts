// The image built from the real Dockerfile by a real engine (podman with runc; test/helpers/engine.ts
// makes the base images from Debian's packages, as no registry is reachable) and run through
// testcontainers as a user runs it: without a key; with the emulator, healthy by the engine's own
// health check; as a sidecar (non-root, read-only root filesystem) following a file on a shared
// volume and forwarding to a TLS intake on the host; stopped by the engine's default timeout with
// events in flight, a disk queue (the intake down: nothing lost, delivered after a restart) and a
// memory queue (the intake up: delivered within the drain). The engine shares the host's network
// (containers.conf netns = "host"), so the tests give each container ports of its own.
import { appendFileSync, chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GenericContainer, Wait, type StartedTestContainer } from 'testcontainers';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { tempDir, track } from '../helpers/cleanup.ts';
import { engine, IMAGE, podman, podmanAsync, type Engine } from '../helpers/engine.ts';
import { freePort, sendTcp, startTestIntake } from '../helpers/peers.ts';
import { counts } from '../helpers/process.ts';
import { TEST_KEY, TLS } from '../helpers/relay.ts';
import { syslogLines, syslogMessages } from '../helpers/lines.ts';

/**
 * A container that can have a read-only root filesystem (testcontainers has no option for it), and
 * the engines' usual 10 s stop timeout: created through podman's Docker API without one, a
 * container gets 0 (a stop is then a SIGKILL), where `podman run` and Docker give 10.
 */
class RelayContainer extends GenericContainer {
  constructor(image: string) {
    super(image);
    this.createOpts.StopTimeout = 10;
  }

  readOnly(): this {
    this.hostConfig.ReadonlyRootfs = true;
    return this;
  }
}

let eng: Engine;
const started: StartedTestContainer[] = [];

beforeAll(async () => {
  eng = await engine();
  if (!eng.ok) console.warn(`container tests skipped: ${eng.why}`);
}, 600_000);

afterEach(() => {
  for (const c of started.splice(0)) podman(['rm', '-f', '-v', c.getId()]);
});


/** The image with `env`, on the host's network, waited for until it says it started. */
async function run(env: Record<string, string>, o: { binds?: { source: string; target: string; mode?: 'ro' | 'rw' }[]; readOnly?: boolean; command?: string[] } = {}): Promise<StartedTestContainer> {
  let c = new RelayContainer(IMAGE).withNetworkMode('host').withEnvironment(env).withWaitStrategy(Wait.forLogMessage('intake-relay started.')).withStartupTimeout(30_000);
  if (o.binds) c = c.withBindMounts(o.binds);
  if (o.command) c = c.withCommand(o.command);
  // The executable writes its native addon to /tmp to load it (then removes it).
  if (o.readOnly) c = c.readOnly().withTmpFs({ '/tmp': 'rw,exec,size=16m' });
  const s = await c.start();
  started.push(s);
  return s;
}

const logsOf = (c: StartedTestContainer): string => podman(['logs', c.getId()]).stdout + podman(['logs', c.getId()]).stderr;

/** A directory the container's user (10001) may write. */
function openDir(prefix: string): string {
  const d = tempDir(prefix);
  chmodSync(d, 0o777);
  return d;
}

describe('the image, built and run by podman', () => {
  it('carries the revision in --version and its labels; without a key: exit 78 and one line', ({ skip }) => {
    if (!eng.ok) return skip(eng.why);
    const v = podman(['run', '--rm', IMAGE, '--version']);
    expect(v.stdout).toContain(`(commit ${eng.revision.slice(0, 12)}, Node.js v24`);
    const labels = JSON.parse(podman(['image', 'inspect', IMAGE, '--format', '{{json .Config.Labels}}']).stdout) as Record<string, string>;
    expect(labels['org.opencontainers.image.revision']).toBe(eng.revision);
    const r = podman(['run', '--rm', IMAGE]);
    expect(r.status).toBe(78);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/INTAKE_KEY is not set or empty\): set it, or INTAKE_RELAY_EMULATOR=no_intake_key/);
    // The configuration is root's, the state directory the daemon's, and no volume for the configuration.
    const cfg = JSON.parse(podman(['image', 'inspect', IMAGE, '--format', '{{json .Config}}']).stdout) as { User: string; Volumes: Record<string, unknown> };
    // Root to start (a state directory mounted from the host belongs to root), the daemon then 10001.
    expect(cfg.User).toBe('0:0');
    expect(Object.keys(cfg.Volumes)).toEqual(['/var/lib/intake-relay']);
    // Kept by --format docker (an OCI image has no HEALTHCHECK).
    expect((JSON.parse(podman(['image', 'inspect', IMAGE, '--format', '{{json .HealthCheck}}']).stdout) as { Test: string[] }).Test).toEqual(['CMD', '/usr/bin/intake-relay', 'healthcheck']);
  }, 60_000);

  it('under the engine\'s memory limit (--memory 96m), memory_bytes not set: two thirds of it, said; without a limit, 128 MiB', ({ skip }) => {
    if (!eng.ok) return skip(eng.why);
    const key = ['-e', 'INTAKE_KEY=abcdef0123456789abcdef0123456789'];
    const limited = podman(['run', '--rm', '--memory', '96m', ...key, IMAGE, 'validate']);
    expect(limited.status).toBe(0);
    expect(limited.stdout).toContain('memory: 64 MiB (memory_bytes)');
    expect(limited.stdout).toContain("warning: memory_bytes: not set; 64 MiB, two thirds of this process's memory limit (96 MiB)");
    const free = podman(['run', '--rm', ...key, IMAGE, 'validate']);
    expect(free.stdout).toContain('memory: 128 MiB (memory_bytes)');
    expect(free.stdout).not.toContain('warning: memory_bytes');
  }, 60_000);

  it('with the emulator: as uid 10001 on a read-only root filesystem, healthy by the engine\'s health check, an event arrives, a stop exits 0', async ({ skip }) => {
    if (!eng.ok) return skip(eng.why);
    const [syslog, metrics] = [await freePort(), await freePort()];
    const c = await run({ INTAKE_RELAY_EMULATOR: 'no_intake_key', LISTEN_ADDRESS: '127.0.0.1', METRICS_ADDRESS: '127.0.0.1', SYSLOG_PORT: String(syslog), METRICS_PORT: String(metrics) }, { readOnly: true });
    await sendTcp(syslog, '<14>Nov 28 10:00:00 host app: through the image\n');
    await vi.waitFor(() => expect(logsOf(c)).toContain('Emulator received a valid message.'), { timeout: 15_000 });
    // The engine's own check (its timer needs systemd, absent here: run on demand).
    const h = podman(['healthcheck', 'run', c.getId()]);
    expect(h.status, h.stdout + h.stderr).toBe(0);
    expect(podman(['inspect', c.getId(), '--format', '{{.State.Health.Status}}']).stdout.trim()).toBe('healthy');
    const pid = Number(podman(['inspect', c.getId(), '--format', '{{.State.Pid}}']).stdout.trim());
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/);
    // Started as root, it became 10001:10001 (INTAKE_RELAY_USER) for good: real, effective, saved, fs; no other group.
    const status = readFileSync(`/proc/${children[0]}/status`, 'utf8');
    expect(status).toMatch(/^Uid:\s+10001\s+10001\s+10001\s+10001$/m);
    expect(status).toMatch(/^Gid:\s+10001\s+10001\s+10001\s+10001$/m);
    expect(status).toMatch(/^Groups:\s+10001\s*$/m);
    expect(status).toMatch(/^CapEff:\s+0+$/m);
    const stop = await podmanAsync(['stop', c.getId()]);
    expect(stop.status).toBe(0);
    expect(podman(['inspect', c.getId(), '--format', '{{.State.ExitCode}}']).stdout.trim()).toBe('0');
    expect(logsOf(c)).toMatch(/"msg":"Stopped: every queued event was delivered/);
    expect(logsOf(c)).not.toContain(TEST_KEY);
  }, 90_000);

  it('as a sidecar: follows a file on a shared volume and forwards it over TLS to an intake on the host; non-root, read-only root', async ({ skip }) => {
    if (!eng.ok) return skip(eng.why);
    const intake = track(await startTestIntake());
    const logs = openDir('app-logs-');
    const state = openDir('relay-state-');
    const conf = join(tempDir('relay-conf-'), 'intake-relay.yaml');
    writeFileSync(conf, `log_level: info
data_dir: /var/lib/intake-relay
metrics: { enabled: false }
intakes:
  - name: app
    intake_key: \${INTAKE_KEY}
    inputs:
      - { type: file, name: app-logs, paths: [/var/log/app/*.log], read_from: beginning }
    output: { type: syslog, host: 127.0.0.1, port: ${intake.port}, server_name: localhost, ca_file: /certs/ca.crt, resend_window_ms: 200 }
`);
    const body = (i: number): string => `sidecar ${String(i).padStart(5, '0')}`;
    const lines = (n: number): string => Array.from({ length: n }, (_, i) => `${body(i)}\n`).join('');
    writeFileSync(join(logs, 'app.log'), lines(500));
    chmodSync(join(logs, 'app.log'), 0o644);
    const c = await run({ INTAKE_KEY: TEST_KEY }, {
      readOnly: true,
      binds: [
        { source: conf, target: '/etc/intake-relay/intake-relay.yaml', mode: 'ro' },
        { source: logs, target: '/var/log/app', mode: 'ro' },
        { source: state, target: '/var/lib/intake-relay', mode: 'rw' },
        { source: `${TLS}ca.crt`, target: '/certs/ca.crt', mode: 'ro' },
      ],
    });
    // The application appends while the relay runs.
    appendFileSync(join(logs, 'app.log'), lines(1_000).split('\n').slice(500).join('\n'));
    await vi.waitFor(() => expect(intake.received.length).toBeGreaterThanOrEqual(1_000), { timeout: 30_000 });
    const seen = counts(intake);
    expect(Array.from({ length: 1_000 }, (_, i) => body(i)).filter((m) => seen.get(m) !== 1)).toEqual([]);
    expect(intake.received[0]).toMatchObject({ intakeKey: TEST_KEY, problems: [] });
    expect((await podmanAsync(['stop', c.getId()])).status).toBe(0);
    // Its checkpoint is in the state volume, written as the daemon's user.
    expect(JSON.parse(readFileSync(join(state, 'files', 'app--app-logs.json'), 'utf8'))).toMatchObject({ version: 1 });
  }, 90_000);

  it('stopped with the engine\'s default timeout, a disk queue and the intake down: back in under 3 s, nothing lost (delivered after a restart)', async ({ skip }) => {
    if (!eng.ok) return skip(eng.why);
    const [tcp, metrics, intakePort] = [await freePort(), await freePort(), await freePort()];
    const state = openDir('relay-state-');
    const conf = join(tempDir('relay-conf-'), 'intake-relay.yaml');
    writeFileSync(conf, `data_dir: /var/lib/intake-relay
metrics: { address: 127.0.0.1, port: ${metrics} }
intakes:
  - name: disk
    intake_key: \${INTAKE_KEY}
    inputs: [{ type: tcp, address: 127.0.0.1, port: ${tcp} }]
    output: { type: syslog, host: 127.0.0.1, port: ${intakePort}, server_name: localhost, ca_file: /certs/ca.crt, resend_window_ms: 200 }
    queue: { type: disk }
`);
    const binds = [
      { source: conf, target: '/etc/intake-relay/intake-relay.yaml', mode: 'ro' as const },
      { source: state, target: '/var/lib/intake-relay', mode: 'rw' as const },
      { source: `${TLS}ca.crt`, target: '/certs/ca.crt', mode: 'ro' as const },
    ];
    const body = (i: number): string => `disk ${String(i).padStart(5, '0')}`;
    const first = await run({ INTAKE_KEY: TEST_KEY }, { binds });
    await sendTcp(tcp, syslogLines(0, 2_000, body));
    await vi.waitFor(async () => expect(await (await fetch(`http://127.0.0.1:${metrics}/metrics`)).text()).toMatch(/^intake_relay_events_received_total\{[^}]*\} 2000$/m), { timeout: 15_000 });
    const stop = await podmanAsync(['stop', first.getId()]);
    expect(stop.status).toBe(0);
    expect(stop.ms).toBeLessThan(3_000);
    console.info(`container, disk queue, intake down: 2000 events in, podman stop (default timeout) ${stop.ms} ms`);
    expect(podman(['inspect', first.getId(), '--format', '{{.State.ExitCode}}']).stdout.trim()).toBe('0');
    expect(logsOf(first)).toContain('"msg":"Stopped: 2000 events kept in disk queues for the next start');
    const intake = track(await startTestIntake(intakePort));
    await run({ INTAKE_KEY: TEST_KEY }, { binds });
    await vi.waitFor(() => expect(intake.received.length).toBeGreaterThanOrEqual(2_000), { timeout: 30_000 });
    const seen = counts(intake);
    expect(syslogMessages(0, 2_000, body).filter((m) => !seen.has(m))).toEqual([]);
  }, 120_000);

  it('stopped with the engine\'s default timeout, a memory queue and the intake up: what was in flight arrives within the drain', async ({ skip }) => {
    if (!eng.ok) return skip(eng.why);
    const intake = track(await startTestIntake());
    const tcp = await freePort();
    const conf = join(tempDir('relay-conf-'), 'intake-relay.yaml');
    writeFileSync(conf, `metrics: { enabled: false }
intakes:
  - name: mem
    intake_key: \${INTAKE_KEY}
    inputs: [{ type: tcp, address: 127.0.0.1, port: ${tcp} }]
    output: { type: syslog, host: 127.0.0.1, port: ${intake.port}, server_name: localhost, ca_file: /certs/ca.crt, resend_window_ms: 60000 }
`);
    const c = await run({ INTAKE_KEY: TEST_KEY }, { binds: [{ source: conf, target: '/etc/intake-relay/intake-relay.yaml', mode: 'ro' }, { source: `${TLS}ca.crt`, target: '/certs/ca.crt', mode: 'ro' }] });
    const body = (i: number): string => `mem ${String(i).padStart(5, '0')}`;
    await sendTcp(tcp, syslogLines(0, 5_000, body));
    // Written, not confirmed yet (a confirmation comes within resend_window_ms: here only at the stop).
    const stop = await podmanAsync(['stop', c.getId()]);
    expect(stop.status).toBe(0);
    expect(stop.ms).toBeLessThan(10_000);
    console.info(`container, memory queue, intake up: 5000 events in, podman stop (default timeout) ${stop.ms} ms`);
    expect(podman(['inspect', c.getId(), '--format', '{{.State.ExitCode}}']).stdout.trim()).toBe('0');
    await vi.waitFor(() => expect(new Set(intake.received.map((m) => m.message)).size).toBeGreaterThanOrEqual(5_000), { timeout: 5_000 });
    const seen = counts(intake);
    expect(syslogMessages(0, 5_000, body).filter((m) => !seen.has(m)), logsOf(c).slice(-2000)).toEqual([]);
    expect(logsOf(c)).toMatch(/"msg":"Stopped: every queued event was delivered \(\d+ while stopping\)\."/);
  }, 90_000);
});
