// `npm run deb`: builds build/intake-relay_<version>_<arch>.deb from the self-contained binary
// (`npm run package`) with dpkg-deb, no network: the binary, the hardened unit, a sample
// configuration and environment file (conffiles), a man page and bash completion generated from the
// binary's --help, the configuration schema and the table of environment variables, the copyright
// file and changelog, maintainer scripts.
//   node scripts/deb.ts [--binary build/intake-relay-linux-x64] [--out build] [--compression xz|gzip]
// Needs dpkg-deb and dpkg-shlibdeps (dpkg-dev), on a Debian or Ubuntu machine of the binary's
// architecture.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { configJsonSchema } from '../src/config/json-schema.ts';
import { configReference } from '../src/config/reference.ts';
import { gitCommit } from './build-info.ts';
import { checkBinary } from './deb/binary.ts';
import { changelog } from './deb/changelog.ts';
import { bashCompletion } from './deb/completion.ts';
import { control, debianVersion } from './deb/control.ts';
import { copyright } from './deb/copyright.ts';
import { manPage } from './deb/man-page.ts';
import { packagedUnit } from './deb/unit.ts';
import { ENVIRONMENT } from './docs/environment.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** xz is Debian's default and the smallest; gzip -6 builds several times faster (tests). */
const COMPRESSION: Record<string, string[]> = { xz: ['-Zxz'], gzip: ['-Zgzip', '-z6'] };
const CONFFILES = ['/etc/intake-relay/intake-relay.yaml', '/etc/intake-relay/intake-relay.env'];

interface PackageJson {
  version: string;
  description: string;
  author?: string | { name: string; email?: string };
  homepage?: string;
}

/** Every file under `dir` (DEBIAN/ aside), its directories made 0755 and counted. */
function walk(dir: string, files: string[] = []): { files: string[]; dirs: number } {
  let dirs = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (!e.isDirectory()) {
      files.push(p);
    } else if (e.name !== 'DEBIAN') {
      chmodSync(p, 0o755);
      dirs += 1 + walk(p, files).dirs;
    }
  }
  return { files, dirs };
}

/** Depends, as dpkg-shlibdeps computes it: the packages of the libraries linked, at the versions the symbols need. */
function shlibDepends(work: string, binary: string): string {
  // It reads debian/control for the package's name, and no more.
  writeFileSync(join(work, 'debian/control'), 'Source: intake-relay\n\nPackage: intake-relay\nArchitecture: any\n');
  const r = spawnSync('dpkg-shlibdeps', ['-O', '-e', binary], { cwd: work, encoding: 'utf8' });
  if (r.error) throw new Error('dpkg-shlibdeps is missing: apt-get install dpkg-dev');
  const depends = /^shlibs:Depends=(.*)$/m.exec(r.stdout)?.[1];
  if (r.status !== 0 || !depends) throw new Error(`dpkg-shlibdeps failed: ${r.stderr}`);
  return depends;
}

function main(): void {
  const { values } = parseArgs({
    options: {
      binary: { type: 'string', default: join(ROOT, 'build/intake-relay-linux-x64') },
      out: { type: 'string', default: join(ROOT, 'build') },
      compression: { type: 'string', default: 'xz' },
    },
  });
  const compression = COMPRESSION[values.compression];
  if (!compression) throw new Error(`--compression must be xz or gzip, not "${values.compression}".`);
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;
  const author = typeof pkg.author === 'object' ? `${pkg.author.name}${pkg.author.email ? ` <${pkg.author.email}>` : ''}` : pkg.author;
  if (!author || !/^[^<]+ <[^>]+@[^>]+>$/.test(author)) throw new Error('package.json needs "author": "Name <email>": it is the package\'s Maintainer.');
  const commit = gitCommit();
  const binary = checkBinary(resolve(values.binary), pkg.version, commit);
  const version = debianVersion(pkg.version);
  // The commit's time stands for the build's (dpkg-deb clamps file times to it; the man page's
  // and the changelog's date), so that one commit always gives the same package.
  const git = spawnSync('git', ['log', '-1', '--format=%ct'], { cwd: ROOT, encoding: 'utf8' });
  const epoch = Number(process.env.SOURCE_DATE_EPOCH || git.stdout?.trim() || Math.floor(Date.now() / 1000));

  // Staged as debian/intake-relay, where dpkg-shlibdeps expects a package's files.
  const work = mkdtempSync(join(tmpdir(), 'intake-relay-deb-'));
  const stage = join(work, 'debian/intake-relay');
  const put = (path: string, content: string | Buffer, mode: number): void => {
    const file = join(stage, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, content);
    chmodSync(file, mode); // the umask of whoever builds must not reach the package
  };
  const source = (path: string): Buffer => readFileSync(join(ROOT, path));
  try {
    mkdirSync(join(stage, 'usr/bin'), { recursive: true });
    copyFileSync(binary.path, join(stage, 'usr/bin/intake-relay'));
    chmodSync(join(stage, 'usr/bin/intake-relay'), 0o755);
    put('lib/systemd/system/intake-relay.service', packagedUnit(source('deploy/intake-relay.service').toString()), 0o644);
    put('etc/intake-relay/intake-relay.yaml', source('deploy/debian/intake-relay.yaml'), 0o644);
    put('etc/intake-relay/intake-relay.env', source('deploy/debian/intake-relay.env'), 0o600);
    const reference = configReference(JSON.parse(configJsonSchema()));
    const date = new Date(epoch * 1000).toISOString().slice(0, 10);
    const man = manPage({ help: binary.help, reference, environment: ENVIRONMENT, version: pkg.version, date, description: pkg.description });
    // zlib writes no name or time in the header (gzip -9n): the same input gives the same bytes.
    put('usr/share/man/man1/intake-relay.1.gz', gzipSync(man, { level: 9 }), 0o644);
    put('usr/share/bash-completion/completions/intake-relay', bashCompletion(binary.help, pkg.version), 0o644);
    put('usr/share/doc/intake-relay/README.md.gz', gzipSync(source('README.md'), { level: 9 }), 0o644);
    put('usr/share/doc/intake-relay/changelog.gz', gzipSync(changelog({ version, maintainer: author, epoch, commit }), { level: 9 }), 0o644);
    const holder = author.replace(/\s*<.*$/, '');
    put('usr/share/doc/intake-relay/copyright', copyright({ holder, thirdParty: readFileSync(binary.thirdParty, 'utf8') }), 0o644);
    put('usr/share/lintian/overrides/intake-relay', source('deploy/debian/lintian-overrides'), 0o644);
    for (const script of ['postinst', 'prerm', 'postrm']) put(`DEBIAN/${script}`, source(`deploy/debian/${script}`), 0o755);
    put('DEBIAN/conffiles', `${CONFFILES.join('\n')}\n`, 0o644);

    chmodSync(stage, 0o755);
    const { files, dirs } = walk(stage);
    // Installed-Size as dpkg-gencontrol counts it: KiB per file, rounded up, and one per directory.
    const installedSizeKiB = files.reduce((sum, f) => sum + Math.ceil(statSync(f).size / 1024), dirs);
    // md5sums (for dpkg --verify, debsums) leaves out conffiles: dpkg keeps their sums itself.
    const md5sums = files
      .map((f) => relative(stage, f))
      .filter((f) => !CONFFILES.includes(`/${f}`))
      .sort()
      .map((f) => `${createHash('md5').update(readFileSync(join(stage, f))).digest('hex')}  ${f}`);
    put('DEBIAN/md5sums', `${md5sums.join('\n')}\n`, 0o644);
    put('DEBIAN/control', control({
      version,
      arch: binary.arch,
      maintainer: author,
      depends: shlibDepends(work, join(stage, 'usr/bin/intake-relay')),
      installedSizeKiB,
      synopsis: binary.help.summary,
      description: pkg.description,
      homepage: pkg.homepage,
    }), 0o644);

    mkdirSync(values.out, { recursive: true });
    const deb = join(resolve(values.out), `intake-relay_${version}_${binary.arch}.deb`);
    execFileSync('dpkg-deb', ['--root-owner-group', ...compression, '--build', stage, deb], {
      env: { ...process.env, SOURCE_DATE_EPOCH: String(epoch) },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    process.stdout.write(`${deb}\n`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

try {
  main();
} catch (err) {
  process.stderr.write(`npm run deb: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
