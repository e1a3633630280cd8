// Starting as root only to prepare, then running as an unprivileged user (INTAKE_RELAY_USER, which
// the container image sets to its user 10001:10001): a directory mounted from the host belongs to
// root (the official forwarder's ./disk_queue, mounted at /var/spool/rsyslog), and TLS keys made
// by root are readable by root only. As root, the relay takes ownership of its own state (each
// state directory, and what it keeps inside it, never the other files there), copies the TLS
// files its user could not read into a private directory, then drops to that user before it
// reads its configuration in earnest or opens anything. Started as another user (Kubernetes'
// runAsUser, docker run --user), it does none of this.

import { chmodSync, chownSync, copyFileSync, lstatSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export interface RunAs {
  readonly uid: number;
  readonly gid: number;
}

/** "10001:10001" (or "10001", the group the same number); undefined when empty; throws when malformed. */
export function parseRunAs(value: string | undefined): RunAs | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const m = /^\s*(\d+)(?::(\d+))?\s*$/.exec(value);
  if (!m) throw new Error(`INTAKE_RELAY_USER is "${value}": expected a numeric uid:gid, such as 10001:10001`);
  const uid = Number(m[1]);
  const gid = Number(m[2] ?? m[1]);
  if (uid === 0) throw new Error('INTAKE_RELAY_USER is root (0): leave it empty to stay root');
  return { uid, gid };
}

/** Whether this process may change its user: it runs as root, on a platform that has setuid. */
export function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

function chownTree(path: string, who: RunAs, changed: string[]): void {
  const st = lstatSync(path);
  if (st.isSymbolicLink()) return;
  if (st.uid !== who.uid || st.gid !== who.gid) {
    chownSync(path, who.uid, who.gid);
    changed.push(path);
  }
  if (st.isDirectory()) for (const f of readdirSync(path)) chownTree(join(path, f), who, changed);
}

/**
 * Gives `who` the state it keeps: each directory (created if missing), and within one, only the
 * entries named by `ours` (undefined: all of it, a directory the relay alone uses). Returns the
 * paths whose owner changed.
 */
export function takeOwnership(dirs: readonly { readonly dir: string; readonly ours?: readonly string[] }[], who: RunAs): string[] {
  const changed: string[] = [];
  // Every directory first: one inside another (data_dir/queues/<intake>) makes its parents as root.
  for (const { dir } of dirs) mkdirSync(dir, { recursive: true });
  for (const { dir, ours } of dirs) {
    const st = statSync(dir);
    if (st.uid !== who.uid || st.gid !== who.gid) {
      chownSync(dir, who.uid, who.gid);
      changed.push(dir);
    }
    const entries = ours ?? readdirSync(dir);
    for (const e of entries) {
      try {
        chownTree(join(dir, e), who, changed);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
  }
  return changed;
}

/** Whether `who` may read `path` by its mode bits (as the kernel decides for a non-root user). */
function readableBy(path: string, who: RunAs): boolean {
  const st = statSync(path);
  if (st.uid === who.uid) return (st.mode & 0o400) !== 0;
  if (st.gid === who.gid) return (st.mode & 0o040) !== 0;
  return (st.mode & 0o004) !== 0;
}

/**
 * The files of `dir` that `who` cannot read, copied into `into` (created 0700, its own) where it
 * can; undefined when it can read them all (then `dir` is used as it is). Only regular files of
 * at most 1 MiB: certificates and keys.
 */
export function privateCopy(dir: string, into: string, who: RunAs): { readonly dir: string; readonly copied: string[] } | undefined {
  const files = readdirSync(dir).filter((f) => {
    const st = statSync(join(dir, f));
    return st.isFile() && st.size <= 1024 * 1024;
  });
  if (files.every((f) => readableBy(join(dir, f), who))) return undefined;
  mkdirSync(into, { recursive: true, mode: 0o700 });
  chmodSync(into, 0o700);
  chownSync(into, who.uid, who.gid);
  for (const f of files) {
    const to = join(into, f);
    copyFileSync(join(dir, f), to);
    chmodSync(to, 0o600);
    chownSync(to, who.uid, who.gid);
  }
  return { dir: into, copied: files.filter((f) => !readableBy(join(dir, f), who)) };
}

/** Becomes `who` for good: supplementary groups, group, then user (every thread of the process). */
export function dropTo(who: RunAs): void {
  process.setgroups?.([who.gid]);
  process.setgid?.(who.gid);
  process.setuid?.(who.uid);
  if (process.getuid?.() !== who.uid || process.geteuid?.() !== who.uid) throw new Error(`could not become user ${who.uid}`);
}
