// deploy/kubernetes/sidecar.yaml's pod, played by `podman kube play` with the image built from the
// Dockerfile: the application writes a log file and sends syslog; at shutdown, on its SIGTERM, it
// writes and sends a last line, which must arrive. podman 4.3 cannot honour a native sidecar (it
// runs an init container to its end before the application: tried by hand), so the pod is played
// in the pattern the manifest documents for Kubernetes before 1.29: the relay as a plain container
// with shutdown_delay_ms, taking events that long after the SIGTERM both containers get.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { tempDir, track } from '../helpers/cleanup.ts';
import { BUILD_BASE, engine, IMAGE, type Engine } from '../helpers/engine.ts';
import { startTestIntake } from '../helpers/peers.ts';
import { counts } from '../helpers/process.ts';
import { TEST_KEY, TLS } from '../helpers/relay.ts';

const MANIFEST = new URL('../../deploy/kubernetes/sidecar.yaml', import.meta.url).pathname;
let eng: Engine;

beforeAll(async () => {
  eng = await engine();
  if (!eng.ok) console.warn(`kube play test skipped: ${eng.why}`);
}, 600_000);

function podman(args: readonly string[], timeoutMs: number): Promise<{ status: number | null; out: string; ms: number }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const p = spawn('podman', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, out: out.split('\n').filter((l) => !/systemd/.test(l)).join('\n'), ms: Date.now() - t0 });
    });
  });
}

interface Container { name: string; image: string; args?: string[]; command?: string[]; restartPolicy?: string; envFrom?: unknown; ports?: unknown; readinessProbe?: unknown; livenessProbe?: unknown; env?: { name: string; value: string }[]; volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[] }
interface PodSpec { hostNetwork?: boolean; initContainers?: Container[]; containers: Container[]; volumes: { name: string; configMap?: unknown; hostPath?: { path: string; type: string }; emptyDir?: unknown }[]; terminationGracePeriodSeconds?: number }

describe('deploy/kubernetes/sidecar.yaml under podman kube play', () => {
  it('the application\'s last line, written at its shutdown, arrives (the relay takes events for shutdown_delay_ms after the SIGTERM)', async ({ skip }) => {
    if (!eng.ok) return skip(eng.why);
    if (spawnSync('catatonit', ['--version']).error) return skip('catatonit (podman\'s pause process) is not installed (scripts/install-test-peers.sh installs it)');
    const intake = track(await startTestIntake());
    const dir = tempDir('kube-play-');
    // Mounted whole (hostPath) where a ConfigMap would be: the relay's user must read it.
    chmodSync(dir, 0o755);
    copyFileSync(`${TLS}ca.crt`, join(dir, 'ca.crt'));
    const docs = parseAllDocuments(await import('node:fs').then((fs) => fs.readFileSync(MANIFEST, 'utf8'))).map((d) => d.toJS() as { kind: string; spec: { template: { spec: PodSpec } } });
    const deployment = docs.find((d) => d.kind === 'Deployment')!;
    const pod = structuredClone(deployment.spec.template.spec);
    const relay = pod.initContainers!.find((c) => c.name === 'intake-relay')!;
    expect(relay.restartPolicy).toBe('Always');
    // The pattern before native sidecars: a plain container, with shutdown_delay_ms.
    delete relay.restartPolicy;
    pod.initContainers = pod.initContainers!.filter((c) => c !== relay);
    relay.image = IMAGE;
    delete relay.envFrom;
    relay.env = [{ name: 'INTAKE_KEY', value: TEST_KEY }];
    // On the host's network (the intake is on its loopback): no port mappings, and no metrics to probe.
    delete relay.ports;
    delete relay.readinessProbe;
    delete relay.livenessProbe;
    // The manifest's configuration with the intake on this host, and the delay.
    writeFileSync(join(dir, 'intake-relay.yaml'), `region: fra1
data_dir: /var/lib/intake-relay
shutdown_delay_ms: 3000
metrics: { enabled: false }
intakes:
  - name: app
    intake_key: \${INTAKE_KEY}
    inputs:
      - { type: tcp, address: 127.0.0.1, port: 1514 }
      - { type: file, name: app-logs, paths: [/var/log/app/**/*.log], read_from: beginning }
    output: { type: syslog, host: 127.0.0.1, port: ${intake.port}, server_name: localhost, ca_file: /etc/intake-relay/ca.crt, resend_window_ms: 200 }
`);
    pod.volumes = pod.volumes.map((v) => (v.configMap ? { name: v.name, hostPath: { path: dir, type: 'Directory' } } : v));
    relay.volumeMounts = relay.volumeMounts!.filter((m) => m.mountPath !== '/tmp');
    pod.volumes = pod.volumes.filter((v) => v.name !== 'tmp');
    relay.volumeMounts.push({ name: 'tmp', mountPath: '/tmp' });
    pod.volumes.push({ name: 'tmp', emptyDir: {} });
    const app = pod.containers.find((c) => c.name === 'app')!;
    app.image = BUILD_BASE;
    writeFileSync(join(dir, 'app.js'), `
const fs = require('node:fs'), net = require('node:net');
const send = (text, done) => { const s = net.connect(1514, '127.0.0.1', () => s.end(text)); s.on('error', () => setTimeout(() => send(text, done), 200)); s.on('close', () => done && done()); };
fs.writeFileSync('/var/log/app/app.log', 'first file line\\n');
send('<14>Nov 28 10:00:00 app app: first syslog line\\n');
process.on('SIGTERM', () => {
  fs.appendFileSync('/var/log/app/app.log', 'last file line\\n');
  send('<14>Nov 28 10:00:00 app app: last syslog line\\n', () => process.exit(0));
});
setInterval(() => {}, 1 << 30);
`);
    // The script as a file: podman 4.3's YAML reader fails on a long script given inline.
    app.command = ['node', '/app/app.js'];
    app.volumeMounts = [...(app.volumeMounts ?? []), { name: 'app-code', mountPath: '/app', readOnly: true }];
    pod.volumes.push({ name: 'app-code', hostPath: { path: dir, type: 'Directory' } });
    pod.containers = [relay, app];
    pod.hostNetwork = true;
    const name = `sidecar${process.pid}`;
    // JSON is YAML, and podman's parser reads it whatever the script's lines hold.
    writeFileSync(join(dir, 'pod.yaml'), JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: pod }, null, 2));
    try {
      const play = await podman(['kube', 'play', join(dir, 'pod.yaml')], 120_000);
      expect(play.status, play.out).toBe(0);
      try {
        await vi.waitFor(() => expect(intake.received.map((m) => m.message)).toEqual(expect.arrayContaining(['first file line', 'first syslog line'])), { timeout: 30_000, interval: 200 });
      } catch (err) {
        const logs = await podman(['logs', `${name}-intake-relay`], 10_000);
        const app = await podman(['logs', `${name}-app`], 10_000);
        throw new Error(`${(err as Error).message}\nrelay: ${logs.out.slice(-1500)}\napp: ${app.out.slice(-500)}`);
      }
      // The pod's end, as the kubelet ends it: SIGTERM to every container, then the grace period.
      // (`podman kube down` removes the pod without waiting for its containers to stop.)
      const down = await podman(['pod', 'stop', name], 60_000);
      expect(down.status, down.out).toBe(0);
      try {
        await vi.waitFor(() => expect(intake.received.map((m) => m.message)).toEqual(expect.arrayContaining(['last file line', 'last syslog line'])), { timeout: 10_000, interval: 200 });
      } catch (err) {
        throw new Error(`${(err as Error).message}\ndown: ${down.ms} ms ${down.out.slice(-500)}`);
      }
      const seen = counts(intake);
      for (const m of ['first file line', 'first syslog line', 'last file line', 'last syslog line']) expect(seen.get(m), m).toBe(1);
    } finally {
      await podman(['pod', 'rm', '-f', name], 30_000);
    }
  }, 180_000);
});
