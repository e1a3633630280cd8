// The Kubernetes manifests, the compose file and the kustomization, loaded as YAML (no cluster, no
// kubectl here) and checked against the configuration each one runs and against the image: ports
// (container, Service target, probe, the config's listen ports) agree, probes name no host, the user
// is the Dockerfile's, what the config writes is on a writable volume, the config itself is valid
// with the environment it gets, and the instructions' Secret holds the keys it needs.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { posix } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, parse } from 'yaml';
import { parseConfig } from '../../src/config/load.ts';
import type { Config } from '../../src/config/resolve.ts';
import { inputOf } from '../../src/inputs/registry.ts';
import { imageConfig } from '../helpers/dockerfile.ts';
import { TEST_KEY } from '../helpers/relay.ts';

const DEPLOY = new URL('../../deploy/', import.meta.url).pathname;
const K8S = `${DEPLOY}kubernetes/`;
const image = imageConfig();

interface Port { name?: string; containerPort: number; protocol?: string }
interface Probe { httpGet?: { path: string; port: number | string; host?: string } }
interface Security { runAsNonRoot?: boolean; runAsUser?: unknown; runAsGroup?: unknown; fsGroup?: unknown; readOnlyRootFilesystem?: boolean; capabilities?: { add?: string[]; drop?: string[] } }
interface Mount { name: string; mountPath: string; readOnly?: boolean }
interface Container {
  name: string; image: string; command?: string[]; args?: string[];
  env?: { name: string; value?: string }[]; envFrom?: { secretRef?: { name: string } }[];
  ports?: Port[]; volumeMounts?: Mount[]; readinessProbe?: Probe; livenessProbe?: Probe; securityContext?: Security;
}
interface Volume { name: string; configMap?: { name: string; items?: unknown }; emptyDir?: object; persistentVolumeClaim?: object }
interface PodSpec { containers: Container[]; initContainers?: (Container & { restartPolicy?: string })[]; volumes?: Volume[]; securityContext?: Security; terminationGracePeriodSeconds?: number }
interface K8sObject {
  kind: string; metadata: { name: string };
  data?: Record<string, string>;
  spec?: {
    type?: string; externalTrafficPolicy?: string; clusterIP?: string; selector?: Record<string, string> | { matchLabels: Record<string, string> };
    ports?: { name?: string; port: number; targetPort?: number | string; protocol?: string }[];
    template?: { metadata: { labels: Record<string, string> }; spec: PodSpec };
    volumeClaimTemplates?: { metadata: { name: string } }[];
  };
}

interface Workload { file: string; text: string; objects: K8sObject[]; owner: K8sObject; pod: PodSpec; relay: Container }

const manifests = readdirSync(K8S).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml' && f !== 'servicemonitor.yaml');

function load(file: string): { text: string; objects: K8sObject[] } {
  const text = readFileSync(`${K8S}${file}`, 'utf8');
  const docs = parseAllDocuments(text);
  for (const d of docs) expect(d.errors, file).toEqual([]);
  return { text, objects: docs.map((d) => d.toJS() as K8sObject).filter(Boolean) };
}

const workloads: Workload[] = manifests.flatMap((file) => {
  const { text, objects } = load(file);
  return objects.flatMap((owner) => {
    const pod = owner.spec?.template?.spec;
    // A native sidecar (an init container that restarts always) or a plain container.
    const relay = [...(pod?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always'), ...(pod?.containers ?? [])].find((c) => c.image.split(':')[0] === 'intake-relay');
    return pod && relay ? [{ file, text, objects, owner, pod, relay }] : [];
  });
});

/** The keys the file's own `kubectl create secret generic NAME --from-literal=KEY=...` gives. */
function secretKeys(text: string, name: string): string[] {
  const line = text.split('\n').find((l) => l.includes(`kubectl create secret generic ${name} `));
  if (!line) throw new Error(`no "kubectl create secret generic ${name}" in the file's instructions`);
  return [...line.matchAll(/--from-literal=([A-Z_][A-Z0-9_]*)=/g)].map((m) => m[1]!);
}

/** The config file the container runs (-c, else where the image's run looks), from its ConfigMap. */
function configOf(w: Workload): { path: string; text: string; env: Record<string, string> } {
  const args = w.relay.args ?? [];
  const path = args.includes('-c') ? args[args.indexOf('-c') + 1]! : '/etc/intake-relay/intake-relay.yaml';
  const mount = (w.relay.volumeMounts ?? []).find((m) => path.startsWith(`${m.mountPath}/`));
  const volume = w.pod.volumes?.find((v) => v.name === mount?.name);
  expect(volume?.configMap, `${w.file}: ${path} comes from a ConfigMap`).toBeDefined();
  expect(volume!.configMap!.items).toBeUndefined();
  const map = w.objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === volume!.configMap!.name);
  const text = map?.data?.[posix.relative(mount!.mountPath, path)];
  expect(text, `${w.file}: ConfigMap ${volume!.configMap!.name} holds ${path}`).toBeDefined();
  const env: Record<string, string> = { ...image.env };
  for (const e of w.relay.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
  for (const f of w.relay.envFrom ?? []) if (f.secretRef) for (const k of secretKeys(w.text, f.secretRef.name)) env[k] = TEST_KEY;
  return { path, text: text!, env };
}

/** Every port the configuration listens on (inputs, listeners, the metrics server). */
function listening(c: Config): { proto: 'tcp' | 'udp'; address: string; port: number }[] {
  const parts = [...c.intakes.flatMap((i) => i.inputs), ...c.listeners].flatMap((x) => inputOf(x).listening(x as never) ?? []);
  return c.metrics.enabled ? [...parts, { proto: 'tcp', address: c.metrics.address, port: c.metrics.port }] : parts;
}

const loopback = (a: string): boolean => a.startsWith('127.') || a === '::1' || a === 'localhost';

function security(w: Workload): Security {
  return { ...w.pod.securityContext, ...w.relay.securityContext };
}

describe.each(workloads.map((w) => [`${w.file}: ${w.owner.kind} ${w.owner.metadata.name}`, w] as const))('%s', (_name, w) => {
  // Loaded here, reported by the first test: a problem fails that test by name, not the whole file.
  let loaded: Config | undefined;
  let problem: unknown;
  try {
    const { path, text, env } = configOf(w);
    loaded = parseConfig(text, path, env);
  } catch (err) {
    problem = err;
  }
  const config = (): Config => {
    if (!loaded) throw problem;
    return loaded;
  };
  const ports = w.relay.ports ?? [];
  const portNumber = (p: number | string | undefined): number | undefined => (typeof p === 'number' ? p : ports.find((x) => x.name === p)?.containerPort);

  it('runs a configuration that the relay accepts with the environment the pod gives it', () => {
    expect(problem).toBeUndefined();
    expect(config().warnings).toEqual([]);
    expect(config().intakes.every((i) => !i.toEmulator)).toBe(true);
  });

  it('keeps the image entrypoint (tini) and runs `run`', () => {
    expect(w.relay.command).toBeUndefined();
    expect(w.relay.args?.[0]).toBe('run');
  });

  it("runs as the image's numeric user, non-root", () => {
    const s = security(w);
    expect(s.runAsNonRoot).toBe(true);
    expect(s.runAsUser).toBe(image.daemonUser!.uid);
    expect(s.runAsGroup).toBe(image.daemonUser!.gid);
    if (s.fsGroup !== undefined) expect(s.fsGroup).toBe(image.daemonUser!.gid);
    expect(s.capabilities?.drop).toEqual(['ALL']);
  });

  it('opens a container port for each port the config listens on beyond loopback, and no other', () => {
    const open = listening(config()).filter((l) => !loopback(l.address)).map((l) => `${l.port}/${l.proto.toUpperCase()}`);
    expect(ports.map((p) => `${p.containerPort}/${p.protocol ?? 'TCP'}`).sort()).toEqual(open.sort());
    const canBindLow = security(w).capabilities?.add?.includes('NET_BIND_SERVICE') === true;
    for (const l of listening(config())) if (!canBindLow) expect(l.port, 'a port below 1024 needs NET_BIND_SERVICE').toBeGreaterThanOrEqual(1024);
  });

  it('probes the metrics port on the pod address: no host, and metrics not on loopback', () => {
    for (const [probe, path] of [[w.relay.readinessProbe, '/readyz'], [w.relay.livenessProbe, '/healthz']] as const) {
      expect(probe?.httpGet?.host).toBeUndefined();
      expect(probe?.httpGet?.path).toBe(path);
      expect(portNumber(probe?.httpGet?.port)).toBe(config().metrics.port);
    }
    expect(loopback(config().metrics.address)).toBe(false);
  });

  it("Services' target ports reach a container port of the same protocol", () => {
    const labels = w.owner.spec!.template!.metadata.labels;
    const services = w.objects.filter((o) => o.kind === 'Service' && Object.entries((o.spec?.selector ?? {}) as Record<string, string>).every(([k, v]) => labels[k] === v));
    for (const s of services) {
      for (const p of s.spec!.ports!) {
        // A named target port is that container port; a number, any container port of the protocol.
        const t = p.targetPort ?? p.port;
        const hit = ports.filter((c) => (typeof t === 'string' ? c.name === t : c.containerPort === t));
        expect(hit.some((c) => (c.protocol ?? 'TCP') === (p.protocol ?? 'TCP')), `${s.metadata.name} ${p.name}`).toBe(true);
      }
    }
  });

  it('mounts a writable volume wherever the config writes, the root file system being read-only', () => {
    expect(security(w).readOnlyRootFilesystem).toBe(true);
    const writes = [
      ...(config().intakes.some((i) => i.inputs.some((x) => x.type === 'file')) ? [config().dataDir] : []),
      ...config().intakes.flatMap((i) => (i.queue.type === 'disk' ? [i.queue.path] : [])),
    ];
    expect(writes.length).toBeGreaterThan(0);
    const claims = (w.owner.spec?.volumeClaimTemplates ?? []).map((c) => c.metadata.name);
    for (const p of writes) {
      const m = (w.relay.volumeMounts ?? []).find((x) => p === x.mountPath || p.startsWith(`${x.mountPath}/`));
      expect(m, `${p} is on a volume`).toBeDefined();
      expect(m!.readOnly ?? false, p).toBe(false);
      const v = w.pod.volumes?.find((x) => x.name === m!.name);
      expect(claims.includes(m!.name) || v?.emptyDir !== undefined || v?.persistentVolumeClaim !== undefined, `${p}: ${m!.name} is an emptyDir or a claim`).toBe(true);
    }
  });

  it('gives SIGTERM more time than the drain', () => {
    expect((w.pod.terminationGracePeriodSeconds ?? 30) * 1000).toBeGreaterThan(config().shutdown_timeout_ms);
  });
});

describe('deploy/kubernetes', () => {
  it('holds both workloads', () => {
    expect(workloads.map((w) => `${w.file} ${w.owner.kind}`).sort()).toEqual(['collector.yaml StatefulSet', 'sidecar.yaml Deployment']);
  });

  it('puts the collector behind a LoadBalancer that keeps the senders\' addresses, 514 mapped to the container', () => {
    const { objects } = load('collector.yaml');
    const lb = objects.filter((o) => o.kind === 'Service' && o.spec?.type === 'LoadBalancer');
    expect(lb).toHaveLength(1);
    expect(lb[0]!.spec!.externalTrafficPolicy).toBe('Local');
    expect(lb[0]!.spec!.ports!.filter((p) => p.port === 514).map((p) => p.protocol).sort()).toEqual(['TCP', 'UDP']);
    const set = objects.find((o) => o.kind === 'StatefulSet') as K8sObject & { spec: { serviceName: string } };
    expect(objects.find((o) => o.kind === 'Service' && o.metadata.name === set.spec.serviceName)?.spec?.clusterIP).toBe('None');
  });

  it('embeds deploy/sidecar.yaml as it is, and the systemd collector config apart from its ports', () => {
    const sidecar = workloads.find((w) => w.file === 'sidecar.yaml')!;
    expect(configOf(sidecar).text).toBe(readFileSync(`${DEPLOY}sidecar.yaml`, 'utf8'));
    const shape = (text: string): string => JSON.stringify(parse(text.replace(/^\s*#.*\n/gm, '').replace(/port: \d+/g, 'port: P')));
    const collector = workloads.find((w) => w.file === 'collector.yaml')!;
    expect(shape(configOf(collector).text)).toBe(shape(readFileSync(`${DEPLOY}collector.yaml`, 'utf8')));
  });

  it('kustomization.yaml applies files that exist, and names the image the workloads use', () => {
    const k = parse(readFileSync(`${K8S}kustomization.yaml`, 'utf8')) as { resources: string[]; images: { name: string }[] };
    for (const r of k.resources) expect(existsSync(`${K8S}${r}`), r).toBe(true);
    expect(k.resources).toContain('collector.yaml');
    const names = new Set(workloads.map((w) => w.relay.image.split(':')[0]));
    expect(k.images.map((i) => i.name)).toEqual([...names]);
  });
});

describe('deploy/docker-compose.yml', () => {
  const compose = parse(readFileSync(`${DEPLOY}docker-compose.yml`, 'utf8')) as {
    services: Record<string, { volumes?: string[]; environment?: Record<string, string>; command?: string[]; user?: string; cap_drop?: string[]; read_only?: boolean; stop_grace_period?: string; network_mode?: string }>;
  };
  const relay = compose.services['intake-relay']!;
  const mounts = (relay.volumes ?? []).map((v) => v.split(':')).map(([source, target, mode]) => ({ source: source!, target: target!, readOnly: mode === 'ro' }));
  const path = relay.command?.includes('-c') ? relay.command[relay.command.indexOf('-c') + 1]! : '/etc/intake-relay/intake-relay.yaml';
  const file = mounts.find((m) => m.target === path);
  // Compose's own ${VAR:?message} and ${VAR:-default}: the key given, the defaults taken.
  const env = { ...image.env, ...Object.fromEntries(Object.entries(relay.environment ?? {}).map(([k, v]) => [k, v.includes(':?') ? TEST_KEY : v.replace(/\$\{[^:}]+:-([^}]*)\}/, '$1')])) };
  const config = parseConfig(readFileSync(posix.join(DEPLOY, file!.source), 'utf8'), path, env);

  it("runs deploy/sidecar.yaml, mounted read-only where the image's `run` reads it, as the image's user", () => {
    expect(file).toMatchObject({ source: './sidecar.yaml', readOnly: true });
    // Started as that user: with cap_drop ALL, a start as root could not drop to it.
    expect(relay.user).toBe(image.env.INTAKE_RELAY_USER);
    expect(relay.cap_drop).toEqual(['ALL']);
    expect(relay.command?.[0]).toBe('run');
  });

  it('writes only to its state volume, on a read-only root file system', () => {
    expect(relay.read_only).toBe(true);
    const m = mounts.find((x) => config.dataDir === x.target || config.dataDir.startsWith(`${x.target}/`));
    expect(m).toMatchObject({ source: 'relay-state', readOnly: false });
  });

  it('gives SIGTERM more time than the drain', () => {
    expect(Number.parseInt(relay.stop_grace_period ?? '10', 10) * 1000).toBeGreaterThan(config.shutdown_timeout_ms);
  });

  it('every object is valid against the Kubernetes schemas (the ServiceMonitor against the Prometheus Operator\'s)', async () => {
    const apps = await import('kubernetes-models/apps/v1');
    const core = await import('kubernetes-models/v1');
    const policy = await import('kubernetes-models/policy/v1');
    const monitoring = await import('@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1');
    const kinds: Record<string, new (o: never) => { validate(): void }> = {
      StatefulSet: apps.StatefulSet, Deployment: apps.Deployment, Service: core.Service, ConfigMap: core.ConfigMap,
      PodDisruptionBudget: policy.PodDisruptionBudget, ServiceMonitor: monitoring.ServiceMonitor,
    };
    const files = readdirSync(K8S).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    const seen: string[] = [];
    for (const f of files) {
      for (const o of load(f).objects) {
        const Kind = kinds[o.kind];
        expect(Kind, `${f}: ${o.kind} has a schema here`).toBeDefined();
        expect(() => new Kind!(o as never).validate(), `${f}: ${o.kind} ${o.metadata.name}`).not.toThrow();
        seen.push(`${f} ${o.kind}`);
      }
    }
    expect(seen).toEqual(expect.arrayContaining(['collector.yaml PodDisruptionBudget', 'servicemonitor.yaml ServiceMonitor', 'sidecar.yaml Deployment']));
  });

  it('the sidecar is a native sidecar (started first, stopped last); the budget and the monitor select the collector', () => {
    const side = workloads.find((w) => w.file === 'sidecar.yaml')!;
    expect(side.pod.initContainers?.find((c) => c.name === 'intake-relay')?.restartPolicy).toBe('Always');
    const { objects } = load('collector.yaml');
    const set = objects.find((o) => o.kind === 'StatefulSet')!;
    const podLabels = set.spec!.template!.metadata.labels;
    const pdb = objects.find((o) => o.kind === 'PodDisruptionBudget') as unknown as { spec: { selector: { matchLabels: Record<string, string> }; maxUnavailable: number } };
    expect(Object.entries(pdb.spec.selector.matchLabels).every(([k, v]) => podLabels[k] === v)).toBe(true);
    expect(pdb.spec.maxUnavailable).toBe(1);
    const monitor = load('servicemonitor.yaml').objects[0] as unknown as { spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string }[] } };
    const svc = objects.find((o) => o.kind === 'Service' && Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => (o.metadata as { labels?: Record<string, string> }).labels?.[k] === v));
    expect(svc?.spec?.ports?.map((p) => p.name)).toContain(monitor.spec.endpoints[0]!.port);
    // The targets' job is the one the shipped alert rules name (the operator's own would be the Service's name).
    const alerts = readFileSync(new URL('../../deploy/monitoring/intake-relay-alerts.yaml', import.meta.url), 'utf8');
    const jobs = new Set([...alerts.matchAll(/\bjob="([^"]+)"/g)].map((m) => m[1]));
    const relabel = (monitor.spec.endpoints[0] as { relabelings?: { targetLabel?: string; replacement?: string }[] }).relabelings?.find((r) => r.targetLabel === 'job');
    expect([...jobs]).toEqual([relabel?.replacement]);
  });
});
