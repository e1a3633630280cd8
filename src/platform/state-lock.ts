// Exclusive locks on the directories where the relay keeps state (data_dir: file checkpoints; each
// disk queue's directory): two relays writing one queue would each deliver and delete the other's
// segments, losing events silently. As Vector does with its data directory and each buffer, a
// process takes an flock(2) on `intake-relay.lock` in the directory before it writes there and
// keeps it while it runs; the kernel lets go of it when the process ends, however it ends, so a
// crash never blocks the restart. The file also says who holds it (process, host, configuration),
// for the message the next one prints.
//
// flock comes from the native addon; where it is not built, from util-linux's flock(1) given the
// open file (the lock belongs to the open file description, which this process keeps). Where
// neither exists, the directory is used unlocked and the daemon says so once.

import { spawnSync } from 'node:child_process';
import { closeSync, ftruncateSync, mkdirSync, openSync, readFileSync, realpathSync, writeSync, constants } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { nativeAddon } from './native-addon.ts';

export const LOCK_FILE = 'intake-relay.lock';

/** sysexits EX_CANTCREAT: the state directory is another process's. */
export const EX_STATE_LOCKED = 73;

/** Who holds a state directory, as that process wrote it in the lock file. */
export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  readonly config: string;
  readonly since: string;
}

/** How this process locks: the addon's flock(2), util-linux's flock(1), or not at all. */
export type LockMethod = 'flock' | 'flock-command' | 'none';

export class StateLockedError extends Error {
  readonly code = 'ERELAY_STATE_LOCKED';
  readonly dir: string;
  readonly holder: LockHolder | undefined;
  constructor(dir: string, what: string, holder: LockHolder | undefined) {
    super(`${what} is in use by ${holderText(holder)}: two relays must not share a data_dir or a disk queue directory (give each its own data_dir, or queue.path). Stop the other one first.`);
    this.name = 'StateLockedError';
    this.dir = dir;
    this.holder = holder;
  }
}

/** "process 1234 on host h running /etc/... since ..." or, before that process wrote its name, "another process". */
export function holderText(h: LockHolder | undefined): string {
  if (!h) return 'another process';
  return `process ${h.pid} on host ${h.host}${h.config ? ` running ${h.config}` : ''}${h.since ? ` since ${h.since}` : ''}`;
}

let method: LockMethod | undefined;

/** How locks are taken here (found once: the addon, else flock(1), else none). */
export function lockMethod(): LockMethod {
  if (method) return method;
  if (typeof nativeAddon().exports?.lockFile === 'function') return (method = 'flock');
  const probe = spawnSync('flock', ['--version'], { stdio: 'ignore' });
  return (method = probe.status === 0 ? 'flock-command' : 'none');
}

const EWOULDBLOCK = 11;

/** An exclusive lock on `fd` without waiting: true, or false when another holds it. Throws on other errors. */
function tryLock(fd: number, how: LockMethod): boolean {
  if (how === 'flock') {
    const err = (nativeAddon().exports?.lockFile as (fd: number) => number)(fd);
    if (err === 0) return true;
    if (err === EWOULDBLOCK) return false;
    throw Object.assign(new Error(`flock failed (errno ${err})`), { errno: err });
  }
  if (how === 'flock-command') {
    // flock(1) locks the file description it inherits as fd 3, which stays ours once it exits.
    const r = spawnSync('flock', ['--nonblock', '--exclusive', '--conflict-exit-code', '75', '3'], { stdio: ['ignore', 'ignore', 'pipe', fd] });
    if (r.status === 0) return true;
    if (r.status === 75) return false;
    throw new Error(`flock(1) failed: ${r.error?.message ?? r.stderr?.toString().trim() ?? `exit ${r.status}`}`);
  }
  return true;
}

function readHolder(file: string): LockHolder | undefined {
  try {
    const o = JSON.parse(readFileSync(file, 'utf8')) as Partial<LockHolder>;
    if (typeof o.pid !== 'number' || typeof o.host !== 'string') return undefined;
    return { pid: o.pid, host: o.host, config: typeof o.config === 'string' ? o.config : '', since: typeof o.since === 'string' ? o.since : '' };
  } catch {
    return undefined;
  }
}

interface Held {
  readonly fd: number;
  refs: number;
}

/** This process's locks, by real path: a directory locked twice here (a reload) is one lock. */
const held = new Map<string, Held>();

/**
 * The locks one owner (a daemon) holds. `config`: the configuration file it runs, written in the
 * lock file for the message another process prints.
 */
export class StateLocks {
  readonly #config: string;
  readonly #mine = new Set<string>();
  readonly #warn: (message: string) => void;
  #warned = false;

  constructor(config: string, warn: (message: string) => void) {
    this.#config = config ? resolve(config) : '';
    this.#warn = warn;
  }

  /** The directories locked by this owner. */
  get dirs(): string[] {
    return [...this.#mine];
  }

  /**
   * Locks every directory of `dirs` (created if missing) that this owner does not hold yet, or
   * none (`what` names it in messages, with its path: 'data_dir /var/lib/intake-relay'): throws
   * StateLockedError for the first one another process holds. A directory that cannot be created
   * or opened is left unlocked: what uses it fails on it next, with its own message.
   */
  hold(dirs: readonly { readonly dir: string; readonly what: string }[]): void {
    const taken: string[] = [];
    for (const { dir, what } of dirs) {
      let real: string | undefined;
      try {
        real = this.#lock(dir, what);
      } catch (err) {
        if (!(err instanceof StateLockedError)) continue;
        for (const r of taken) this.#release(r);
        throw err;
      }
      if (real !== undefined) taken.push(real);
    }
  }

  /** Lets go of every lock of this owner (at its stop). */
  releaseAll(): void {
    for (const real of [...this.#mine]) this.#release(real);
  }

  /** The directory's real path once locked by this owner; undefined if it already held it. */
  #lock(dir: string, what: string): string | undefined {
    mkdirSync(dir, { recursive: true });
    const real = realpathSync(dir);
    if (this.#mine.has(real)) return undefined;
    const how = lockMethod();
    if (how === 'none' && !this.#warned) {
      this.#warned = true;
      this.#warn('State directories are not locked: the native addon is not built and flock(1) is missing here. Never run two relays on one data_dir or disk queue directory.');
    }
    const other = held.get(real);
    if (other) {
      other.refs++;
    } else {
      const file = join(real, LOCK_FILE);
      const fd = openSync(file, constants.O_RDWR | constants.O_CREAT, 0o644);
      let locked: boolean;
      try {
        locked = tryLock(fd, how);
      } catch (err) {
        closeSync(fd);
        throw err;
      }
      if (!locked) {
        closeSync(fd);
        throw new StateLockedError(real, what, readHolder(file));
      }
      const me: LockHolder = { pid: process.pid, host: hostname(), config: this.#config, since: new Date().toISOString() };
      ftruncateSync(fd, 0);
      writeSync(fd, `${JSON.stringify(me)}\n`, 0);
      held.set(real, { fd, refs: 1 });
    }
    this.#mine.add(real);
    return real;
  }

  #release(real: string): void {
    if (!this.#mine.delete(real)) return;
    const h = held.get(real);
    if (!h || --h.refs > 0) return;
    held.delete(real);
    // Closing the last descriptor lets go of the lock; the file stays (a new holder rewrites it).
    closeSync(h.fd);
  }
}

/**
 * For `validate`: who holds `dir` now, without taking it: undefined when nobody does (or it does
 * not exist yet), the holder (or `{}` when it cannot be identified) otherwise.
 */
export function stateHolder(dir: string): { readonly holder: LockHolder | undefined } | undefined {
  const how = lockMethod();
  if (how === 'none') return undefined;
  let fd: number;
  try {
    fd = openSync(join(dir, LOCK_FILE), constants.O_RDONLY);
  } catch {
    return undefined;
  }
  try {
    if (tryLock(fd, how)) return undefined;
    return { holder: readHolder(join(dir, LOCK_FILE)) };
  } catch {
    return undefined;
  } finally {
    // Closing our own descriptor lets go of the probe's lock only.
    closeSync(fd);
  }
}
