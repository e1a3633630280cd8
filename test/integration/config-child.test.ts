// The daemon's configuration is loaded by a child process (src/config/load-child.ts), at start and
// at each reload, so that the long-running process never holds the schema library and the schemas
// (13 MB of RSS at rest). Checked on the real process: every module it loaded is recorded, and
// neither zod nor the loader is among them after a start and a reload; a refused configuration
// still names its file, line and key, from the child.
import { execFileSync } from 'node:child_process';
import { closeSync, constants, cpSync, openSync, readFileSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { freePort, sendTcp, startTestIntake } from '../helpers/peers.ts';
import { runCli, startCli } from '../helpers/process.ts';
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
    const { proc, output, exited: exitCode } = startCli(['run', '-c', file], { node: ['--import', RECORDER], env: { RECORD_MODULES: record } });
    await vi.waitFor(() => expect(output()).toContain('intake-relay started'), { timeout: 20_000 });

    writeFileSync(file, `${yaml(intake.port, [a], m)}bogus_key: 1\n`);
    proc.kill('SIGHUP');
    await vi.waitFor(() => expect(output()).toContain('Reload refused: the new configuration is invalid'), { timeout: 20_000 });
    expect(output()).toMatch(/relay\.yaml:\d+:\d+: bogus_key: unknown key/);

    writeFileSync(file, yaml(intake.port, [a, b], m));
    proc.kill('SIGHUP');
    await vi.waitFor(() => expect(output()).toContain('Configuration reloaded'), { timeout: 20_000 });
    await sendTcp(b, '<14>Nov 26 10:00:00 host app: after the reload\n');
    await vi.waitFor(() => expect(intake.received.map((m) => m.message)).toContain('after the reload'), { timeout: 10_000 });

    proc.kill('SIGTERM');
    expect(await exitCode).toBe(0);
    const modules = readFileSync(record, 'utf8').split('\n').filter(Boolean);
    // The recorder works: the daemon's own modules are there.
    expect(modules.some((m) => m.endsWith('/src/runtime/relay.ts'))).toBe(true);
    expect(modules.filter((f) => /\/node_modules\/zod\/|\/src\/config\/(load|schema)\.ts$|\/schema\.ts$/.test(f))).toEqual([]);
    // Nor the YAML library (the loader child parses the file; validate prints YAML).
    expect(modules.filter((f) => f.includes('/node_modules/yaml/'))).toEqual([]);
    // Nor Node's bundled undici (14 MB), which an ES module import of node:http loads through its
    // WebSocket getters (src/platform/builtins.ts); the metrics endpoint served HTTP meanwhile.
    expect(modules).toContain('builtin:_http_server');
    expect(modules.filter((f) => f.includes('undici'))).toEqual([]);
    expect(output()).not.toContain(TEST_KEY);
  }, 60_000);

  it('run -c /dev/stdin: the daemon reads the file and hands its bytes to the loader', async () => {
    const intake = track(await startTestIntake());
    const a = await freePort();
    const dir = tempDir('config-child-');
    writeFileSync(join(dir, 'relay.yaml'), yaml(intake.port, [a]));
    // A pipe from another program, as an operator writes it (Node's own 'pipe' is a socket, which /dev/stdin cannot open).
    const { proc, output, exited: exitCode } = startCli(['run', '-c', '/dev/stdin'], { prefix: ['bash', '-c', 'exec "$@" < <(cat "$0")', join(dir, 'relay.yaml')] });
    await vi.waitFor(() => expect(output()).toContain('intake-relay started'), { timeout: 20_000 });
    await sendTcp(a, '<14>Nov 26 10:00:00 host app: from a piped configuration\n');
    await vi.waitFor(() => expect(intake.received.map((m) => m.message)).toContain('from a piped configuration'), { timeout: 10_000 });
    proc.kill('SIGTERM');
    expect(await exitCode).toBe(0);
  });

  it('a SIGHUP while the configuration is still being read at start is applied once the daemon runs, not fatal', async () => {
    const intake = track(await startTestIntake());
    const a = await freePort();
    const dir = tempDir('config-child-');
    const fifo = join(dir, 'relay.yaml');
    execFileSync('mkfifo', [fifo]);
    const { proc, output, exited: exitCode } = startCli(['run', '-c', fifo]);
    // Once the daemon waits in open() for a writer (its signal handler is installed by then), a
    // non-blocking open for writing succeeds; the daemon then waits in read() for the content.
    const writer = (): Promise<number> => vi.waitFor(() => openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK), { timeout: 20_000 });
    const w1 = await writer();
    proc.kill('SIGHUP');
    writeSync(w1, yaml(intake.port, [a]));
    closeSync(w1);
    await vi.waitFor(() => expect(output()).toContain('intake-relay started'), { timeout: 20_000 });
    // The reload the signal asked for reads the file again, in the loader child: it opens the FIFO.
    const w2 = await writer();
    writeSync(w2, yaml(intake.port, [a]));
    closeSync(w2);
    await vi.waitFor(() => expect(output()).toContain('"trigger":"SIGHUP"'), { timeout: 20_000 });
    expect(proc.exitCode).toBe(null);
    proc.kill('SIGTERM');
    expect(await exitCode).toBe(0);
  }, 60_000);

  it('after an upgrade on disk, a reload is refused (the new program\'s loader is another version) and the running configuration stays', async () => {
    const intake = track(await startTestIntake());
    const [a, b] = [await freePort(), await freePort()];
    // A copy of the program, as an installed package: its own package.json, the same dependencies.
    const root = tempDir('config-child-upgrade-');
    cpSync(new URL('../../src', import.meta.url).pathname, join(root, 'src'), { recursive: true });
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    writeFileSync(join(root, 'package.json'), JSON.stringify(pkg));
    symlinkSync(new URL('../../node_modules', import.meta.url).pathname, join(root, 'node_modules'));
    const file = join(root, 'relay.yaml');
    writeFileSync(file, yaml(intake.port, [a]));
    const { proc, output } = startCli(['run', '-c', file], { main: join(root, 'src/main.ts') });
    await vi.waitFor(() => expect(output()).toContain('intake-relay started'), { timeout: 20_000 });

    // The package is upgraded under the running daemon, and the configuration changed.
    writeFileSync(join(root, 'package.json'), JSON.stringify({ ...pkg, version: '99.0.0' }));
    writeFileSync(file, yaml(intake.port, [a, b]));
    proc.kill('SIGHUP');
    await vi.waitFor(() => expect(output()).toContain('Reload refused: the configuration could not be loaded'), { timeout: 20_000 });
    expect(output()).toMatch(/intake-relay on disk is now 99\.0\.0 \(commit [^)]+\) and this daemon [^:]+: restart it to apply a configuration/);
    // Nothing of the new file applied; the old one runs on.
    await expect(sendTcp(b, '<14>Nov 23 10:00:00 host app: b\n')).rejects.toThrow(/ECONNREFUSED/);
    await sendTcp(a, '<14>Nov 23 10:00:00 host app: still a\n');
    await vi.waitFor(() => expect(intake.received.map((m) => m.message)).toContain('still a'), { timeout: 10_000 });
  }, 60_000);

  it('run: an invalid file exits 78 with the problem, from the child, before opening any port', async () => {
    const dir = tempDir('config-child-');
    const file = join(dir, 'relay.yaml');
    const port = await freePort();
    writeFileSync(file, `${yaml(1, [port])}bogus_key: 1\n`);
    const r = await runCli(['run', '-c', file]);
    expect(r.code).toBe(78);
    expect(r.stderr).toMatch(/^.*relay\.yaml:\d+:\d+: bogus_key: unknown key.*\n$/);
  });
});
