// `npm run release`: every artefact of a release, into build/release/, as the release workflow
// (.github/workflows/release.yml) makes them on each architecture's runner:
//   intake-relay-linux-<arch>            the single executables (scripts/package.ts), x64 and arm64
//   intake-relay_<version>_<arch>.deb    the Debian package (scripts/deb.ts): this machine's arch only
//                                        (dpkg-shlibdeps reads the binary's libraries here)
//   intake-relay-image-<arch>.tar        the image as an OCI archive, this machine's arch, where
//                                        podman or docker runs (--no-image skips it)
//   intake-relay.cdx.json                the CycloneDX SBOM of what the executable contains (npm,
//                                        production dependencies)
//   intake-relay-THIRD-PARTY-LICENSES.txt, SHA256SUMS
//   node scripts/release.ts [--arch x64,arm64] [--out build/release] [--no-image]
// Base images, a CA for the build, the revision: as the Dockerfile takes them (BUILD_IMAGE,
// RUNTIME_IMAGE and BUILD_CA in the environment; REVISION is the checkout's commit).
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HOST_ARCH = process.arch;

function log(line: string): void {
  process.stderr.write(`release: ${line}\n`);
}

function run(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): void {
  execFileSync(cmd, args, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, ...env } });
}

/** podman, else docker, where one runs; undefined otherwise. */
function engine(): string | undefined {
  for (const e of ['podman', 'docker']) if (spawnSync(e, ['info'], { stdio: 'ignore' }).status === 0) return e;
  return undefined;
}

function main(): void {
  const { values } = parseArgs({ options: { arch: { type: 'string', default: 'x64,arm64' }, out: { type: 'string', default: join(ROOT, 'build', 'release') }, 'no-image': { type: 'boolean', default: false } } });
  const out = resolve(values.out);
  const arches = values.arch.split(',').filter(Boolean);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const revision = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();

  run(process.execPath, [join(ROOT, 'scripts', 'package.ts'), '--arch', arches.join(','), '--out', out]);
  rmSync(join(out, 'sea'), { recursive: true, force: true });
  for (const f of readdirSync(out).filter((f) => f.endsWith('.sha256'))) rmSync(join(out, f));

  if (arches.includes(HOST_ARCH)) {
    run(process.execPath, [join(ROOT, 'scripts', 'deb.ts'), '--binary', join(out, `intake-relay-linux-${HOST_ARCH}`), '--out', out]);
  }
  const notHere = arches.filter((a) => a !== HOST_ARCH);
  if (notHere.length > 0) log(`no .deb for ${notHere.join(', ')}: dpkg-shlibdeps needs that architecture (the workflow builds it on its own runner)`);

  const e = values['no-image'] ? undefined : engine();
  if (e) {
    const tag = `intake-relay:${version}`;
    const ca = process.env.BUILD_CA;
    run(e, [
      'build', ...(e === 'podman' ? ['--format', 'docker'] : []), '-t', tag,
      '--build-arg', `VERSION=${version}`, '--build-arg', `REVISION=${revision}`,
      ...(process.env.BUILD_IMAGE ? ['--build-arg', `BUILD_IMAGE=${process.env.BUILD_IMAGE}`] : []),
      ...(process.env.RUNTIME_IMAGE ? ['--build-arg', `RUNTIME_IMAGE=${process.env.RUNTIME_IMAGE}`] : []),
      ...(ca ? ['--secret', `id=build_ca,src=${ca}`] : []),
      ROOT,
    ]);
    const archive = join(out, `intake-relay-image-${HOST_ARCH}.tar`);
    run(e, e === 'podman' ? ['save', '--format', 'oci-archive', '-o', archive, tag] : ['save', '-o', archive, tag]);
  } else {
    log(values['no-image'] ? 'no image (--no-image)' : 'no image: neither podman nor docker runs here (the workflow builds and pushes the multi-arch image)');
  }

  // What the executable contains from npm: the production dependencies.
  run(join(ROOT, 'node_modules', '.bin', 'cyclonedx-npm'), ['--omit', 'dev', '--output-format', 'JSON', '--output-file', join(out, 'intake-relay.cdx.json')]);

  const files = readdirSync(out).filter((f) => f !== 'SHA256SUMS' && statSync(join(out, f)).isFile()).sort();
  const sums = files.map((f) => `${createHash('sha256').update(readFileSync(join(out, f))).digest('hex')}  ${f}`);
  writeFileSync(join(out, 'SHA256SUMS'), `${sums.join('\n')}\n`);
  log(`${files.length} artefacts in ${out}: ${files.join(', ')}`);
  if (!existsSync(join(out, 'intake-relay.cdx.json'))) throw new Error('no SBOM was written');
}

main();
