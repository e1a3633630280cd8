// The running daemon's configuration, loaded by a child process of this same program (at start and
// at each reload): the schema library and the schemas (13 MB of RSS on Node 24, which no garbage
// collection gives back) are then never loaded by the process that runs for months. The child
// prints nothing: it answers one message over IPC (V8 serialization; the configuration is plain
// data) and exits. Commands that end at once (validate, check, send) load in-process.

import { spawn } from 'node:child_process';
import { isSea } from 'node:sea';
import { ConfigError } from './errors.ts';
import type { Config } from './resolve.ts';

/** The hidden command main.ts gives the child: `intake-relay __load-config FILE`. */
export const LOAD_CONFIG_COMMAND = '__load-config';

type Answer =
  | { readonly kind: 'config'; readonly config: Config }
  | { readonly kind: 'invalid'; readonly file: string; readonly problems: readonly string[] }
  | { readonly kind: 'failed'; readonly message: string };

/** Rejects with the ConfigError the file deserves, as an in-process load would. */
export function loadConfigInChild(file: string): Promise<Config> {
  // This program again: the single executable is its own script; otherwise the script that ran.
  const args = [...(isSea() ? [] : [process.argv[1] as string]), LOAD_CONFIG_COMMAND, file];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe', 'ipc'], serialization: 'advanced' });
    let answer: Answer | undefined;
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      if (stderr.length < 4096) stderr += chunk;
    });
    child.on('message', (m) => {
      answer = m as Answer;
    });
    child.once('error', (err) => reject(new Error(`cannot start the configuration loader (${process.execPath}): ${err.message}`, { cause: err })));
    child.once('close', (code, signal) => {
      if (answer?.kind === 'config') resolve(answer.config);
      else if (answer?.kind === 'invalid') reject(new ConfigError(answer.file, answer.problems));
      else if (answer?.kind === 'failed') reject(new Error(`loading ${file} failed: ${answer.message}`));
      else reject(new Error(`the configuration loader exited with ${signal ?? `code ${code}`} and no answer${stderr ? `: ${stderr.trim()}` : ''}`));
    });
  });
}

/** The child's side: load the file, answer the parent, end. */
export async function answerConfigLoad(file: string): Promise<number> {
  const send = process.send?.bind(process);
  if (!send) return 64; // not started by loadConfigInChild
  const { loadConfig } = await import('./load.ts');
  let answer: Answer;
  try {
    answer = { kind: 'config', config: loadConfig(file) };
  } catch (err) {
    answer = err instanceof ConfigError ? { kind: 'invalid', file, problems: err.problems } : { kind: 'failed', message: (err as Error).message };
  }
  await new Promise<void>((resolve, reject) => send(answer, undefined, undefined, (err) => (err ? reject(err) : resolve())));
  return 0;
}
