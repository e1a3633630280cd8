// The single executable as an operator runs it: built by scripts/package.ts (as `npm run package`
// does) for this machine's architecture into a temporary directory, then run with no Node.js on
// PATH: --version, validate of the shipped config, and `run` of the shipped config, which with no
// INTAKE_KEY forwards to its local emulator; one event goes through and SIGTERM drains it.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { gitCommit } from '../../scripts/build-info.ts';
import { VERSION } from '../../src/version.ts';
import { track } from '../helpers/cleanup.ts';
import { freePort, sendTcp, waitListening } from '../helpers/peers.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
/** The Node.js the executable is made of: the `node` devDependency's. */
const NODE_VERSION = (JSON.parse(readFileSync(join(ROOT, 'node_modules', 'node', 'package.json'), 'utf8')) as { version: string }).version;

let dir: string;
let exe: string;
/** A PATH with nothing on it: the executable must need no node, nor anything else. */
let emptyPath: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sea-'));
  emptyPath = join(dir, 'empty-bin');
  mkdirSync(emptyPath);
  // About 15 s on a 2-core machine: bundle, blob, a copy of the ~120 MiB Node binary, postject.
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'package.ts'), '--arch', process.arch, '--out', join(dir, 'out')], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  exe = join(dir, 'out', `intake-relay-linux-${process.arch}`);
}, 180_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('single executable', () => {
  it('--version: version, commit and its own Node.js, with no node on PATH and NODE_OPTIONS ignored', () => {
    // A NODE_OPTIONS that would stop any Node.js at start-up: the executable does not read it.
    const r = spawnSync(exe, ['--version'], { encoding: 'utf8', env: { PATH: emptyPath, NODE_OPTIONS: '--require /nonexistent.js' } });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`intake-relay ${VERSION} (commit ${gitCommit()}, Node.js v${NODE_VERSION}, single executable)\n`);
    expect(r.status).toBe(0);
    // Node flags go on the command line instead, and are taken out of the daemon's own arguments.
    const flagged = spawnSync(exe, ['--node-options=--max-old-space-size=256', '--version'], { encoding: 'utf8', env: { PATH: emptyPath } });
    expect(flagged.stdout).toBe(r.stdout);
  });

  it('validates the shipped configuration, and refuses a broken one with exit 78', () => {
    const ok = spawnSync(exe, ['validate', '-c', join(ROOT, 'config', 'intake-relay.yaml')], { encoding: 'utf8', env: { PATH: emptyPath } });
    expect(ok.stdout).toContain('intake-relay.yaml: valid');
    expect(ok.status).toBe(0);
    const bad = spawnSync(exe, ['validate', '-c', join(ROOT, 'package.json')], { encoding: 'utf8', env: { PATH: emptyPath } });
    expect(bad.status).toBe(78);
  });

  it('runs the shipped configuration: one event reaches the local emulator, SIGTERM drains and exits 0', async () => {
    const [syslogPort, metricsPort] = [await freePort(), await freePort()];
    const proc = spawn(exe, ['run', '-c', join(ROOT, 'config', 'intake-relay.yaml')], {
      env: { PATH: emptyPath, SYSLOG_PORT: String(syslogPort), METRICS_PORT: String(metricsPort) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    track({ stop: () => (proc.exitCode === null && proc.signalCode === null ? proc.kill('SIGKILL') : undefined) });

    await waitListening(syslogPort, 20_000);
    await sendTcp(syslogPort, '<13>1 2026-01-01T00:00:00Z host app - - - hello from the single executable\n');
    await vi.waitFor(() => expect(out).toMatch(/"emulator":true,"message":"<13>1 .*hello from the single executable","msg":"Emulator received a valid message\."/), { timeout: 15_000 });
    // Counted as sent once the output confirms delivery, after the emulator logged the message.
    await vi.waitFor(async () =>
      expect(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()).toContain('intake_relay_events_sent_total{intake="default",output="syslog"} 1'),
      { timeout: 15_000 },
    );

    proc.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out).toContain('Stopped: every queued event was delivered.');
  });
});
