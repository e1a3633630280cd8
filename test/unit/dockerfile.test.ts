// The Dockerfile's rules, read from the file (test/integration/container.test.ts builds and runs
// it with podman): two stages on base images given as build arguments and pinned by digest, the
// executable of `npm run package` and no npm in the image, root only to drop to a numeric user, tini before the
// executable, a HEALTHCHECK the executable answers, OCI labels, a root-owned configuration, the
// shipped configuration's ports exposed and its key required.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { all, execForm, imageConfig, keyValues, last, parseCopy, parseDockerfile } from '../helpers/dockerfile.ts';
import { BUILD_OUTPUTS } from '../helpers/image-layout.ts';
import { TEST_KEY } from '../helpers/relay.ts';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string; license: string };
const stages = parseDockerfile();
const [build, final] = [stages[0]!, stages.at(-1)!];
const image = imageConfig(stages);
const copies = all(final, 'COPY').map((i) => parseCopy(i.args));
const destOf = (source: string): string | undefined => copies.find((c) => c.sources.includes(source))?.dest;
const runs = (stage: typeof build): string => all(stage, 'RUN').map((i) => i.args).join('\n');

describe('Dockerfile', () => {
  it('builds the executable in a Node 24 stage and ships it alone on a glibc base without Node or npm', () => {
    expect(stages).toHaveLength(2);
    expect(build).toMatchObject({ image: '${BUILD_IMAGE}', name: 'build', platform: '$BUILDPLATFORM' });
    // A mirror or an internal registry is one build argument away; by default, pinned digests.
    expect(build.imageDefault).toMatch(/^node:24-bookworm-slim@sha256:[0-9a-f]{64}$/);
    expect(final.image).toBe('${RUNTIME_IMAGE}');
    expect(final.imageDefault).toMatch(/^gcr\.io\/distroless\/cc-debian12@sha256:[0-9a-f]{64}$/);
    // No frontend pulled from a registry at build time.
    expect(readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8')).not.toMatch(/^#\s*syntax=/m);
    expect(runs(build)).toMatch(/\bnpm ci\b/);
    expect(runs(build)).toMatch(/\bnpm run package -- --arch\b/);
    // No install at run time, nor at build time in the final stage: distroless has no shell to RUN.
    expect(all(final, 'RUN')).toEqual([]);
    expect(final.instructions.map((i) => i.args).join('\n')).not.toMatch(/\bnpm\b|node_modules|\bnode\b(?!-)/);
  });

  it('knows where every file the final stage copies from the build stage comes from', () => {
    for (const c of copies.filter((x) => x.from !== undefined)) {
      expect(c.from).toBe(build.name);
      for (const s of c.sources) expect(BUILD_OUTPUTS[s] !== undefined || s.startsWith('/src/build/'), s).toBe(true);
    }
    for (const { made } of Object.values(BUILD_OUTPUTS)) expect(runs(build)).toContain(made);
  });

  it('starts as root only to drop to a numeric non-root user and group (INTAKE_RELAY_USER)', () => {
    // Root to take a host directory mounted for the state (the official forwarder's layout), then the user.
    expect(last(final, 'USER')?.args).toBe('0:0');
    expect(image.env.INTAKE_RELAY_USER).toMatch(/^\d+:\d+$/);
    expect(image.daemonUser!.uid).toBeGreaterThanOrEqual(1000);
    expect(image.daemonUser!.gid).toBeGreaterThanOrEqual(1000);
    // The state directory it ships is that user's already.
    expect(copies.find((c) => c.dest === '/var/lib/')?.chown).toBe(image.env.INTAKE_RELAY_USER);
  });

  it('starts tini as PID 1, then the packaged executable with `run`', () => {
    const [tini, ...rest] = image.entrypoint;
    expect(tini).toBe(destOf('/tini/usr/bin/tini-static'));
    expect(rest.slice(-2)).toEqual(['--', destOf('/out/intake-relay')]);
    expect(image.cmd[0]).toBe('run');
  });

  it('has a HEALTHCHECK that the executable itself answers (no curl, no Node)', () => {
    const h = last(final, 'HEALTHCHECK')!.args;
    const [options, cmd] = [h.slice(0, h.indexOf('CMD')), h.slice(h.indexOf('CMD') + 3).trim()];
    expect(execForm(cmd)).toEqual([destOf('/out/intake-relay'), 'healthcheck']);
    const o = Object.fromEntries([...options.matchAll(/--([a-z-]+)=(\S+)/g)].map((m) => [m[1], m[2]]));
    expect(Object.keys(o).sort()).toEqual(['interval', 'retries', 'start-period', 'timeout']);
    // `healthcheck` gives up after 3 s, inside the engine's timeout.
    expect(Number.parseInt(o.timeout!, 10)).toBeGreaterThan(3);
  });

  it('carries the OCI labels, with the package.json version and licence', () => {
    const keys = ['title', 'description', 'version', 'revision', 'source', 'licenses'].map((k) => `org.opencontainers.image.${k}`);
    expect(Object.keys(image.labels).sort()).toEqual(keys.sort());
    expect(image.labels['org.opencontainers.image.version']).toBe(pkg.version);
    expect(image.labels['org.opencontainers.image.licenses']).toBe(pkg.license);
    expect(image.labels['org.opencontainers.image.title']).toBe('intake-relay');
    // Given at build time (--build-arg): the Dockerfile says where they come from.
    expect(all(final, 'LABEL').map((i) => i.args).join(' ')).toMatch(/revision="\$REVISION".*source="\$SOURCE"/);
  });

  it('ships the licence and the licences of what the executable contains', () => {
    expect(destOf('LICENSE')).toBe('/usr/share/doc/intake-relay/LICENSE');
    expect(destOf('/src/build/intake-relay-THIRD-PARTY-LICENSES.txt')).toBe('/usr/share/doc/intake-relay/THIRD-PARTY-LICENSES.txt');
  });

  it('declares its state as a volume, not its configuration; the configuration is root\'s, the state the daemon\'s', () => {
    expect(image.volumes).toEqual(['/var/lib/intake-relay']);
    const config = copies.find((c) => c.dest === '/etc/intake-relay/intake-relay.yaml');
    expect(config).toMatchObject({ chown: undefined });
    expect(copies.find((c) => c.dest === '/var/lib/')).toMatchObject({ chown: '10001:10001' });
  });

  it('takes a CA for the build as a secret, never a layer, and gives the revision to the executable', () => {
    const buildRuns = all(build, 'RUN').map((i) => i.args);
    for (const r of buildRuns.filter((x) => /\bnpm (ci|run)\b/.test(x))) expect(r).toMatch(/^--mount=type=secret,id=build_ca /);
    expect(all(build, 'COPY').map((i) => i.args).join('\n')).not.toMatch(/\.pem|\.crt|ca/i);
    expect(buildRuns.join('\n')).toMatch(/INTAKE_RELAY_COMMIT="\$REVISION" npm run package/);
  });

  it('runs the shipped configuration: its ports exposed, every address inside, and a key required', () => {
    // Where `run` and `healthcheck` look when no configuration is given (src/main.ts).
    expect(image.env.INTAKE_RELAY_CONFIG).toBeUndefined();
    expect(destOf('config/intake-relay.yaml')).toBe('/etc/intake-relay/intake-relay.yaml');
    expect(readFileSync(new URL('../../src/main.ts', import.meta.url), 'utf8')).toContain("?? '/etc/intake-relay/intake-relay.yaml'");
    const text = readFileSync(new URL('../../config/intake-relay.yaml', import.meta.url), 'utf8');
    const c = parseConfig(text, '/etc/intake-relay/intake-relay.yaml', { ...image.env, INTAKE_KEY: TEST_KEY });
    const exposed = all(final, 'EXPOSE').flatMap((i) => i.args.split(/\s+/));
    const listening = [...c.intakes[0]!.inputs.map((i) => (i.type === 'file' ? '' : `${i.port}/${i.type}`)), `${c.metrics.port}/tcp`];
    expect(exposed.sort()).toEqual(listening.sort());
    expect([...c.intakes[0]!.inputs.map((i) => (i.type === 'file' ? '' : i.address)), c.metrics.address]).toEqual(['0.0.0.0', '0.0.0.0', '0.0.0.0']);
    expect(c.intakes[0]!.toEmulator).toBe(false);
    expect(() => parseConfig(text, 'f', image.env)).toThrow(/INTAKE_KEY is not set or empty\): set it, or INTAKE_RELAY_EMULATOR=no_intake_key/);
    expect(parseConfig(text, 'f', { ...image.env, INTAKE_RELAY_EMULATOR: 'no_intake_key' }).intakes[0]!.toEmulator).toBe(true);
  });

  it('leaves node_modules and build outputs out of the context, and nothing the build stage copies', () => {
    const ignored = readFileSync(new URL('../../.dockerignore', import.meta.url), 'utf8').split('\n').filter((l) => l && !l.startsWith('#'));
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'build', 'dist', '.git']));
    const copied = [...all(build, 'COPY'), ...all(final, 'COPY')].map((i) => parseCopy(i.args)).filter((c) => !c.from).flatMap((c) => c.sources);
    for (const s of copied) expect(ignored, s).not.toContain(s.split('/')[0]);
  });

  it('ARG defaults parse as the builder reads them', () => {
    expect(keyValues('A=1 B="two words" C')).toEqual({ A: '1', B: 'two words', C: '' });
  });
});
