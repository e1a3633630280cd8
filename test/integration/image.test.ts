// The container image without a container engine (none runs where these tests run): the
// Dockerfile's build stage repeated on a copy of its context (`npm run package`), its final stage's
// COPY instructions applied to an empty root, the libraries its base provides added per ldd; then
// run with the image's ENTRYPOINT, CMD, USER and ENV under new PID, network and mount namespaces
// (tini as PID 1, uid 10001, HEALTHCHECK in the same namespaces), or, where this machine does not
// allow namespaces, the entrypoint straight from the root (the describe's title says which ran).
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { all, execForm, imageConfig, last, parseDockerfile } from '../helpers/dockerfile.ts';
import { baseImage, buildStage, debianPackageOf, finalStage, sharedLibraries, type LayoutEntry } from '../helpers/image-layout.ts';
import { namespacesWork, processStatus, startContainer, startDirect, type Container, type Mount } from '../helpers/container.ts';
import { freePort, requirePeer } from '../helpers/peers.ts';
import { TEST_KEY } from '../helpers/relay.ts';
import { spawnSync } from 'node:child_process';
import { tempDir } from '../helpers/cleanup.ts';

const stages = parseDockerfile();
const image = imageConfig(stages);
const build = stages[0]!;
const healthcheck = ((): string[] => {
  const h = last(image.final, 'HEALTHCHECK');
  return execForm(h!.args.slice(h!.args.indexOf('CMD') + 3).trim());
})();
const isolated = namespacesWork();
// distroless's own ENV; Docker adds HOME (/ for a user without a passwd entry) and HOSTNAME.
const BASE_ENV = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', SSL_CERT_FILE: '/etc/ssl/certs/ca-certificates.crt', HOME: '/', HOSTNAME: 'intake-relay-test' };

let dir: string;
let root: string;
let layout: LayoutEntry[];

beforeAll(() => {
  requirePeer('tini (tini-static)', existsSync('/usr/bin/tini-static'));
  dir = mkdtempSync(join(tmpdir(), 'image-'));
  const ctx = buildStage(build, dir, process.arch);
  root = join(dir, 'root');
  mkdirSync(root);
  layout = finalStage(image.final, build, ctx, root, process.arch, isolated);
  baseImage(root, join(root, image.entrypoint.at(-1)!));
}, 300_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The image run with `env` added to its own, as `docker run -e` does. */
async function run(env: Record<string, string>, o: { mounts?: Mount[]; readOnlyRoot?: boolean } = {}): Promise<Container> {
  const argv = [...image.entrypoint, ...image.cmd];
  const all = { ...BASE_ENV, ...image.env, ...env };
  if (isolated) return startContainer({ root, argv, env: all, uid: image.user!.uid, gid: image.user!.gid, ...o });
  // Sharing this machine's network: ports of its own.
  const port = await freePort();
  return startDirect({ root, argv, env: { ...all, SYSLOG_PORT: String(port), METRICS_PORT: String(await freePort()) } });
}

async function healthy(c: Container): Promise<string> {
  let last = '';
  await vi.waitFor(() => {
    const r = c.exec(healthcheck);
    last = r.stdout + r.stderr;
    expect(r.code, `${last}\n${c.out.stdout}${c.out.stderr}`).toBe(0);
  }, { timeout: 20_000, interval: 250 });
  return last;
}

async function stop(c: Container): Promise<number | null> {
  process.kill(await c.pid1(), 'SIGTERM');
  return c.exited;
}

describe(isolated ? 'the image, run as a container (namespaces, tini as PID 1, its numeric user)' : 'the image, its entrypoint run directly (this machine allows no namespaces)', () => {
  it('needs only what its base image has: the executable loads glibc, libgcc and libstdc++ alone', () => {
    expect(image.final.image).toMatch(/^gcr\.io\/distroless\/cc-debian12(:|@|$)/);
    const packages = new Set(sharedLibraries(join(root, image.entrypoint.at(-1)!)).map(([path]) => debianPackageOf(path)));
    expect([...packages].sort()).toEqual(['libc6', 'libgcc-s1', 'libstdc++6']);
  });

  it('with a key: starts, the HEALTHCHECK finds it ready, and SIGTERM to PID 1 drains it and exits 0', async () => {
    const c = await run({ INTAKE_KEY: TEST_KEY });
    expect(await healthy(c)).toMatch(/^ready: http:\/\/127\.0\.0\.1:\d+\/readyz: 200 /);
    if (isolated) {
      const tini = await c.pid1();
      expect(processStatus(tini).nspid.split(/\s+/).at(-1)).toBe('1');
      const children = spawnSync('cat', [`/proc/${tini}/task/${tini}/children`], { encoding: 'utf8' }).stdout.trim().split(/\s+/);
      const daemon = processStatus(Number(children[0]));
      expect(daemon.uid.split(/\s+/)).toEqual(Array(4).fill(String(image.user!.uid)));
    }
    expect(await stop(c)).toBe(0);
    expect(c.out.stdout).toContain('"msg":"intake-relay started."');
    expect(c.out.stdout).toContain('"msg":"Stopped: every queued event was delivered (');
    expect(c.out.stdout + c.out.stderr).not.toContain(TEST_KEY);
  });

  it('without a key, or with its variable misspelt: exit 78 and one line naming INTAKE_KEY and the emulator switch', async () => {
    const runs: Record<string, string>[] = [{}, { INTAKE_KYE: TEST_KEY }];
    for (const env of runs) {
      const c = await run(env);
      expect(await c.exited, c.out.stderr).toBe(78);
      expect(c.out.stdout).toBe('');
      const lines = c.out.stderr.split('\n').filter(Boolean);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/intake-relay\.yaml:\d+:\d+: intakes\[0\]\.intake_key: intake "default" has no key \(environment variable INTAKE_KEY is not set or empty\): set it, or INTAKE_RELAY_EMULATOR=no_intake_key to forward to a local intake emulator instead$/);
      expect(c.out.stderr).not.toContain(TEST_KEY);
    }
  });

  it('with INTAKE_RELAY_EMULATOR=no_intake_key and no key: forwards to the local emulator, which receives a logged line', async () => {
    const c = await run({ INTAKE_RELAY_EMULATOR: 'no_intake_key' });
    await healthy(c);
    // The log is written asynchronously: wait for it.
    await vi.waitFor(() => expect(c.out.stdout).toContain('No intake key set: forwarding to the local intake emulator.'), { timeout: 10_000 });
    const port = isolated ? '1514' : /"udp\/(\d+)/.exec(c.out.stdout)?.[1];
    const send = isolated ? ['nsenter', '--target', String(await c.pid1()), '--net', 'logger'] : ['logger'];
    const r = spawnSync(send[0]!, [...send.slice(1), '-n', '127.0.0.1', '-P', String(port), '-d', 'hello from the image'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    await vi.waitFor(() => expect(c.out.stdout).toMatch(/hello from the image".*"msg":"Emulator received a valid message\."/), { timeout: 10_000 });
    // The UDP input received it with the native receive the executable carries (no dgram fallback).
    expect(c.out.stdout).not.toContain("Node's dgram");
    expect(await stop(c)).toBe(0);
  });

  // The compose file and the Kubernetes sidecar: deploy/sidecar.yaml mounted over the shipped
  // configuration, the application's logs from a volume, the root file system read-only.
  it.runIf(isolated)('the sidecar configuration on a read-only root: runs with data_dir on a volume, exits 1 without one', async () => {
    const logs = tempDir('app-logs-');
    writeFileSync(join(logs, 'app.log'), 'first line\n');
    const state = tempDir('relay-state-');
    chownSync(state, image.user!.uid, image.user!.gid);
    const config: Mount = { source: new URL('../../deploy/sidecar.yaml', import.meta.url).pathname, target: image.env.INTAKE_RELAY_CONFIG!, readOnly: true };
    mkdirSync(join(root, 'var/log/app'), { recursive: true });
    const appLogs: Mount = { source: logs, target: '/var/log/app', readOnly: true };

    // /tmp as the manifests give it (an emptyDir, compose's tmpfs): where the native UDP receive is loaded from.
    const tmp = tempDir('relay-tmp-');
    chmodSync(tmp, 0o1777);
    mkdirSync(join(root, 'tmp'), { recursive: true });
    const c = await run({ INTAKE_KEY: TEST_KEY }, { readOnlyRoot: true, mounts: [config, appLogs, { source: state, target: '/var/lib/intake-relay' }, { source: tmp, target: '/tmp' }] });
    await healthy(c);
    expect(await stop(c)).toBe(0);
    expect(c.out.stdout).toContain('"msg":"intake-relay started."');
    expect(c.out.stdout).not.toMatch(/EROFS|read-only/i);
    expect(c.out.stdout).not.toContain("Node's dgram");
    // Loaded and removed: nothing left behind.
    expect(readdirSync(tmp)).toEqual([]);

    const without = await run({ INTAKE_KEY: TEST_KEY }, { readOnlyRoot: true, mounts: [config, appLogs] });
    expect(await without.exited).toBe(1);
    // What the issue reproduced: no writable data_dir, no start (Docker's VOLUME would have made
    // one; Kubernetes ignores VOLUME, hence the emptyDir in deploy/kubernetes/sidecar.yaml).
    expect(without.out.stdout + without.out.stderr).toContain('cannot use the checkpoint file /var/lib/intake-relay/files/app--app-logs.json');
  });

  it("gives its volumes to the image's user, and keeps the executable and the configuration root's", () => {
    const owner = `${image.user!.uid}:${image.user!.gid}`;
    for (const v of image.volumes) expect(layout.find((e) => e.path === v)?.owner, v).toBe(owner);
    for (const p of [image.entrypoint.at(-1)!, image.env.INTAKE_RELAY_CONFIG!]) expect(layout.find((e) => e.path === p)?.owner, p).toBeUndefined();
    if (isolated) for (const v of image.volumes) expect(statSync(join(root, v)).uid, v).toBe(image.user!.uid);
  });

  it('holds no npm, node_modules or Node.js', () => {
    expect(all(image.final, 'RUN')).toEqual([]);
    const found = spawnSync('find', [root, '(', '-name', 'node_modules', '-o', '-name', 'npm', '-o', '-name', 'node', ')', '-print'], { encoding: 'utf8' });
    expect(found.stdout).toBe('');
  });
});
