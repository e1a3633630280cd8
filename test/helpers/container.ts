// A container without an engine, for the image smoke test: a root directory run under new PID,
// network and mount namespaces (its entrypoint is PID 1, loopback its only network), chrooted as
// the image's numeric user, with volumes bind-mounted and the root filesystem read-only when asked;
// `exec` runs a command in the same namespaces, as `docker exec` and a HEALTHCHECK do. Needs root
// and unshare(1); `namespacesWork()` says whether this machine allows them.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { track } from './cleanup.ts';

export interface Mount {
  readonly source: string;
  /** Inside the root: must exist there (a directory, or a file for a file). */
  readonly target: string;
  readonly readOnly?: boolean;
}

export interface ContainerOptions {
  readonly root: string;
  readonly argv: readonly string[];
  /** The whole environment, as the image and the run give it (nothing of this process's). */
  readonly env: Readonly<Record<string, string>>;
  readonly uid: number;
  readonly gid: number;
  readonly mounts?: readonly Mount[];
  readonly readOnlyRoot?: boolean;
}

export interface Container {
  readonly out: { stdout: string; stderr: string };
  /** The exit status of PID 1 (unshare passes it on). */
  readonly exited: Promise<number | null>;
  /** PID 1's process id on this machine, once it runs. */
  pid1(): Promise<number>;
  /** A command in the container's namespaces and root, as its user, with its environment. */
  exec(argv: readonly string[]): { code: number | null; stdout: string; stderr: string };
  readonly proc: ChildProcess;
}

// Runs as root in the new namespaces, then becomes PID 1's program: loopback up, the root and the
// volumes mounted, /proc of the new PID namespace, /dev; nothing propagates back (unshare's mounts
// are private).
const SETUP = `set -e
root=$1; ro=$2; uidgid=$3; shift 3
ip link set lo up
mount --bind "$root" "$root"
while [ "$1" != "--" ]; do
  mount --bind "$1" "$root$2"
  if [ "$3" = ro ]; then mount -o remount,bind,ro "$root$2"; fi
  shift 3
done
shift
if [ "$ro" = ro ]; then mount -o remount,bind,ro "$root"; fi
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
exec chroot --userspec="$uidgid" "$root" "$@"`;

let works: boolean | undefined;

/** Root, and unshare with PID, network and mount namespaces allowed (not in every CI container). */
export function namespacesWork(): boolean {
  if (works === undefined) {
    works = process.getuid?.() === 0 && spawnSync('unshare', ['--pid', '--net', '--mount', '--fork', 'sh', '-c', 'ip link set lo up && mount -t tmpfs none /mnt'], { timeout: 10_000 }).status === 0;
  }
  return works;
}

export function startContainer(o: ContainerOptions): Container {
  const mountArgs = (o.mounts ?? []).flatMap((m) => [m.source, m.target, m.readOnly ? 'ro' : 'rw']);
  const proc = spawn(
    'unshare',
    ['--pid', '--net', '--mount', '--fork', '--kill-child', 'sh', '-c', SETUP, 'setup', o.root, o.readOnlyRoot ? 'ro' : 'rw', `${o.uid}:${o.gid}`, ...mountArgs, '--', ...o.argv],
    { env: o.env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const out = { stdout: '', stderr: '' };
  proc.stdout.on('data', (d: Buffer) => (out.stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (out.stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  track({
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
  });
  const pid1 = async (): Promise<number> => {
    for (let i = 0; i < 500; i++) {
      const children = readChildren(proc.pid!);
      if (children[0] !== undefined) return children[0];
      if (proc.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`no PID 1 in the container: ${out.stderr}`);
  };
  const exec = (argv: readonly string[]): { code: number | null; stdout: string; stderr: string } => {
    const pid = readChildren(proc.pid!)[0];
    if (pid === undefined) throw new Error('the container is not running');
    const r = spawnSync('nsenter', ['--target', String(pid), '--pid', '--net', '--mount', 'chroot', `--userspec=${o.uid}:${o.gid}`, o.root, ...argv], {
      env: o.env,
      encoding: 'utf8',
      timeout: 30_000,
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  return { out, exited, pid1, exec, proc };
}

/**
 * The fallback where namespaces are not allowed: the entrypoint run as this user, straight from the
 * root directory (absolute paths in argv and env that exist in the root are taken from there),
 * sharing this machine's network. No PID 1, no user switch, no mounts: `exec` runs beside it.
 */
export function startDirect(o: Pick<ContainerOptions, 'root' | 'argv' | 'env'>): Container {
  const inRoot = (a: string): string => (a.startsWith('/') && existsSync(join(o.root, a)) ? join(o.root, a) : a);
  const env = Object.fromEntries(Object.entries(o.env).map(([k, v]) => [k, inRoot(v)]));
  const [cmd, ...args] = o.argv.map(inRoot);
  const proc = spawn(cmd!, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  proc.stdout.on('data', (d: Buffer) => (out.stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (out.stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  track({
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
  });
  const exec = (argv: readonly string[]): { code: number | null; stdout: string; stderr: string } => {
    const [c, ...a] = argv.map(inRoot);
    const r = spawnSync(c!, a, { env, encoding: 'utf8', timeout: 30_000 });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  return { out, exited, pid1: () => Promise.resolve(proc.pid!), exec, proc };
}

function readChildren(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** A process's status lines that matter here: its user ids and its PID in each namespace. */
export function processStatus(pid: number): { uid: string; nspid: string } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { uid: /^Uid:\s+(.*)$/m.exec(s)?.[1]?.trim() ?? '', nspid: /^NSpid:\s+(.*)$/m.exec(s)?.[1]?.trim() ?? '' };
}
