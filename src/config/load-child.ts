// The running daemon's configuration, loaded by a child process of this same program (at start and
// at each reload): the schema library and the schemas (13 MB of RSS on Node 24, which no garbage
// collection gives back) are then never loaded by the process that runs for months. The child
// prints nothing: it answers one message over IPC (V8 serialization; the configuration is plain
// data) and exits. Commands that end at once (validate, check, send) load in-process.
//
// At start the daemon reads the file itself and hands the bytes over (so `run -c /dev/stdin` works);
// at a reload the child reads it, under a time limit, so a file that cannot be read (a FIFO, a hung
// network mount) never blocks the daemon. The child is the program on disk: after an upgrade it may
// be another version than the daemon, whose configuration it must not apply.

import { spawn } from 'node:child_process';
import { isSea } from 'node:sea';
import { buildCommit, VERSION } from '../version.ts';
import { ConfigError } from './errors.ts';
import type { Config } from './resolve.ts';

/** The hidden command main.ts gives the child: `intake-relay __load-config FILE [--stdin]`. */
export const LOAD_CONFIG_COMMAND = '__load-config';
/** The child reads the file's bytes from its standard input. */
const FROM_STDIN = '--stdin';
/** A configuration loads in well under a second; a child still working after this is stuck. */
const LOAD_TIMEOUT_MS = 30_000;

type Answer =
  | { readonly kind: 'config'; readonly build: string; readonly config: Config }
  | { readonly kind: 'invalid'; readonly build: string; readonly file: string; readonly problems: readonly string[] }
  | { readonly kind: 'failed'; readonly build: string; readonly message: string };

function build(): string {
  return `${VERSION} (commit ${buildCommit()})`;
}

/**
 * The configuration in `file` (or `bytes`, its content read by the caller), loaded by a child
 * process. Rejects with the ConfigError the file deserves, as an in-process load would, or with an
 * Error when the child cannot answer.
 */
export function loadConfigInChild(file: string, bytes?: Uint8Array): Promise<Config> {
  // This program again: the single executable is its own script; otherwise the script that ran.
  // (The child gets no execArgv: a --import or an inspector flag is the daemon's, not its loader's.)
  const args = [...(isSea() ? [] : [process.argv[1] as string]), LOAD_CONFIG_COMMAND, file, ...(bytes ? [FROM_STDIN] : [])];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: [bytes ? 'pipe' : 'ignore', 'ignore', 'pipe', 'ipc'], serialization: 'advanced' });
    let answer: Answer | undefined;
    let stderr = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, LOAD_TIMEOUT_MS);
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      if (stderr.length < 4096) stderr += chunk;
    });
    if (bytes && child.stdin) {
      child.stdin.on('error', () => {}); // a child that died early: its exit says why
      child.stdin.end(bytes);
    }
    child.on('message', (m) => {
      answer = m as Answer;
    });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot start the configuration loader (${process.execPath}): ${err.message}`, { cause: err }));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const ours = build();
      if (timedOut) reject(new Error(`the configuration loader did not answer within ${LOAD_TIMEOUT_MS / 1000} s: can ${file} be read (a FIFO, a hung network mount)?`));
      else if (answer && answer.build !== ours) reject(new Error(`intake-relay on disk is now ${answer.build} and this daemon ${ours}: restart it to apply a configuration`));
      else if (answer?.kind === 'config') resolve(answer.config);
      else if (answer?.kind === 'invalid') reject(new ConfigError(answer.file, answer.problems));
      else if (answer?.kind === 'failed') reject(new Error(`loading ${file} failed: ${answer.message}`));
      else reject(new Error(`the configuration loader exited with ${signal ?? `code ${code}`} and no answer${stderr ? `: ${stderr.trim()}` : ''}`));
    });
  });
}

/** The child's side (`__load-config FILE [--stdin]`): load the file, answer the parent, end. */
export async function answerConfigLoad(args: readonly string[]): Promise<number> {
  const send = process.send?.bind(process);
  const file = args[0];
  if (!send || file === undefined || args.length > 2 || (args.length === 2 && args[1] !== FROM_STDIN)) return 64; // not started by loadConfigInChild
  const { loadConfig, parseConfig } = await import('./load.ts');
  let answer: Answer;
  try {
    const config = args[1] === FROM_STDIN ? parseConfig(await stdin(), file) : loadConfig(file);
    answer = { kind: 'config', build: build(), config };
  } catch (err) {
    answer = err instanceof ConfigError ? { kind: 'invalid', build: build(), file, problems: err.problems } : { kind: 'failed', build: build(), message: (err as Error).message };
  }
  await new Promise<void>((resolve, reject) => send(answer, undefined, undefined, (err) => (err ? reject(err) : resolve())));
  return 0;
}

async function stdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
