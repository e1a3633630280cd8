// Loads a configuration file: YAML with positions, ${ENV} substitution, the native schema or the
// official forwarder's intakes.yaml, cross-field checks, secrets and certificates read from their
// files. Every problem is collected and reported at once as "file:line:col: path: message"; the
// result is frozen. Every failure is a ConfigError, and nothing it or a warning says carries a
// secret: problems echo no parser's text, and pass through a scrubber of every secret known.

import { totalmem } from 'node:os';
import { resolve as resolvePath, dirname } from 'node:path';
import { isMap, isScalar, visit, type Document, type Node, type Scalar } from 'yaml';
import type { ZodError, ZodType } from 'zod';
import { inOurWords, unknownKey, unknownKind } from './issue-words.ts';
import { configSchema, currentConfigSchema } from './schema.ts';
import { resolveConfig, type Config } from './resolve.ts';
import { convertLegacy, legacySchema, looksLegacy } from './legacy.ts';
import { legacyMetrics } from './legacy-env.ts';
import { checkQueueDir, type LegacyEnv } from './legacy-env.ts';
import { SecretScrubber, isSecretField } from './redact.ts';
import { MAX_CONFIG_BYTES, readBounded } from './read-bounded.ts';
import { readYaml, yamlValue } from './yaml-source.ts';
import { defaultMemoryBytes, LIMIT_SHARE, MIN_MEMORY_BYTES, mibText } from '../core/memory-budget.ts';

import { ConfigError, EX_CONFIG } from './errors.ts';

export { ConfigError, EX_CONFIG };

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

/**
 * Parses a configuration file's content (bytes are checked to be UTF-8); `file` names it in
 * problems. `memoryLimit`: the process's memory limit in bytes (process.constrainedMemory(); 0 when
 * none), for memory_bytes's default.
 */
export function parseConfig(input: string | Uint8Array, file: string, env: NodeJS.ProcessEnv = process.env, memoryLimit = process.constrainedMemory()): Config {
  const secrets = new SecretScrubber(env);
  // The file name is the operator's own argument, left as it is.
  const clean = (p: string): string => (p.startsWith(file) ? file + secrets.scrub(p.slice(file.length)) : secrets.scrub(p));
  try {
    return parse(input, file, env, secrets, clean, memoryLimit);
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(file, err.problems.map(clean));
    // A loader bug met by this file: still a configuration error, and no message that may quote it.
    throw new ConfigError(file, [`${file}: the configuration could not be loaded (internal error: ${err instanceof Error ? err.name : typeof err})`]);
  }
}

function parse(input: string | Uint8Array, file: string, env: NodeJS.ProcessEnv, secrets: SecretScrubber, clean: (p: string) => string, memoryLimit: number): Config {
  const problems: string[] = [];
  const source = readYaml(input, file);
  if (!source.ok) throw new ConfigError(file, source.problems);
  const { doc, at } = source;

  // Which variables made each value: a problem with the value can name the variable to set.
  const envNames = new Map<string, readonly string[]>();
  // An intake key's unset variable: reported here while the file has other problems, and left to
  // the key's own check once resolving starts, which names the variable and what else to do
  // (the emulator switch) in one line instead of two.
  const keyEnvProblems = new Set<string>();
  const isKey = (path: readonly PropertyKey[]): boolean => path.length === 3 && path[0] === 'intakes' && path[2] === 'intake_key';
  substituteEnv(
    doc,
    env,
    (node, path, msg) => {
      const p = `${at(node)}: ${formatPath(path)}: ${msg}`;
      problems.push(p);
      if (isKey(path)) keyEnvProblems.add(p);
    },
    (path, names) => envNames.set(formatPath(path), names),
  );
  collectSecrets(doc, secrets);
  const js = yamlValue(doc, file, at);
  if (!js.ok) throw new ConfigError(file, js.problems);
  const raw: unknown = js.value;
  const base = dirname(resolvePath(file));
  const { locate, locateKey } = locators(doc, at, file);

  const warnings: string[] = [];
  const { native, format, mapPath, legacyEnv } = asNative(raw, env, file, problems, warnings, locate, locateKey);
  budgetFromLimit(native, memoryLimit, warnings);

  const schema = currentConfigSchema();
  const parsed = schema.safeParse(native);
  if (!parsed.success) {
    const more = reportZod(schema, parsed.error, problems, (p) => locate(mapPath(p)), (p) => locateKey(mapPath(p)), mapPath);
    if (more > 0) problems.push(`${file}: ${more} more problems after these`);
    throw new ConfigError(file, problems);
  }
  const cfg = parsed.data;
  const place = (p: readonly PropertyKey[]): string => `${locate(mapPath(p))}: ${formatPath(mapPath(p))}`;
  const readFile = (path: string, where: readonly PropertyKey[], what: string): Buffer | undefined => {
    try {
      return readBounded(resolvePath(base, path), MAX_REFERENCED_BYTES);
    } catch (err) {
      problems.push(`${place(where)}: cannot read ${what} "${path}": ${errorCode(err)}`);
      return undefined;
    }
  };
  for (let i = problems.length - 1; i >= 0; i--) if (keyEnvProblems.has(problems[i] as string)) problems.splice(i, 1);
  const resolved = resolveConfig(cfg, {
    file,
    base,
    env,
    format,
    place,
    written: (p) => formatPath(mapPath(p)),
    readFile,
    secret: (v) => secrets.add(v),
    fromEnv: (p) => envNames.get(formatPath(mapPath(p))) ?? [],
    problems,
    warnings,
  });
  const diskQueue = resolved.intakes.find((i) => i.queue.type === 'disk')?.queue;
  if (legacyEnv && diskQueue?.type === 'disk') {
    // All of them are <data_dir>/queues/<name>.
    const envProblems: string[] = [];
    checkQueueDir(dirname(diskQueue.path), legacyEnv, envProblems, warnings);
    problems.push(...envProblems.map((p) => `${file}: ${p}`));
  }
  if (problems.length > 0) throw new ConfigError(file, problems);
  return deepFreeze({ ...resolved, warnings: warnings.map(clean) });
}

/**
 * memory_bytes where the file does not set it and the process has a memory limit lower than the
 * default allows for (a container's, a unit's MemoryMax): two thirds of it (memory-budget.ts),
 * said among the warnings, since it changes every bound derived from it.
 */
function budgetFromLimit(native: unknown, memoryLimit: number, warnings: string[]): void {
  if (typeof native !== 'object' || native === null || Array.isArray(native) || 'memory_bytes' in native) return;
  const { bytes, limitBytes } = defaultMemoryBytes(memoryLimit, totalmem());
  if (limitBytes === undefined) return;
  (native as Record<string, unknown>)['memory_bytes'] = bytes;
  warnings.push(limitBytes * LIMIT_SHARE >= MIN_MEMORY_BYTES
    ? `memory_bytes: not set; ${mibText(bytes)}, two thirds of this process's memory limit (${mibText(limitBytes)}): under a flood the relay's peaks pass its budget, and the limit leaves them room. Set memory_bytes to choose another.`
    : `memory_bytes: not set; ${mibText(bytes)}, the least, although this process's memory limit (${mibText(limitBytes)}) leaves less than a third above it: under a flood at full speed it has little room (measured under a 64 MiB limit: no flood was killed, but 2 UDP floods of 7 at 100,000 datagrams/s lost 0.1% and 2% of them, counted). Give it ${mibText(Math.ceil(MIN_MEMORY_BYTES / LIMIT_SHARE))} or more.`);
}

/**
 * The document as a native configuration: itself, or the official forwarder's intakes.yaml
 * converted (its problems reported with the positions of its own keys), with the map from a
 * native path back to the path written in the file.
 */
function asNative(
  raw: unknown,
  env: NodeJS.ProcessEnv,
  file: string,
  problems: string[],
  warnings: string[],
  locate: (p: readonly PropertyKey[]) => string,
  locateKey: (p: readonly PropertyKey[]) => string,
): { native: unknown; format: Config['format']; mapPath: (p: readonly PropertyKey[]) => PropertyKey[]; legacyEnv: LegacyEnv | undefined } {
  if (!looksLegacy(raw)) return { native: raw, format: 'native', mapPath: (p) => [...p], legacyEnv: undefined };
  const legacy = legacySchema.safeParse(raw);
  if (!legacy.success) {
    const more = reportZod(legacySchema, legacy.error, problems, locate, locateKey, (p) => [...p]);
    if (more > 0) problems.push(`${file}: ${more} more problems after these`);
    throw new ConfigError(file, problems);
  }
  const converted = convertLegacy(legacy.data, env);
  warnings.push(...converted.warnings);
  problems.push(...converted.problems.map((p) => `${file}: ${p}`));
  return { native: converted.native, format: 'official-intakes-yaml', mapPath: converted.pathMap, legacyEnv: converted.env };
}

/** Where a path of the document is written ("file:line:col"); an unknown key where the key itself is. */
function locators(doc: Document, at: (node: Node) => string, file: string) {
  const locate = (path: readonly PropertyKey[]): string => {
    // The deepest node that exists on the path (a missing key is reported at its parent).
    for (let n = path.length; n >= 0; n--) {
      const node = doc.getIn(path.slice(0, n) as unknown[], true) as Node | undefined;
      if (node && typeof node === 'object' && 'range' in node) return at(node);
    }
    return file;
  };
  const locateKey = (path: readonly PropertyKey[]): string => {
    const parent = doc.getIn(path.slice(0, -1) as unknown[], true);
    if (isMap(parent)) {
      const pair = parent.items.find((p) => isScalar(p.key) && p.key.value === path[path.length - 1]);
      if (pair && isScalar(pair.key)) return at(pair.key);
    }
    return locate(path);
  };
  return { locate, locateKey };
}

/**
 * Only the operations endpoint's settings (`metrics:`) of a configuration, for the commands that
 * talk to a running daemon (healthcheck, tap): the rest of the file is not checked, so they need
 * neither the intakes' keys nor read access to their TLS files. The official forwarder's
 * intakes.yaml has none: the defaults.
 */
export function loadMetricsSettings(file: string, env: NodeJS.ProcessEnv = process.env): Config['metrics'] {
  let bytes: Buffer;
  try {
    bytes = readBounded(file, MAX_CONFIG_BYTES);
  } catch (err) {
    const code = errorCode(err);
    throw new ConfigError(file, [`${file}: cannot read the file (${READ_ERRORS[code] ? `${code}: ${READ_ERRORS[code]}` : code})`]);
  }
  const source = readYaml(bytes, file);
  if (!source.ok) throw new ConfigError(file, source.problems);
  const { doc, at } = source;
  const problems: string[] = [];
  substituteEnv(doc, env, (node, path, msg) => {
    if (path[0] === 'metrics') problems.push(`${at(node)}: ${formatPath(path)}: ${msg}`);
  }, () => {});
  const js = yamlValue(doc, file, at);
  if (!js.ok) throw new ConfigError(file, js.problems);
  const raw = js.value;
  // An official intakes.yaml has no metrics section: its environment says (as for `run`).
  const metrics = looksLegacy(raw) ? legacyMetrics(env, problems) : typeof raw === 'object' && raw !== null && 'metrics' in raw ? raw.metrics : undefined;
  const parsed = configSchema.shape.metrics.safeParse(metrics);
  if (!parsed.success) {
    const { locate, locateKey } = locators(doc, at, file);
    reportZod(configSchema.shape.metrics, parsed.error, problems, (p) => locate(['metrics', ...p]), (p) => locateKey(['metrics', ...p]), (p) => ['metrics', ...p]);
  }
  if (problems.length > 0 || !parsed.success) throw new ConfigError(file, problems);
  return parsed.data;
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




function reportZod(
  schema: ZodType,
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
    let message = inOurWords(issue);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const p = [...path, key];
        // A mangled line can make a value (a key, a token) into a key name: only names shaped like ours are echoed.
        add(() => (KEY_NAME_RE.test(key)
          ? `${locateKey(p)}: ${formatPath(mapPath(p))}: ${unknownKey(schema, path, key)}`
          : `${locateKey(p)}: ${formatPath(mapPath(path)) || '(top level)'}: an unknown key (not shown: it looks like a value, not a key name)`));
      }
      continue;
    }
    if (issue.code === 'invalid_union' && 'discriminator' in issue) message = unknownKind(schema, path, String(issue.discriminator));
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
function substituteEnv(
  doc: Document,
  env: NodeJS.ProcessEnv,
  problem: (node: Node, path: PropertyKey[], msg: string) => void,
  used: (path: PropertyKey[], names: readonly string[]) => void,
): void {
  visit(doc, {
    Scalar(_key, node: Scalar, ancestors) {
      if (typeof node.value !== 'string' || !node.value.includes('${')) return;
      const path = pathOf(ancestors, node);
      const source = node.value;
      const names: string[] = [];
      const replaced = source.replace(ENV_RE, (m, name: string | undefined, dflt: string | undefined) => {
        if (m === '$${') return '${';
        names.push(name as string);
        const v = env[name as string];
        if (v !== undefined && v !== '') return v;
        if (dflt !== undefined) return dflt;
        problem(node, path, `environment variable ${name} is not set`);
        return '';
      });
      if (names.length > 0) used(path, names);
      const whole = /^\$\{[^}]+\}$/.test(source) && node.type === 'PLAIN';
      node.value = whole ? typed(replaced) : replaced;
    },
  });
}

/**
 * A whole-scalar reference keeps the type its value would have in YAML (`port: ${PORT}` is a
 * number), but only where the number writes back as the same text: 0123, 1e3 or a 32-digit key
 * stay text, so nothing is lost or misread.
 */
function typed(value: string): string | number | boolean {
  if (value === 'true' || value === 'false') return value === 'true';
  if (!/^-?\d+(\.\d+)?$/.test(value)) return value;
  const n = Number(value);
  return String(n) === value ? n : value;
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


function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Buffer.isBuffer(o) && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}
