// From a configuration that passed the schema to the one the daemon runs: the region's endpoints,
// data_dir, each intake's key, inputs, output and queue, the shared listeners. Each component
// resolves its own part through its registry definition (defaults, files read, its own checks);
// what spans components is checked here once: unique names and labels, no two inputs on one port,
// no two disk queues in one directory, intakes that nothing feeds.

import { join, resolve as resolvePath } from 'node:path';
import type { Listening, ResolveContext } from '../core/component.ts';
import { fileSafe, workerCount } from '../core/config-values.ts';
import { inputOf, type ResolvedInput, type ResolvedListener } from '../inputs/registry.ts';
import { outputOf, type ResolvedOutput } from '../outputs/registry.ts';
import { REGIONS, type Region } from './regions.ts';
import { diskMemoryBytesOf, memoryShares, mibText, queueBytesOf, type MemoryShares } from '../core/memory-budget.ts';
import type { DiskQueueConfig, IntakeConfig, RawConfig } from './schema.ts';

/** A queue with its bounds filled in (from memory_bytes where the file does not set them). */
export type ResolvedQueue =
  | (Exclude<IntakeConfig['queue'], { type: 'disk' }> & { readonly max_bytes: number })
  | (DiskQueueConfig & { readonly path: string; readonly memory_bytes: number });

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
  /** Its share of memory_bytes (the emulator's output takes its resend window from it). */
  readonly memory: MemoryShares;
}

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

/** What resolving needs from the loader: where things are in the file, and where problems go. */
export interface Resolving {
  readonly file: string;
  readonly base: string;
  readonly env: NodeJS.ProcessEnv;
  readonly format: Config['format'];
  /** "file:line:col: path" for a path of the (native) configuration. */
  place(path: readonly PropertyKey[]): string;
  /** The path as the user wrote it (the official forwarder's intakes.yaml maps to native paths). */
  written(path: readonly PropertyKey[]): string;
  /** A file the configuration names, read whole (capped); undefined once a problem is reported. */
  readFile(path: string, where: readonly PropertyKey[], what: string): Buffer | undefined;
  /** A secret found while resolving (a key file's content): scrubbed from every message. */
  secret(value: string): void;
  /** The environment variables whose values made the value at this path (none when it was written out). */
  fromEnv(path: readonly PropertyKey[]): readonly string[];
  readonly problems: string[];
  readonly warnings: string[];
}

const KEY_RE = /^[A-Za-z0-9]+$/;

/**
 * The validated file made into the configuration the daemon runs: each intake's key, endpoint,
 * inputs, queue and output resolved, in the file's order (its problems reported with their
 * places). A little over 80 lines: one pass over the intakes, each step a call.
 */
export function resolveConfig(cfg: RawConfig, r: Resolving): Omit<Config, 'warnings'> {
  const { problems, place } = r;
  const region = cfg.region as Region;
  const intakeIndex = (name: string): number => cfg.intakes.findIndex((x) => x.name.toLowerCase() === name.toLowerCase());
  const stateDir = r.env['STATE_DIRECTORY']?.split(':')[0];
  const dataDir = resolvePath(r.base, cfg.data_dir ?? (stateDir || '/var/lib/intake-relay'));
  const endpoints = { region: { intakeHost: REGIONS[region].syslogHost, httpBase: REGIONS[region].httpBase }, overrides: cfg.endpoints };
  const memory = memoryShares(cfg.memory_bytes, cfg.intakes.length, workerCount(cfg.workers));
  /** What a component's resolve sees: its own place in the file for problems and warnings. */
  const ctxAt = (prefix: PropertyKey[], owner: string): ResolveContext => ({
    base: r.base,
    dataDir,
    owner,
    endpoints,
    readFile: (path, key) => r.readFile(path, [...prefix, ...key], String(key[key.length - 1] ?? 'file')),
    problem: (key, message) => problems.push(`${place([...prefix, ...key])}: ${message}`),
    warn: (message) => r.warnings.push(`${r.written(prefix)}.${message}`),
    intakeIndex,
    memory,
  });

  // Names and listening ports must be unique.
  const ports = new PortBook(problems);
  const names = new Map<string, number>();
  cfg.intakes.forEach((intake, i) => {
    const prev = names.get(intake.name.toLowerCase());
    if (prev !== undefined) problems.push(`${place(['intakes', i, 'name'])}: duplicate intake name "${intake.name}" (also intakes[${prev}])`);
    else names.set(intake.name.toLowerCase(), i);
    intake.inputs.forEach((input, j) => {
      const l = inputOf(input).listening(input);
      if (l) ports.take(l, place(['intakes', i, 'inputs', j, 'port']), `intakes[${i}].inputs[${j}] (intake "${intake.name}")`);
    });
  });

  const queuePaths = new Map<string, number>();
  const intakes = cfg.intakes.map((intake, i): ResolvedIntake => {
    const { intakeKey, keySource, toEmulator } = resolveKey(intake, i, cfg.emulator.when, r);
    const inputs = intake.inputs.map((input, j) => inputOf(input).resolve(input, ctxAt(['intakes', i, 'inputs', j], intake.name)) as ResolvedInput);
    const labels = new Set<string>();
    inputs.forEach((input, j) => {
      if (labels.has(input.label)) problems.push(`${place(['intakes', i, 'inputs', j])}: two inputs of "${intake.name}" are named "${input.label}": set name on one`);
      labels.add(input.label);
    });
    const output = outputOf(intake.output).resolve(intake.output, ctxAt(['intakes', i, 'output'], intake.name));
    const { intake_key: _k, intake_key_file: _f, ...rest } = intake;
    const queue: ResolvedQueue = rest.queue.type === 'disk'
      ? { ...rest.queue, path: resolvePath(r.base, rest.queue.path ?? join(dataDir, 'queues', fileSafe(intake.name))), memory_bytes: rest.queue.memory_bytes ?? diskMemoryBytesOf(memory.intakeBytes) }
      : { ...rest.queue, max_bytes: rest.queue.max_bytes ?? queueBytesOf(memory.intakeBytes) };
    overBudget(rest.queue, memory.intakeBytes, i, r);
    if (queue.type === 'disk') {
      const other = queuePaths.get(queue.path);
      if (other !== undefined) problems.push(`${place(['intakes', i, 'queue'])}: the disk queue directory ${queue.path} is also intakes[${other}]'s`);
      queuePaths.set(queue.path, i);
    }
    return { ...rest, queue, intakeKey, keySource, inputs, output, toEmulator, memory };
  });

  const labels = new Set<string>();
  const listeners = cfg.listeners.map((l, i): ResolvedListener => {
    const p: PropertyKey[] = ['listeners', i];
    const def = inputOf(l);
    const resolved = def.resolve(l, ctxAt(p, '')) as ResolvedListener;
    if (labels.has(resolved.label)) problems.push(`${place(p)}: two listeners are named "${resolved.label}": set name on one`);
    labels.add(resolved.label);
    const listening = def.listening(resolved);
    if (listening) ports.take(listening, place([...p, 'port']), `listeners[${i}]`);
    return resolved;
  });

  if (cfg.stats && !intakes.some((i) => i.name.toLowerCase() === cfg.stats?.intake.toLowerCase())) {
    problems.push(`${place(['stats', 'intake'])}: no intake is named "${cfg.stats.intake}"`);
  }
  for (const intake of intakes) {
    if (intake.name.toLowerCase() === cfg.stats?.intake.toLowerCase()) continue;
    if (intake.inputs.length === 0 && feedingListeners(listeners, intake.name).length === 0 && r.format === 'native') {
      r.warnings.push(`intake "${intake.name}" has no inputs.`);
    }
  }
  return { ...cfg, region, file: r.file, format: r.format, dataDir, intakes, listeners };
}

/**
 * A queue bound set by hand above the intake's share of memory_bytes: said at load, since a full
 * queue then takes more memory than the relay was given (a memory queue's events 2 to 3 times their
 * bytes). The official forwarder's layout sizes its queues from its own variables: not said there.
 */
function overBudget(q: IntakeConfig['queue'], share: number, i: number, r: Resolving): void {
  if (r.format !== 'native') return;
  const [key, value] = q.type === 'disk' ? ['memory_bytes', q.memory_bytes] : ['max_bytes', q.max_bytes];
  if (value === undefined || value <= share) return;
  r.warnings.push(`${r.written(['intakes', i, 'queue'])}.${key} (${mibText(value)}) is more than this intake's share of memory_bytes (${mibText(share)}): when the queue fills, the relay uses more memory than memory_bytes says. Raise memory_bytes or leave ${key} out to have it derived.`);
}

/** The intake key, from intake_key or intake_key_file; problems for a missing, empty or malformed one. */
function resolveKey(intake: IntakeConfig, i: number, emulator: 'never' | 'no_intake_key', r: Resolving): { intakeKey: string; keySource: string; toEmulator: boolean } {
  const { problems, place } = r;
  let intakeKey = '';
  let keySource = '';
  const hasKey = intake.intake_key !== undefined;
  if (hasKey && intake.intake_key_file !== undefined) {
    problems.push(`${place(['intakes', i, 'intake_key'])}: give intake_key or intake_key_file, not both`);
  } else if (intake.intake_key_file !== undefined) {
    const buf = r.readFile(intake.intake_key_file, ['intakes', i, 'intake_key_file'], 'intake_key_file');
    intakeKey = buf ? buf.toString('utf8').trim() : '';
    r.secret(intakeKey);
    keySource = `file ${intake.intake_key_file}`;
    if (buf && intakeKey === '') problems.push(`${place(['intakes', i, 'intake_key_file'])}: the file "${intake.intake_key_file}" is empty`);
  } else if (hasKey) {
    intakeKey = (intake.intake_key ?? '').trim();
    keySource = 'intake_key';
  } else {
    problems.push(`${place(['intakes', i])}: intake "${intake.name}" needs intake_key or intake_key_file`);
  }
  const toEmulator = intakeKey === '' && hasKey && emulator === 'no_intake_key';
  if (intakeKey === '' && hasKey && !toEmulator) {
    problems.push(`${place(['intakes', i, 'intake_key'])}: ${emptyKey(intake.name, i, r)}`);
  } else if (intakeKey !== '' && !KEY_RE.test(intakeKey)) {
    const field = intake.intake_key_file !== undefined ? 'intake_key_file' : 'intake_key';
    problems.push(`${place(['intakes', i, field])}: the intake key of "${intake.name}" must be letters and digits only (it has ${intakeKey.length} characters, some of them other)`);
  }
  return { intakeKey, keySource, toEmulator };
}

/**
 * One line that says what to set: the key's variable, or the switch that sends the intake to the
 * local emulator instead (the Docker image's configuration takes it from INTAKE_RELAY_EMULATOR).
 */
function emptyKey(name: string, i: number, r: Resolving): string {
  const vars = r.fromEnv(['intakes', i, 'intake_key']);
  const why = vars.length > 0 ? `environment variable ${vars.join(', ')} is not set or empty` : 'intake_key is empty';
  if (r.format !== 'native') return `intake "${name}" has no key (${why})`;
  const switchVar = r.fromEnv(['emulator', 'when'])[0];
  const emulator = switchVar ? `${switchVar}=no_intake_key` : '"emulator: { when: no_intake_key }"';
  return `intake "${name}" has no key (${why}): set it, or ${emulator} to forward to a local intake emulator instead`;
}

/** Ports taken so far: a second input on an overlapping address and the same port is a problem. */
class PortBook {
  readonly #taken: { readonly at: Listening; readonly owner: string }[] = [];
  readonly #problems: string[];

  constructor(problems: string[]) {
    this.#problems = problems;
  }

  take(l: Listening, place: string, owner: string): void {
    if (l.port === 0) return;
    for (const t of this.#taken) {
      if (t.at.proto === l.proto && t.at.port === l.port && addressesOverlap(t.at.address, l.address)) {
        this.#problems.push(`${place}: ${l.proto} port ${l.port} is already used by ${t.owner}`);
      }
    }
    this.#taken.push({ at: l, owner });
  }
}

function addressesOverlap(a: string, b: string): boolean {
  const any = (x: string): boolean => x === '0.0.0.0' || x === '::';
  return a === b || any(a) || any(b);
}

/** Labels of the listeners that can hand events to the intake `name` (by key, path or route). */
export function feedingListeners(listeners: readonly ResolvedListener[], name: string): string[] {
  return listeners.filter((l) => inputOf(l).feeds(l, name)).map((l) => l.label);
}
