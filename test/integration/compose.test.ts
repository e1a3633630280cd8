// deploy/docker-compose.yml, run as it is by docker-compose against podman's Docker API, with an
// override a user would write: the application (a small Node program on the build stage's base)
// writes a log file to the shared volume and sends syslog to the relay on localhost; the relay (the
// image built from the Dockerfile, read-only, non-root, in the application's network namespace:
// network_mode service:app) forwards both to a TLS intake on the host. Every line arrives once.
// (podman-compose 1.0.3, Debian 12's, cannot run it: it passes network_mode "service:app" to podman
// as is, which podman refuses, and it appends an override's command to the file's instead of
// replacing it.)
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { tempDir, track } from '../helpers/cleanup.ts';
import { BUILD_BASE, engine, IMAGE, SOCKET, type Engine } from '../helpers/engine.ts';
import { startTestIntake } from '../helpers/peers.ts';
import { counts } from '../helpers/process.ts';
import { TEST_KEY, TLS } from '../helpers/relay.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
let eng: Engine;

beforeAll(async () => {
  eng = await engine();
  if (!eng.ok) console.warn(`compose test skipped: ${eng.why}`);
}, 600_000);


function compose(dir: string, project: string, args: readonly string[], timeoutMs = 120_000): Promise<{ status: number | null; out: string; ms: number }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const p = spawn('docker-compose', ['-p', project, '-f', join(ROOT, 'deploy', 'docker-compose.yml'), '-f', join(dir, 'override.yml'), ...args], {
      cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, INTAKE_KEY: TEST_KEY, DOCKER_HOST: `unix://${SOCKET}` },
    });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, out, ms: Date.now() - t0 });
    });
  });
}

describe('deploy/docker-compose.yml with docker-compose on podman', () => {
  it('the sidecar forwards the application\'s file lines and syslog to the intake, each once', async ({ skip }) => {
    if (!eng.ok) return skip(eng.why);
    if (spawnSync('docker-compose', ['--version']).status !== 0) return skip('docker-compose is not installed (scripts/install-test-peers.sh installs it)');
    const intake = track(await startTestIntake());
    const dir = tempDir('compose-');
    copyFileSync(`${TLS}ca.crt`, join(dir, 'ca.crt'));
    // What a user changes: the relay's configuration (the intake on this host) and the application.
    writeFileSync(join(dir, 'relay.yaml'), `data_dir: /var/lib/intake-relay
metrics: { enabled: false }
intakes:
  - name: app
    intake_key: \${INTAKE_KEY}
    inputs:
      - { type: tcp, address: 127.0.0.1, port: 1514 }
      - { type: file, name: app-logs, paths: [/var/log/app/*.log], read_from: beginning }
    output: { type: syslog, host: 127.0.0.1, port: ${intake.port}, server_name: localhost, ca_file: /test/ca.crt, resend_window_ms: 200 }
`);
    const app = `
const fs = require('node:fs'), net = require('node:net');
fs.mkdirSync('/var/log/app', { recursive: true });
fs.writeFileSync('/var/log/app/app.log', Array.from({ length: 200 }, (_, i) => 'file line ' + i + '\\n').join(''), { mode: 0o644 });
const send = () => { const s = net.connect(1514, '127.0.0.1', () => s.end(Array.from({ length: 100 }, (_, i) => '<14>Nov 28 10:00:00 app app: syslog line ' + i + '\\n').join(''))); s.on('error', () => setTimeout(send, 200)); };
send();
setInterval(() => {}, 1 << 30);
`;
    writeFileSync(join(dir, 'app.js'), app);
    // Paths are absolute: relative ones are the first file's (deploy/). The application shares the
    // host's network here (the intake runs on this host's loopback).
    writeFileSync(join(dir, 'override.yml'), `services:
  app:
    image: ${BUILD_BASE}
    network_mode: host
    command: ["node", "/test/app.js"]
    volumes:
      - ${dir}/app.js:/test/app.js:ro
  intake-relay:
    image: ${IMAGE}
    command: ["run", "-c", "/test/relay.yaml"]
    volumes:
      - ${dir}/relay.yaml:/test/relay.yaml:ro
      - ${dir}/ca.crt:/test/ca.crt:ro
`);
    const project = `relaytest${process.pid}`;
    try {
      const up = await compose(dir, project, ['up', '-d', '--no-build']);
      expect(up.status, up.out).toBe(0);
      try {
        await vi.waitFor(() => expect(intake.received.length).toBeGreaterThanOrEqual(300), { timeout: 60_000, interval: 200 });
      } catch (err) {
        const logs = await compose(dir, project, ['logs']);
        throw new Error(`${(err as Error).message}\n${logs.out.split('\n').filter((l) => !/systemd/.test(l)).slice(-40).join('\n')}`);
      }
      const seen = counts(intake);
      const want = [...Array.from({ length: 200 }, (_, i) => `file line ${i}`), ...Array.from({ length: 100 }, (_, i) => `syslog line ${i}`)];
      expect(want.filter((m) => seen.get(m) !== 1)).toEqual([]);
    } finally {
      // docker-compose removes both containers at once; podman refuses to remove the application's
      // while the relay (in its network namespace) still exists: a second `down` finishes it.
      let down = await compose(dir, project, ['down', '-v']);
      if (down.status !== 0) down = await compose(dir, project, ['down', '-v']);
      expect(down.status, down.out.split('\n').filter((l) => !/systemd/.test(l)).join('\n')).toBe(0);
    }
  }, 180_000);
});
