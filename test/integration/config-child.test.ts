// The daemon's configuration is loaded by a child process (src/config/load-child.ts), at start and
// at each reload, so that the long-running process never holds the schema library and the schemas
// (13 MB of RSS at rest). Checked on the real process: every module it loaded is recorded, and
// neither zod nor the loader is among them after a start and a reload; a refused configuration
// still names its file, line and key, from the child.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { freePort, sendTcp, startTestIntake } from '../helpers/peers.ts';
import { MAIN, exited } from '../helpers/process.ts';
import { tempDir, track } from '../helpers/cleanup.ts';
import { TEST_KEY, TLS } from '../helpers/relay.ts';

const RECORDER = new URL('../fixtures/record-modules.mjs', import.meta.url).pathname;

function yaml(intakePort: number, ports: number[], metricsPort = 0): string {
  return `intakes:
${ports.map((p, i) => `  - name: i${i}
    intake_key: "${TEST_KEY}"
    output: { type: syslog, host: 127.0.0.1, port: ${intakePort}, ca_file: ${TLS}ca.crt }
    inputs: [{ type: tcp, address: 127.0.0.1, port: ${p} }]
`).join('')}${metricsPort ? `metrics: { address: 127.0.0.1, port: ${metricsPort} }` : 'metrics: { enabled: false }'}
`;
}

describe('configuration loaded by a child process', () => {
  it('the daemon process never loads the schema library, at start or at reload; a refused file is still reported with its position', async () => {
    const intake = track(await startTestIntake());
    const [a, b, m] = [await freePort(), await freePort(), await freePort()];
    const dir = tempDir('config-child-');
    const file = join(dir, 'relay.yaml');
    const record = join(dir, 'modules.txt');
    writeFileSync(file, yaml(intake.port, [a], m));
    const proc = spawn(process.execPath, ['--import', RECORDER, MAIN, 'run', '-c', file], { env: { ...process.env, RECORD_MODULES: record }, stdio: ['ignore', 'pipe', 'pipe'] });
    track({ stop: async () => { if (proc.exitCode === null) proc.kill('SIGKILL'); await exited(proc); } });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
    await vi.waitFor(() => expect(out).toContain('intake-relay started'), { timeout: 20_000 });

    writeFileSync(file, `${yaml(intake.port, [a], m)}bogus_key: 1\n`);
    proc.kill('SIGHUP');
    await vi.waitFor(() => expect(out).toContain('Reload refused: the new configuration is invalid'), { timeout: 20_000 });
    expect(out).toMatch(/relay\.yaml:\d+:\d+: bogus_key: unknown key/);

    writeFileSync(file, yaml(intake.port, [a, b], m));
    proc.kill('SIGHUP');
    await vi.waitFor(() => expect(out).toContain('Configuration reloaded'), { timeout: 20_000 });
    await sendTcp(b, '<14>Nov 26 10:00:00 host app: after the reload\n');
    await vi.waitFor(() => expect(intake.received.map((m) => m.message)).toContain('after the reload'), { timeout: 10_000 });

    proc.kill('SIGTERM');
    await exited(proc);
    expect(proc.exitCode).toBe(0);
    const modules = readFileSync(record, 'utf8').split('\n').filter(Boolean);
    // The recorder works: the daemon's own modules are there.
    expect(modules.some((m) => m.endsWith('/src/pipeline/daemon.ts'))).toBe(true);
    expect(modules.filter((f) => /\/node_modules\/zod\/|\/src\/config\/(load|schema)\.ts$|\/schema\.ts$/.test(f))).toEqual([]);
    // Nor Node's bundled undici (14 MB), which an ES module import of node:http loads through its
    // WebSocket getters (src/core/builtins.ts); the metrics endpoint served HTTP meanwhile.
    expect(modules).toContain('builtin:_http_server');
    expect(modules.filter((f) => f.includes('undici'))).toEqual([]);
    expect(out).not.toContain(TEST_KEY);
  }, 60_000);

  it('run: an invalid file exits 78 with the problem, from the child, before opening any port', async () => {
    const dir = tempDir('config-child-');
    const file = join(dir, 'relay.yaml');
    const port = await freePort();
    writeFileSync(file, `${yaml(1, [port])}bogus_key: 1\n`);
    const proc = spawn(process.execPath, [MAIN, 'run', '-c', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    await exited(proc);
    expect(proc.exitCode).toBe(78);
    expect(err).toMatch(/^.*relay\.yaml:\d+:\d+: bogus_key: unknown key.*\n$/);
  });
});
