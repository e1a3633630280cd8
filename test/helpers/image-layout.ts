// The Dockerfile's image without a container engine: its build stage's context copied and
// packaged the way the stage does (`npm run package`; node_modules stands in for `npm ci`, which
// needs the registry), then its final stage's COPY instructions applied to an empty root, with
// the shared libraries the base image provides for the executable copied in as ldd lists them.
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, lchownSync, mkdirSync, readdirSync, realpathSync, statSync, symlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { all, parseCopy, type Stage } from './dockerfile.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

/** Docker's architecture names (TARGETARCH) for Node's. */
export const TARGETARCH: Record<string, string> = { x64: 'amd64', arm64: 'arm64' };

/**
 * What the build stage leaves outside its WORKDIR for the final stage to copy, with the command
 * of its RUN that makes it (the test checks the Dockerfile still says so) and where the same file
 * is on this machine: tini from the same Debian 12 package (scripts/install-test-peers.sh).
 */
export const BUILD_OUTPUTS: Record<string, { readonly made: string; readonly local: (ctx: string, arch: string) => string }> = {
  '/tini/usr/bin/tini-static': { made: 'dpkg-deb -x /tmp/tini_*.deb /tini', local: () => '/usr/bin/tini-static' },
  '/out/intake-relay': { made: 'install -D -m 0755 "build/intake-relay-linux-$arch" /out/intake-relay', local: (ctx, arch) => join(ctx, 'build', `intake-relay-linux-${arch}`) },
  '/skel/': { made: 'mkdir -p /skel/intake-relay', local: (ctx) => join(ctx, '..', 'skel') },
};

function workdir(stage: Stage): string {
  return all(stage, 'WORKDIR').at(-1)?.args ?? '/';
}

/**
 * The build stage's /src: what its COPY instructions take from the context, node_modules linked
 * in, then `npm run package -- --arch <arch>` run there. Returns the directory standing for /src.
 */
export function buildStage(stage: Stage, dir: string, arch: string): string {
  const ctx = join(dir, 'src');
  mkdirSync(join(dir, 'skel', 'intake-relay'), { recursive: true });
  mkdirSync(ctx, { recursive: true });
  for (const i of all(stage, 'COPY')) {
    const c = parseCopy(i.args);
    if (c.from) throw new Error(`Dockerfile:${i.line}: the build stage copies from ${c.from}: teach image-layout.ts`);
    for (const s of c.sources) {
      const to = c.dest.endsWith('/') || c.sources.length > 1 ? join(ctx, c.dest, basename(s)) : join(ctx, c.dest);
      cpSync(join(ROOT, s), to, { recursive: true });
    }
  }
  symlinkSync(join(ROOT, 'node_modules'), join(ctx, 'node_modules'));
  const r = spawnSync('npm', ['run', '--silent', 'package', '--', '--arch', arch], { cwd: ctx, encoding: 'utf8', timeout: 300_000 });
  if (r.status !== 0) throw new Error(`npm run package in the build stage's copy failed (${r.status ?? r.signal ?? r.error?.message}):\n${r.stdout}${r.stderr}`);
  return ctx;
}

export interface LayoutEntry {
  readonly path: string;
  readonly owner: string | undefined;
}

/**
 * The final stage's COPY instructions applied to `root`: entries copied (and owned as --chown
 * says when `chown` is true: it needs root), parents created as root's. Returns what was copied.
 */
export function finalStage(stage: Stage, build: Stage, ctx: string, root: string, arch: string, chown: boolean): LayoutEntry[] {
  const made: LayoutEntry[] = [];
  const buildDir = workdir(build).replace(/\/$/, '');
  for (const i of all(stage, 'COPY')) {
    const c = parseCopy(i.args);
    for (const s of c.sources) {
      let local: string;
      if (c.from === undefined) local = join(ROOT, s);
      else if (c.from !== build.name) throw new Error(`Dockerfile:${i.line}: COPY --from=${c.from}: not the build stage`);
      else if (BUILD_OUTPUTS[s]) local = BUILD_OUTPUTS[s].local(ctx, arch);
      else if (s.startsWith(`${buildDir}/`)) local = join(ctx, s.slice(buildDir.length + 1));
      else throw new Error(`Dockerfile:${i.line}: ${s} is not in BUILD_OUTPUTS of test/helpers/image-layout.ts`);
      const isDir = statSync(local).isDirectory();
      // A directory's contents go into the destination; a file goes to it (or into it with a "/").
      const targets = isDir
        ? readdirSync(local).map((n) => ({ from: join(local, n), to: join(root, c.dest, n) }))
        : [{ from: local, to: c.dest.endsWith('/') ? join(root, c.dest, basename(s)) : join(root, c.dest) }];
      for (const t of targets) {
        mkdirSync(dirname(t.to), { recursive: true });
        cpSync(t.from, t.to, { recursive: true, dereference: true, preserveTimestamps: true });
        const path = `/${t.to.slice(root.length).replace(/^\/+/, '')}`;
        made.push({ path, owner: c.chown });
        if (chown && c.chown) chownTree(t.to, c.chown);
      }
    }
  }
  return made;
}

function chownTree(path: string, owner: string): void {
  const [uid, gid] = owner.split(':').map(Number) as [number, number];
  lchownSync(path, uid, gid ?? uid);
  if (statSync(path).isDirectory()) for (const n of readdirSync(path)) chownTree(join(path, n), owner);
}

/** The shared libraries `executable` loads, per ldd: [path it is loaded from, the real file]. */
export function sharedLibraries(executable: string): [string, string][] {
  const r = spawnSync('ldd', [executable], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ldd ${executable}: ${r.stderr}`);
  const libs: [string, string][] = [];
  for (const line of r.stdout.split('\n')) {
    if (line.includes('not found')) throw new Error(`ldd ${executable}: ${line.trim()}`);
    const m = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line);
    if (m) libs.push([m[1]!, realpathSync(m[1]!)]);
  }
  return libs;
}

/** The Debian package that holds each file (dpkg -S), for what the base image must provide. */
export function debianPackageOf(file: string): string | undefined {
  for (const f of [file, realpathSync(file)]) {
    const r = spawnSync('dpkg', ['-S', f], { encoding: 'utf8' });
    if (r.status === 0) return r.stdout.split(':')[0];
  }
  return undefined;
}

/** What the base image gives the executable: its libraries at the paths the loader looks, /tmp, /proc, /dev. */
export function baseImage(root: string, executable: string): void {
  for (const [path, real] of sharedLibraries(executable)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    if (!existsSync(join(root, path))) cpSync(real, join(root, path));
  }
  for (const d of ['proc', 'dev', 'tmp']) mkdirSync(join(root, d), { recursive: true });
  chmodSync(join(root, 'tmp'), 0o1777);
}
