// The relay's command line as its own process: `intake-relay run` for kill -9, signals and dropped
// capabilities, the other subcommands for their output and exit codes; and counting what an intake
// received.
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { track } from './cleanup.ts';
import type { TestIntake } from './peers.ts';

/** The CLI's entry point, run by Node's type stripping. */
export const MAIN = new URL('../../src/main.ts', import.meta.url).pathname;

export interface CliResult {
  /** The exit status; 1 when a signal ended it. */
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout, then stderr. */
  readonly out: string;
}

function cliResult(code: number, stdout: string, stderr: string): CliResult {
  return { code, stdout, stderr, out: stdout + stderr };
}

/** Runs `intake-relay ...args` to its end, with `env` over this process's environment. */
export function runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      resolve(cliResult(err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr));
    });
  });
}

/** The same, blocking: for tests that have nothing else running meanwhile. */
export function runCliSync(args: readonly string[], env: NodeJS.ProcessEnv = {}): CliResult {
  const r = spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
  return cliResult(r.status ?? 1, r.stdout, r.stderr);
}

export interface RelayProcess {
  readonly proc: ChildProcess;
  /** stdout and stderr so far, in the order they came. */
  output(): string;
}

export interface CliProcess extends RelayProcess {
  /** What it wrote so far, each stream apart. */
  readonly out: { stdout: string; stderr: string };
  /** Resolves with its exit code (null when a signal ended it). */
  readonly exited: Promise<number | null>;
}

export interface CliOptions {
  readonly env?: NodeJS.ProcessEnv;
  /** A wrapper command to run it under (e.g. setpriv). */
  readonly prefix?: readonly string[];
  /** Node's own options, before the script (e.g. --import). */
  readonly node?: readonly string[];
  /** Another copy of the program to run instead of this checkout's src/main.ts. */
  readonly main?: string;
}

function spawnCli(args: readonly string[], o: CliOptions): CliProcess {
  const [cmd, ...rest] = [...(o.prefix ?? []), process.execPath, ...(o.node ?? []), o.main ?? MAIN, ...args];
  const proc = spawn(cmd as string, rest, { env: { ...process.env, ...o.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  let both = '';
  proc.stdout.on('data', (d: Buffer) => {
    out.stdout += d.toString();
    both += d.toString();
  });
  proc.stderr.on('data', (d: Buffer) => {
    out.stderr += d.toString();
    both += d.toString();
  });
  const exitCode = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return { proc, out, output: () => both, exited: exitCode };
}

/** `intake-relay ...args` as a child process, killed (SIGKILL) when the test ends if it still runs. */
export function startCli(args: readonly string[], options: CliOptions = {}): CliProcess {
  const p = spawnCli(args, options);
  track({ stop: () => kill(p.proc) });
  return p;
}

/** `intake-relay run -c configFile [extra...]`, killed when the test ends if it still runs. */
export function startRelayProcess(configFile: string, options: CliOptions & { extra?: readonly string[] } = {}): CliProcess {
  return startCli(['run', '-c', configFile, ...(options.extra ?? [])], options);
}

/** Node's flags as the launchers give them: those of `npm start` (the launcher test checks the others agree). */
export function launcherNodeFlags(): string[] {
  const start = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } }).scripts.start;
  return start.split(' dist/')[0]!.split(' ').filter((w) => w.startsWith('--'));
}

/** `intake-relay run -c configFile [extra...]`, optionally under a wrapper command; the caller stops it. */
export function runRelayProcess(configFile: string, prefix: string[] = [], extra: string[] = []): RelayProcess {
  return spawnCli(['run', '-c', configFile, ...extra], { prefix });
}

export function exited(p: ChildProcess): Promise<void> {
  return p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise((r) => p.once('exit', () => r()));
}

async function kill(p: ChildProcess): Promise<void> {
  if (p.pid === undefined) return; // never started (spawn failed): no exit to wait for
  if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  await exited(p);
}

/** How many times each message arrived. */
export function counts(t: TestIntake): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of t.received) m.set(r.message, (m.get(r.message) ?? 0) + 1);
  return m;
}
