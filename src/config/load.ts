// Loads a configuration file: YAML with positions, ${ENV} substitution, the native schema or the
// official forwarder's intakes.yaml, cross-field checks, secrets and certificates read from their
// files. Every problem is collected and reported at once as "file:line:col: path: message"; the
// result is frozen. Every failure is a ConfigError, and nothing it or a warning says carries a
// secret: problems echo no parser's text, and pass through a scrubber of every secret known.

import { resolve as resolvePath, dirname, join } from 'node:path';
import { isMap, isScalar, visit, type Document, type Node, type Scalar } from 'yaml';
import type { ZodError } from 'zod';
import { compileRoutes } from '../routing/router.ts';
import { configSchema, type DiskQueueConfig, type FileInputConfig, type HttpListenerConfig, type SyslogListenerConfig, type IntakeConfig, type InputConfig, type RawConfig } from './schema.ts';
import type { ResolveContext } from '../core/component.ts';
import { outputOf, type ResolvedOutput } from '../outputs/registry.ts';
import { REGIONS, type Region } from './regions.ts';
import { convertLegacy, legacySchema, looksLegacy } from './legacy.ts';
import { SecretScrubber, isSecretField } from './redact.ts';
import { MAX_CONFIG_BYTES, readBounded, readYaml, yamlValue } from './yaml-source.ts';

export const EX_CONFIG = 78;

export class ConfigError extends Error {
  readonly problems: readonly string[];
  constructor(file: string, problems: string[]) {
    super(`${file}: ${problems.length} configuration problem${problems.length === 1 ? '' : 's'}:\n  ${problems.join('\n  ')}`);
    this.problems = problems;
    this.name = 'ConfigError';
  }
}

export interface TlsFiles {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca: Buffer | undefined;
}

export type ResolvedSyslogInput = Exclude<InputConfig, { type: 'file' }> & { readonly label: string; readonly tlsFiles: TlsFiles | undefined };
/** A file input; `paths` and `exclude` made absolute (exclude patterns without "/" match base names). */
export type ResolvedFileInput = FileInputConfig & { readonly label: string };
export type ResolvedInput = ResolvedSyslogInput | ResolvedFileInput;

export type ResolvedQueue = Exclude<IntakeConfig['queue'], { type: 'disk' }> | (DiskQueueConfig & { readonly path: string });

export interface ResolvedIntake extends Omit<IntakeConfig, 'inputs' | 'output' | 'intake_key' | 'intake_key_file' | 'queue'> {
  /** A disk queue's path is absolute, defaulted to <data_dir>/queues/<name>. */
  readonly queue: ResolvedQueue;
  /** The secret. Never log it; use `name`. Empty only when sent to the local emulator. */
  readonly intakeKey: string;
  readonly keySource: string;
  readonly inputs: readonly ResolvedInput[];
  readonly output: ResolvedOutput;
  /** Forwarded to the local emulator because it has no key (emulator.when: no_intake_key). */
  readonly toEmulator: boolean;
}

export type ResolvedHttpListener = HttpListenerConfig & { readonly label: string; readonly tlsFiles: TlsFiles | undefined };
export type ResolvedSyslogListener = SyslogListenerConfig & { readonly label: string; readonly tlsFiles: TlsFiles | undefined };
export type ResolvedListener = ResolvedHttpListener | ResolvedSyslogListener;

/** Paths of the intake's own API, served by every HTTP listener. */
export const INTAKE_API_PATHS = ['/jsons', '/plain', '/plain/batch', '/batch', '/array'];

export interface Config extends Omit<RawConfig, 'intakes' | 'region' | 'listeners'> {
  readonly file: string;
  /** data_dir, or $STATE_DIRECTORY (its first entry), or /var/lib/intake-relay; absolute. */
  readonly dataDir: string;
  readonly format: 'native' | 'official-intakes-yaml';
  readonly region: Region;
  readonly intakes: readonly ResolvedIntake[];
  readonly listeners: readonly ResolvedListener[];
  readonly warnings: readonly string[];
}

const KEY_RE = /^[A-Za-z0-9]+$/;
const MAX_PROBLEMS = 100;
const KEY_NAME_RE = /^[A-Za-z_][A-Za-z0-9_-]{0,31}$/;
/** Certificates, CA bundles and key files: far below this; a device such as /dev/zero is cut off. */
const MAX_REFERENCED_BYTES = 16 * 1024 * 1024;
const ENV_RE = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

const READ_ERRORS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EISDIR: 'it is a directory',
  EFBIG: `larger than ${MAX_CONFIG_BYTES / 1024 / 1024} MiB, not a configuration file`,
};

export function loadConfig(file: string, env: NodeJS.ProcessEnv = process.env): Config {
  let bytes: Buffer;
  try {
    bytes = readBounded(file, MAX_CONFIG_BYTES);
  } catch (err) {
    const code = errorCode(err);
    throw new ConfigError(file, [`${file}: cannot read the file (${READ_ERRORS[code] ? `${code}: ${READ_ERRORS[code]}` : code})`]);
  }
  return parseConfig(bytes, file, env);
}

/** Parses a configuration file's content (bytes are checked to be UTF-8); `file` names it in problems. */
export function parseConfig(input: string | Uint8Array, file: string, env: NodeJS.ProcessEnv = process.env): Config {
  const secrets = new SecretScrubber(env);
  // The file name is the operator's own argument, left as it is.
  const clean = (p: string): string => (p.startsWith(file) ? file + secrets.scrub(p.slice(file.length)) : secrets.scrub(p));
  try {
    return parse(input, file, env, secrets, clean);
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(file, err.problems.map(clean));
    // A loader bug met by this file: still a configuration error, and no message that may quote it.
    throw new ConfigError(file, [`${file}: the configuration could not be loaded (internal error: ${err instanceof Error ? err.name : typeof err})`]);
  }
}

function parse(input: string | Uint8Array, file: string, env: NodeJS.ProcessEnv, secrets: SecretScrubber, clean: (p: string) => string): Config {
  const problems: string[] = [];
  const source = readYaml(input, file);
  if (!source.ok) throw new ConfigError(file, source.problems);
  const { doc, at } = source;

  substituteEnv(doc, env, (node, path, msg) => problems.push(`${at(node)}: ${formatPath(path)}: ${msg}`));
  collectSecrets(doc, secrets);
  const js = yamlValue(doc, file, at);
  if (!js.ok) throw new ConfigError(file, js.problems);
  const raw: unknown = js.value;
  const base = dirname(resolvePath(file));
  const locateKey = (path: readonly PropertyKey[]): string => {
    // An unknown key is reported where the key itself is written.
    const parent = doc.getIn(path.slice(0, -1) as unknown[], true);
    if (isMap(parent)) {
      const pair = parent.items.find((p) => isScalar(p.key) && p.key.value === path[path.length - 1]);
      if (pair && isScalar(pair.key)) return at(pair.key);
    }
    return locate(path);
  };
  const locate = (path: readonly PropertyKey[]): string => {
    // The deepest node that exists on the path (a missing key is reported at its parent).
    for (let n = path.length; n >= 0; n--) {
      const node = doc.getIn(path.slice(0, n) as unknown[], true) as Node | undefined;
      if (node && typeof node === 'object' && 'range' in node) return at(node);
    }
    return file;
  };

  let native: unknown = raw;
  let format: Config['format'] = 'native';
  let mapPath = (p: readonly PropertyKey[]): PropertyKey[] => [...p];
  const warnings: string[] = [];
  if (looksLegacy(raw)) {
    format = 'official-intakes-yaml';
    const legacy = legacySchema.safeParse(raw);
    if (!legacy.success) {
      const more = reportZod(legacy.error, problems, locate, locateKey, (p) => [...p]);
      if (more > 0) problems.push(`${file}: ${more} more problems after these`);
      throw new ConfigError(file, problems);
    }
    const converted = convertLegacy(legacy.data, env);
    native = converted.native;
    mapPath = converted.pathMap;
    warnings.push(...converted.warnings);
    if (env.REGION && !(env.REGION.toLowerCase() in REGIONS)) {
      problems.push(`${file}: environment REGION: unknown region "${env.REGION}": expected one of ${Object.keys(REGIONS).join(', ')}`);
    }
  }

  const parsed = configSchema.safeParse(native);
  if (!parsed.success) {
    const more = reportZod(parsed.error, problems, (p) => locate(mapPath(p)), (p) => locateKey(mapPath(p)), mapPath);
    if (more > 0) problems.push(`${file}: ${more} more problems after these`);
    throw new ConfigError(file, problems);
  }
  const cfg = parsed.data;
  const region = cfg.region as Region;
  const place = (p: PropertyKey[]): string => `${locate(mapPath(p))}: ${formatPath(mapPath(p))}`;

  // Names and listening ports must be unique.
  const names = new Map<string, number>();
  const listenersByPort = new Map<string, string>();
  cfg.intakes.forEach((intake, i) => {
    const prev = names.get(intake.name.toLowerCase());
    if (prev !== undefined) problems.push(`${place(['intakes', i, 'name'])}: duplicate intake name "${intake.name}" (also intakes[${prev}])`);
    else names.set(intake.name.toLowerCase(), i);
    intake.inputs.forEach((input, j) => {
      if (input.type === 'file') return;
      const proto = input.type === 'udp' ? 'udp' : 'tcp';
      if (input.port === 0) return;
      for (const [k, owner] of listenersByPort) {
        const [p, addr, port] = k.split('|');
        if (p === proto && Number(port) === input.port && addressesOverlap(addr as string, input.address)) {
          problems.push(`${place(['intakes', i, 'inputs', j, 'port'])}: ${proto} port ${input.port} is already used by ${owner}`);
        }
      }
      listenersByPort.set(`${proto}|${input.address}|${input.port}`, `intakes[${i}].inputs[${j}] (intake "${intake.name}")`);
    });
  });

  const readFile = (path: string, where: PropertyKey[], what: string): Buffer | undefined => {
    try {
      return readBounded(resolvePath(base, path), MAX_REFERENCED_BYTES);
    } catch (err) {
      problems.push(`${place(where)}: cannot read ${what} "${path}": ${errorCode(err)}`);
      return undefined;
    }
  };

  const stateDir = env['STATE_DIRECTORY']?.split(':')[0];
  const dataDir = resolvePath(base, cfg.data_dir ?? (stateDir || '/var/lib/intake-relay'));
  const endpoints = {
    syslogHost: cfg.endpoints.syslog_host ?? REGIONS[region].syslogHost,
    syslogPort: cfg.endpoints.syslog_port ?? REGIONS[region].syslogPort,
    httpBase: cfg.endpoints.http_url ?? REGIONS[region].httpBase,
  };
  /** What a component's resolve sees: its place in the file for problems and warnings. */
  const ctxAt = (prefix: PropertyKey[], owner: string): ResolveContext => ({
    base,
    dataDir,
    owner,
    endpoints,
    readFile: (path, key) => readFile(path, [...prefix, ...key], String(key[key.length - 1] ?? 'file')),
    problem: (key, message) => problems.push(`${place([...prefix, ...key])}: ${message}`),
    warn: (message) => warnings.push(`${formatPath(mapPath(prefix))}.${message}`),
  });
  const queuePaths = new Map<string, number>();
  const intakes = cfg.intakes.map((intake, i): ResolvedIntake => {
    let intakeKey = '';
    let keySource = '';
    const hasKey = intake.intake_key !== undefined;
    if (hasKey && intake.intake_key_file !== undefined) {
      problems.push(`${place(['intakes', i, 'intake_key'])}: give intake_key or intake_key_file, not both`);
    } else if (intake.intake_key_file !== undefined) {
      const buf = readFile(intake.intake_key_file, ['intakes', i, 'intake_key_file'], 'intake_key_file');
      intakeKey = buf ? buf.toString('utf8').trim() : '';
      secrets.add(intakeKey);
      keySource = `file ${intake.intake_key_file}`;
      if (buf && intakeKey === '') problems.push(`${place(['intakes', i, 'intake_key_file'])}: the file "${intake.intake_key_file}" is empty`);
    } else if (hasKey) {
      intakeKey = (intake.intake_key ?? '').trim();
      keySource = 'intake_key';
    } else {
      problems.push(`${place(['intakes', i])}: intake "${intake.name}" needs intake_key or intake_key_file`);
    }
    const toEmulator = intakeKey === '' && hasKey && cfg.emulator.when === 'no_intake_key';
    if (intakeKey === '' && hasKey && !toEmulator) {
      problems.push(`${place(['intakes', i, 'intake_key'])}: the intake key is empty (is its environment variable set?)`);
    } else if (intakeKey !== '' && !KEY_RE.test(intakeKey)) {
      const field = intake.intake_key_file !== undefined ? 'intake_key_file' : 'intake_key';
      problems.push(`${place(['intakes', i, field])}: the intake key of "${intake.name}" must be letters and digits only (it has ${intakeKey.length} characters, some of them other)`);
    }
    const inputs = intake.inputs.map((input, j): ResolvedInput => {
      if (input.type === 'file') return resolveFileInput(input, base, (k, msg) => problems.push(`${place(['intakes', i, 'inputs', j, ...k])}: ${msg}`));
      let tlsFiles: TlsFiles | undefined;
      if (input.type === 'tcp' && input.tls) {
        const p = ['intakes', i, 'inputs', j, 'tls'];
        const cert = readFile(input.tls.cert_file, [...p, 'cert_file'], 'cert_file');
        const key = readFile(input.tls.key_file, [...p, 'key_file'], 'key_file');
        const ca = input.tls.client_ca_file ? readFile(input.tls.client_ca_file, [...p, 'client_ca_file'], 'client_ca_file') : undefined;
        if (cert && key) tlsFiles = { cert, key, ca };
      }
      const kind = input.type === 'tcp' && input.tls ? 'tls' : input.type;
      return { ...input, label: input.name ?? `${kind}/${input.port}`, tlsFiles };
    });
    const labels = new Set<string>();
    inputs.forEach((input, j) => {
      if (labels.has(input.label)) problems.push(`${place(['intakes', i, 'inputs', j])}: two inputs of "${intake.name}" are named "${input.label}": set name on one`);
      labels.add(input.label);
    });
    const output = outputOf(intake.output).resolve(intake.output, ctxAt(['intakes', i, 'output'], intake.name));
    const { intake_key: _k, intake_key_file: _f, ...rest } = intake;
    const queue: ResolvedQueue = rest.queue.type === 'disk'
      ? { ...rest.queue, path: resolvePath(base, rest.queue.path ?? join(dataDir, 'queues', fileSafe(intake.name))) }
      : rest.queue;
    if (queue.type === 'disk') {
      const other = queuePaths.get(queue.path);
      if (other !== undefined) problems.push(`${place(['intakes', i, 'queue'])}: the disk queue directory ${queue.path} is also intakes[${other}]'s`);
      queuePaths.set(queue.path, i);
    }
    return { ...rest, queue, intakeKey, keySource, inputs, output, toEmulator };
  });

  const tlsOf = (tls: { cert_file: string; key_file: string; client_ca_file?: string | undefined } | undefined, p: PropertyKey[]): TlsFiles | undefined => {
    if (!tls) return undefined;
    const cert = readFile(tls.cert_file, [...p, 'cert_file'], 'cert_file');
    const key = readFile(tls.key_file, [...p, 'key_file'], 'key_file');
    const ca = tls.client_ca_file ? readFile(tls.client_ca_file, [...p, 'client_ca_file'], 'client_ca_file') : undefined;
    return cert && key ? { cert, key, ca } : undefined;
  };
  const labels = new Set<string>();
  const intakeIndex = (name: string): number => cfg.intakes.findIndex((x) => x.name.toLowerCase() === name.toLowerCase());
  const listeners = cfg.listeners.map((l, i): ResolvedListener => {
    const p: PropertyKey[] = ['listeners', i];
    const kind = l.type === 'http' ? (l.tls ? 'https' : 'http') : l.type === 'tcp' && l.tls ? 'tls' : l.type;
    const label = l.name ?? `${kind}/${l.port}`;
    if (labels.has(label)) problems.push(`${place([...p])}: two listeners are named "${label}": set name on one`);
    labels.add(label);
    const proto = l.type === 'udp' ? 'udp' : 'tcp';
    if (l.port !== 0) {
      for (const [k, owner] of listenersByPort) {
        const [pr, addr, port] = k.split('|');
        if (pr === proto && Number(port) === l.port && addressesOverlap(addr as string, l.address)) {
          problems.push(`${place([...p, 'port'])}: ${proto} port ${l.port} is already used by ${owner}`);
        }
      }
      listenersByPort.set(`${proto}|${l.address}|${l.port}`, `listeners[${i}]`);
    }
    if (l.type !== 'http') {
      const { problems: routeProblems } = compileRoutes(l.routes, l.default, intakeIndex);
      for (const rp of routeProblems) problems.push(`${place([...p, ...rp.path])}: ${rp.message}`);
      return { ...l, label, tlsFiles: l.type === 'tcp' ? tlsOf(l.tls, [...p, 'tls']) : undefined };
    }
    (l.intakes ?? []).forEach((name, j) => {
      if (intakeIndex(name) < 0) problems.push(`${place([...p, 'intakes', j])}: no intake is named "${name}"`);
    });
    // Parsing JSON takes about twice its text on top of it; gzip holds raw and inflated at once.
    const needed = Math.max(3 * l.max_body_bytes, l.max_body_bytes + l.max_decompressed_bytes, 3 * l.max_decompressed_bytes);
    if (l.max_inflight_bytes < needed) {
      warnings.push(`listeners[${i}].max_inflight_bytes (${l.max_inflight_bytes}) cannot hold one JSON body at max_body_bytes and max_decompressed_bytes (about ${needed}): such bodies get 413. Raise it, or lower those limits (line bodies need no parsing).`);
    }
    const paths = new Set<string>();
    l.paths.forEach((r, j) => {
      if (intakeIndex(r.intake) < 0) problems.push(`${place([...p, 'paths', j, 'intake'])}: no intake is named "${r.intake}"`);
      if (INTAKE_API_PATHS.includes(r.path)) problems.push(`${place([...p, 'paths', j, 'path'])}: ${r.path} is the intake API's own path`);
      if (paths.has(r.path)) problems.push(`${place([...p, 'paths', j, 'path'])}: path ${r.path} is used twice`);
      paths.add(r.path);
    });
    return { ...l, label, tlsFiles: tlsOf(l.tls, [...p, 'tls']) };
  });

  if (cfg.stats && !intakes.some((i) => i.name.toLowerCase() === cfg.stats?.intake.toLowerCase())) {
    problems.push(`${place(['stats', 'intake'])}: no intake is named "${cfg.stats.intake}"`);
  }
  for (const intake of intakes) {
    if (intake.name.toLowerCase() === cfg.stats?.intake.toLowerCase()) continue;
    if (intake.inputs.length === 0 && feedingListeners(listeners, intake.name).length === 0 && format === 'native') {
      warnings.push(`intake "${intake.name}" has no inputs.`);
    }
  }

  if (problems.length > 0) throw new ConfigError(file, problems);
  return deepFreeze({ ...cfg, region, file, format, dataDir, intakes, listeners, warnings: warnings.map(clean) });
}

/** Values of secret fields (intake_key, bearer_token, ...), after ${VAR} substitution. */
function collectSecrets(doc: Document, secrets: SecretScrubber): void {
  visit(doc, {
    Pair(_key, pair) {
      if (isScalar(pair.key) && isSecretField(pair.key.value) && isScalar(pair.value) && typeof pair.value.value === 'string') secrets.add(pair.value.value);
    },
  });
}

function errorCode(err: unknown): string {
  const code = typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
  return typeof code === 'string' ? code : 'unreadable';
}

/** A name as part of a file name: letters, digits, . _ - kept, anything else %-escaped. */
export function fileSafe(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

function resolveFileInput(input: FileInputConfig, base: string, problem: (key: PropertyKey[], msg: string) => void): ResolvedFileInput {
  const paths = input.paths.map((p) => resolvePath(base, p));
  const exclude = input.exclude.map((p) => (p.includes('/') ? resolvePath(base, p) : p));
  if (input.multiline) {
    try {
      new RegExp(input.multiline.start_pattern);
    } catch (err) {
      problem(['multiline', 'start_pattern'], `not a valid regular expression: ${(err as Error).message}`);
    }
  }
  return { ...input, paths, exclude, label: input.name ?? `file:${input.paths[0]}` };
}

/** Labels of the listeners that can hand events to the intake `name` (by key, path or route). */
export function feedingListeners(listeners: readonly ResolvedListener[], name: string): string[] {
  const me = name.toLowerCase();
  return listeners
    .filter((l) =>
      l.type === 'http'
        ? !l.intakes || l.intakes.some((n) => n.toLowerCase() === me) || l.paths.some((p) => p.intake.toLowerCase() === me)
        : l.default.toLowerCase() === me || l.routes.some((r) => r.intake?.toLowerCase() === me),
    )
    .map((l) => l.label);
}

function reportZod(
  error: ZodError,
  problems: string[],
  locate: (p: PropertyKey[]) => string,
  locateKey: (p: PropertyKey[]) => string,
  mapPath: (p: readonly PropertyKey[]) => PropertyKey[],
): number {
  // Locating a key scans its mapping: a flood of unknown keys is reported in part, in linear time.
  let omitted = 0;
  const add = (problem: () => string): void => {
    if (problems.length < MAX_PROBLEMS) problems.push(problem());
    else omitted++;
  };
  for (const issue of error.issues) {
    const path = [...issue.path];
    let message = issue.message;
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const p = [...path, key];
        // A mangled line can make a value (a key, a token) into a key name: only names shaped like ours are echoed.
        add(() => (KEY_NAME_RE.test(key)
          ? `${locateKey(p)}: ${formatPath(mapPath(p))}: unknown key "${key}"`
          : `${locateKey(p)}: ${formatPath(mapPath(path)) || '(top level)'}: an unknown key (not shown: it looks like a value, not a key name)`));
      }
      continue;
    }
    if (issue.code === 'invalid_union' && 'discriminator' in issue) message = `${message} (${String(issue.discriminator)} must be one of the known types)`;
    add(() => `${locate(path)}: ${formatPath(mapPath(path)) || '(top level)'}: ${message}`);
  }
  return omitted;
}

export function formatPath(path: readonly PropertyKey[]): string {
  let s = '';
  for (const p of path) s += typeof p === 'number' ? `[${p}]` : s ? `.${String(p)}` : String(p);
  return s;
}

/**
 * Replaces ${VAR} and ${VAR:-default} in string scalars ($${ is a literal "${"). A whole plain
 * scalar that was one reference is re-read as YAML, so `port: ${PORT}` gives a number.
 */
function substituteEnv(doc: Document, env: NodeJS.ProcessEnv, problem: (node: Node, path: PropertyKey[], msg: string) => void): void {
  visit(doc, {
    Scalar(_key, node: Scalar, ancestors) {
      if (typeof node.value !== 'string' || !node.value.includes('${')) return;
      const path = pathOf(ancestors, node);
      const source = node.value;
      const replaced = source.replace(ENV_RE, (m, name: string | undefined, dflt: string | undefined) => {
        if (m === '$${') return '${';
        const v = env[name as string];
        if (v !== undefined && v !== '') return v;
        if (dflt !== undefined) return dflt;
        problem(node, path, `environment variable ${name} is not set`);
        return '';
      });
      const whole = /^\$\{[^}]+\}$/.test(source) && node.type === 'PLAIN';
      node.value = whole && /^(-?\d+(\.\d+)?|true|false)$/.test(replaced) ? JSON.parse(replaced) : replaced;
    },
  });
}

function pathOf(ancestors: readonly unknown[], leaf: unknown): PropertyKey[] {
  const path: PropertyKey[] = [];
  const chain = [...ancestors, leaf];
  for (let i = 1; i < chain.length; i++) {
    const parent = chain[i - 1];
    const child = chain[i];
    if (parent && typeof parent === 'object' && 'items' in parent && Array.isArray(parent.items)) {
      const idx = parent.items.indexOf(child);
      if (idx >= 0 && !isPair(child)) path.push(idx);
    } else if (isPair(parent) && parent.value === child && isScalar(parent.key)) {
      path.push(String(parent.key.value));
    }
  }
  return path;
}

function isPair(x: unknown): x is { key: unknown; value: unknown } {
  return typeof x === 'object' && x !== null && 'key' in x && 'value' in x;
}

function addressesOverlap(a: string, b: string): boolean {
  const any = (x: string): boolean => x === '0.0.0.0' || x === '::';
  return a === b || any(a) || any(b);
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Buffer.isBuffer(o) && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}
