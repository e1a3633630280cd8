// The single executable as an operator runs it: built by scripts/package.ts (as `npm run package`
// does) for this machine's architecture into a temporary directory, then run with no Node.js on
// PATH: --version, validate of the shipped config, and `run` of the shipped config, which with no
// INTAKE_KEY forwards to its local emulator; one event goes through and SIGTERM drains it; and with
// workers: 3, whose threads run the executable's own bundle.
// Then installed as deploy/intake-relay.service expects, into a temporary root: the unit verified
// there as shipped, and its program lines run there as systemd would, with the unit's environment.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { chmodSync, copyFileSync, cpSync, existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { gitCommit } from '../../scripts/build-info.ts';
import { VERSION } from '../../src/version.ts';
import { track } from '../helpers/cleanup.ts';
import { TLS } from '../helpers/relay.ts';
import { namespacesWork, startContainer, startDirect } from '../helpers/container.ts';
import { baseImage } from '../helpers/image-layout.ts';
import { startHttpIntake } from '../helpers/http-intake.ts';
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

/** The executable run with `args`, no Node.js on PATH: its stdout and stderr as they come, its exit, killed at the end of the test. */
function runExe(args: string[], env: Record<string, string> = {}) {
  const proc = spawn(exe, args, { env: { PATH: emptyPath, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  proc.stdout.on('data', (d: Buffer) => (text += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (text += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  track({ stop: () => (proc.exitCode === null && proc.signalCode === null ? proc.kill('SIGKILL') : undefined) });
  return { proc, out: (): string => text, exited };
}

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
    const { proc, out, exited } = runExe(['run', '-c', join(ROOT, 'config', 'intake-relay.yaml')], { SYSLOG_PORT: String(syslogPort), METRICS_PORT: String(metricsPort) });

    await waitListening(syslogPort, 20_000);
    await sendTcp(syslogPort, '<13>1 2026-01-01T00:00:00Z host app - - - hello from the single executable\n');
    await vi.waitFor(() => expect(out()).toMatch(/"emulator":true,"message":"<13>1 .*hello from the single executable","msg":"Emulator received a valid message\."/), { timeout: 15_000 });
    // Counted as sent once the output confirms delivery, after the emulator logged the message.
    await vi.waitFor(async () =>
      expect(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()).toContain('intake_relay_events_sent_total{intake="default",output="syslog"} 1'),
      { timeout: 15_000 },
    );

    proc.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out()).toContain('Stopped: every queued event was delivered (');
  });

  it('runs workers (workers: 3) from its own bundle: every thread delivers, /metrics adds them up, SIGTERM stops them all', async () => {
    const [syslogPort, metricsPort, udpPort, threadsPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const config = join(dir, 'workers.yaml');
    writeFileSync(config, `workers: 3
metrics: { address: 127.0.0.1, port: ${metricsPort} }
emulator: { when: no_intake_key }
intakes:
  - name: t
    intake_key: ""
    inputs: [{ type: tcp, address: 127.0.0.1, port: ${syslogPort} }, { type: udp, address: 127.0.0.1, port: ${udpPort} }, { type: udp, address: 127.0.0.1, port: ${threadsPort}, receive_threads: 1 }]
`);
    // A temporary directory of its own: the addon's copies are written there and removed.
    const tmp = join(dir, 'workers-tmp');
    mkdirSync(tmp);
    const { proc, out, exited } = runExe(['run', '-c', config], { TMPDIR: tmp });
    await waitListening(syslogPort, 20_000);
    await vi.waitFor(() => expect(out()).toContain('"workers":3'), { timeout: 15_000 });
    await Promise.all(Array.from({ length: 24 }, (_, c) => sendTcp(syslogPort, Array.from({ length: 25 }, (_, i) => `<14>Nov 26 10:00:00 host app: c${c}-${i}\n`).join(''))));
    const metrics = async (): Promise<string> => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    // UDP through the native receive, loaded by every thread from the executable's asset.
    const udp = dgram.createSocket('udp4');
    for (let i = 0; i < 60; i++) await new Promise<void>((r) => udp.send(`<14>Nov 26 10:00:00 host app: udp-${i}`, udpPort, '127.0.0.1', () => r()));
    // And through receive threads (one per worker), which load it from a copy written for them.
    for (let i = 0; i < 60; i++) await new Promise<void>((r) => udp.send(`<14>Nov 26 10:00:00 host app: rt-${i}`, threadsPort, '127.0.0.1', () => r()));
    udp.close();
    await vi.waitFor(async () => expect(await metrics()).toContain('intake_relay_events_sent_total{intake="t",output="syslog"} 720'), { timeout: 15_000 });
    expect(out()).not.toContain("Node's dgram");
    // One output connection per thread; connected (1) while every thread is; one build, not three.
    expect(out().match(/"msg":"Output connected\."/g)).toHaveLength(3);
    const text = await metrics();
    expect(text).toContain('intake_relay_output_connected{intake="t",output="syslog"} 1');
    expect(text).toMatch(/^intake_relay_build_info\{[^}]*\} 1$/m);
    // The memory guard's figures, once for the process: the budget, what the kernel counts now (the
    // guard reads it; a relay at rest is far below the default budget), no collection at rest.
    expect(text).toMatch(/^intake_relay_memory_budget_bytes 134217728$/m);
    const anon = Number(/^intake_relay_memory_anonymous_bytes (\d+)$/m.exec(text)?.[1]);
    expect(anon).toBeGreaterThan(4 * 1024 * 1024);
    expect(anon).toBeLessThan(134217728 * 0.9);
    expect(text).toMatch(/^intake_relay_memory_collections_total 0$/m);
    expect(readdirSync(tmp)).toEqual([]);
    proc.kill('SIGTERM');
    expect(await exited).toBe(0);
    // One last line for the process, every thread's figures added up.
    expect(out().match(/Stopped: every queued event was delivered/g)).toHaveLength(1);
  });

  it('HTTPS output from the main thread and a worker (workers: 2): undici, kept out of the main script, is compiled from its own asset there', async () => {
    const intake = track(await startHttpIntake());
    const [tcpPort, metricsPort] = [await freePort(), await freePort()];
    const config = join(dir, 'http.yaml');
    writeFileSync(config, `workers: 2
metrics: { address: 127.0.0.1, port: ${metricsPort} }
intakes:
  - name: h
    intake_key: ${'K'.repeat(32)}
    inputs: [{ type: tcp, address: 127.0.0.1, port: ${tcpPort} }]
    output: { type: http, url: ${intake.url}, ca_file: ${TLS}ca.crt, proxy: none }
`);
    const { proc, out, exited } = runExe(['run', '-c', config]);
    await waitListening(tcpPort, 20_000);
    await vi.waitFor(() => expect(out()).toContain('"workers":2'), { timeout: 15_000 });
    // Enough connections that both threads take some (SO_REUSEPORT spreads them).
    await Promise.all(Array.from({ length: 16 }, (_, c) => sendTcp(tcpPort, Array.from({ length: 5 }, (_, i) => `<14>Nov 26 10:00:00 host app: h${c}-${i}\n`).join(''))));
    await vi.waitFor(() => expect(intake.accepted).toHaveLength(80), { timeout: 15_000 });
    expect(new Set(intake.accepted.map((e) => /h\d+-\d/.exec(e)?.[0])).size).toBe(80);
    const sent = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(sent).toContain('intake_relay_events_sent_total{intake="h",output="http"} 80');
    proc.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out()).not.toMatch(/"level":(50|60)/);
  });

  it('keeps the libraries only commands, the configuration loader and the HTTP output use out of its main script', () => {
    const main = readFileSync(join(dir, 'out', 'sea', 'intake-relay.cjs'), 'utf8');
    for (const lib of ['undici', 'zod', 'yaml']) {
      expect(existsSync(join(dir, 'out', 'sea', 'lib', `${lib}.cjs`))).toBe(true);
      expect(main).not.toContain(`node_modules/${lib}/`);
    }
    // The build's own evidence: a bundle that inlined them is several times larger.
    expect(main.length).toBeLessThan(1_000_000);
  });
});

const UNIT = readFileSync(join(ROOT, 'deploy', 'intake-relay.service'), 'utf8');
const PROGRAM = '/usr/local/bin/intake-relay';
const CONFIG = '/etc/intake-relay/intake-relay.yaml';
/** The first UID systemd gives a DynamicUser= service (systemd.exec: 61184-65519). */
const DYNAMIC_UID = 61184;
const isolated = namespacesWork();

/**
 * The values of `key=` in the unit, in order. Only the plain form is read: a quote, backslash,
 * `$` or `%` would need systemd's own unquoting and expansion, so it fails the test instead of
 * being misread.
 */
function unitValues(key: string): string[] {
  return UNIT.split('\n').filter((l) => l.startsWith(`${key}=`)).map((l) => {
    const value = l.slice(key.length + 1);
    if (/["'\\$%]/.test(value)) throw new Error(`${l}: read it as systemd does (quotes, variables, specifiers).`);
    return value;
  });
}

/** A program line's argv; a prefix such as `-` or `+` would change how systemd runs it. */
function execArgv(key: string): string[] {
  const [line, ...more] = unitValues(key);
  if (line === undefined || more.length > 0 || /^[-@:+!|]/.test(line)) throw new Error(`expected one plain ${key}= in the unit`);
  return line.split(/ +/);
}

/**
 * The environment systemd gives the service's processes (systemd.exec, "Environment variables in
 * spawned processes"): its PATH, then Environment=, then EnvironmentFile= (read by systemd, as
 * root; `-` where it may be missing), whose settings override Environment='s.
 */
function serviceEnvironment(root: string): Record<string, string> {
  const env: Record<string, string> = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin' };
  const assign = (a: string): void => {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(a);
    if (!m) throw new Error(`not an assignment: ${a}`);
    env[m[1]!] = m[2]!;
  };
  for (const value of unitValues('Environment')) value.split(/ +/).forEach(assign);
  for (const value of unitValues('EnvironmentFile')) {
    const file = join(root, value.replace(/^-/, ''));
    if (!existsSync(file) && value.startsWith('-')) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) if (line.trim() !== '' && !/^\s*[#;]/.test(line)) assign(line);
  }
  return env;
}

describe(isolated ? 'installed as its systemd unit says, run in the root as the dynamic user' : 'installed as its systemd unit says, run straight from the root (this machine allows no namespaces)', () => {
  /** The temporary root: what the install commands put there, and what the OS provides. */
  let root: string;

  beforeAll(() => {
    root = join(dir, 'root');
    const put = (path: string, from: string, mode: number): void => {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      copyFileSync(from, join(root, path));
      chmodSync(join(root, path), mode);
    };
    // What the README's install commands do: install -m 0755 the executable (a hard link of the one
    // built: 120 MiB not copied again), the shipped configuration and the unit.
    mkdirSync(join(root, dirname(PROGRAM)), { recursive: true });
    linkSync(exe, join(root, PROGRAM));
    chmodSync(join(root, PROGRAM), 0o755);
    put(CONFIG, join(ROOT, 'config', 'intake-relay.yaml'), 0o644);
    put('/etc/systemd/system/intake-relay.service', join(ROOT, 'deploy', 'intake-relay.service'), 0o644);
    // What the OS provides: systemd's own units (verify loads the targets the unit is ordered
    // against), the unit's other programs (/bin/kill), the executable's libraries.
    cpSync('/lib/systemd/system', join(root, 'lib/systemd/system'), { recursive: true, verbatimSymlinks: true });
    for (const key of ['ExecStartPre', 'ExecStart', 'ExecReload', 'ExecStop', 'ExecStartPost', 'ExecStopPost']) {
      for (const line of UNIT.split('\n').filter((l) => l.startsWith(`${key}=`))) {
        const program = line.slice(key.length + 1).replace(/^[-@:+!|]+/, '').split(' ')[0]!;
        if (program !== PROGRAM) put(program, realpathSync(program), 0o755);
      }
    }
    baseImage(root, join(root, PROGRAM));
  });

  /** The configuration's path as the program sees it: straight from the root, it is under it. */
  const configSeen = (): string => (isolated ? CONFIG : join(root, CONFIG));

  /** A program line of the unit, as systemd runs it: in the root, as the dynamic user, with the service's environment. */
  async function runAsService(key: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const argv = execArgv(key);
    const env = serviceEnvironment(root);
    const c = isolated ? startContainer({ root, argv, env, uid: DYNAMIC_UID, gid: DYNAMIC_UID }) : startDirect({ root, argv, env });
    // 'close', not 'exit': the output is complete only once the pipes are.
    const [code] = (await once(c.proc, 'close')) as [number | null];
    return { code, ...c.out };
  }

  it('systemd-analyze verify accepts the unit as shipped, its programs looked up in that root', () => {
    expect(execArgv('ExecStartPre')).toEqual([PROGRAM, 'validate', '-c', CONFIG]);
    expect(execArgv('ExecStart')).toEqual([PROGRAM, 'run', '-c', CONFIG]);
    const r = spawnSync('systemd-analyze', ['verify', `--root=${root}`, 'intake-relay.service'], { encoding: 'utf8' });
    if (r.error) throw new Error('systemd-analyze is not installed: run scripts/install-test-peers.sh');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('without a key, ExecStartPre and ExecStart refuse the shipped configuration with one line and exit 78 (no emulator)', async () => {
    // config/intake-relay.yaml alone would forward to the emulator (the tests above): the unit's
    // Environment= is what refuses.
    expect(serviceEnvironment(root)).toMatchObject({ INTAKE_RELAY_EMULATOR: 'never' });
    expect(serviceEnvironment(root)).not.toHaveProperty('INTAKE_KEY');
    for (const key of ['ExecStartPre', 'ExecStart']) {
      const r = await runAsService(key);
      expect(r.stdout, key).toBe('');
      expect(r.stderr, key).toMatch(/^[^\n]*:\d+:\d+: intakes\[0\]\.intake_key: intake "default" has no key [^\n]*\n$/);
      expect(r.stderr, key).toContain(`${configSeen()}:`);
      expect(r.code, key).toBe(78);
    }
  });

  it('with INTAKE_KEY in the environment file the unit names, ExecStartPre validates the shipped configuration', async () => {
    const envFile = unitValues('EnvironmentFile')[0]!.replace(/^-/, '');
    writeFileSync(join(root, envFile), 'INTAKE_KEY=AbC123dEf456\n', { mode: 0o600 });
    try {
      const r = await runAsService('ExecStartPre');
      expect(r.stderr).toBe('');
      expect(r.stdout).toContain(`${configSeen()}: valid`);
      expect(r.stdout).toContain('key: set (12 characters');
      expect(r.code).toBe(0);
    } finally {
      rmSync(join(root, envFile));
    }
  });
});
