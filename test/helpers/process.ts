// The relay as its own process (for kill -9, signals, dropped capabilities), and counting what an
// intake received.
import { spawn, type ChildProcess } from 'node:child_process';
import type { TestIntake } from './peers.ts';

const MAIN = new URL('../../src/main.ts', import.meta.url).pathname;

export interface RelayProcess {
  readonly proc: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
}

/** `intake-relay run -c configFile [extra...]`, optionally under a wrapper command (`prefix`, e.g. setpriv). */
export function runRelayProcess(configFile: string, prefix: string[] = [], extra: string[] = []): RelayProcess {
  const [cmd, ...args] = [...prefix, process.execPath, MAIN, 'run', '-c', configFile, ...extra];
  const proc = spawn(cmd as string, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  return { proc, output: () => out };
}

export function exited(p: ChildProcess): Promise<void> {
  return p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise((r) => p.once('exit', () => r()));
}

/** How many times each message arrived. */
export function counts(t: TestIntake): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of t.received) m.set(r.message, (m.get(r.message) ?? 0) + 1);
  return m;
}
