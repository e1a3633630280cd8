// The redacted summary `validate` prints for a valid configuration: what will listen where and go
// where. Keys appear only as "set (N characters, from ...)".

import { stringify } from 'yaml';
import { feedingListeners, type Config } from '../config/resolve.ts';
import { inputOf } from '../inputs/registry.ts';
import { outputOf } from '../outputs/registry.ts';
import { workerConfig, workerCount, workerForwards } from '../pipeline/worker-plan.ts';
import { stateDirs } from '../pipeline/state-dirs.ts';
import { holderText, lockMethod, stateHolder } from '../platform/state-lock.ts';
import { mibText } from '../core/memory-budget.ts';
import { hostname } from 'node:os';
import { resolve } from 'node:path';

export function summarize(cfg: Config): string {
  const lines: string[] = [];
  lines.push(`${cfg.file}: valid (${cfg.format === 'native' ? 'intake-relay format' : 'official forwarder intakes.yaml'})`);
  // With ENDPOINT (REGION=OTHER) the region says little on its own: the intake host is the endpoints'.
  const host = cfg.endpoints.syslog_host ?? cfg.endpoints.relp_host;
  lines.push(`region: ${cfg.region}${host ? ` (intake host set by endpoints: ${host})` : ''}`);
  // Every intake has the same share (resolve.ts).
  const share = cfg.intakes[0]?.memory.intakeBytes ?? 0;
  lines.push(`memory: ${mibText(cfg.memory_bytes)} (memory_bytes), ${mibText(share)} for each intake's queue and output buffers`);
  for (const i of cfg.intakes) {
    lines.push(`intake "${i.name}":`);
    lines.push(`  key: ${i.toEmulator ? 'not set: forwards to the local emulator' : `set (${i.intakeKey.length} characters, from ${i.keySource})`}`);
    for (const input of i.inputs) for (const line of inputOf(input).describe(input, cfg)) lines.push(`  ${line}`);
    const feeders = feedingListeners(cfg.listeners, i.name);
    if (feeders.length > 0) lines.push(`  fed by listener${feeders.length > 1 ? 's' : ''} ${feeders.join(', ')}`);
    else if (i.inputs.length === 0) lines.push('  no inputs');
    lines.push(i.toEmulator ? '  output: syslog over TLS to the local intake emulator (no key set)' : `  output: ${outputOf(i.output).describe(i.output)}`);
    const q = i.queue;
    lines.push(q.type === 'memory'
      ? `  queue: memory, ${q.max_events} events / ${q.max_bytes} bytes, when full: ${q.when_full}`
      : `  queue: disk in ${q.path}, ${q.max_bytes} bytes (memory stage ${q.memory_events} events / ${q.memory_bytes} bytes), fsync every ${q.fsync_interval_ms} ms, when full: ${q.when_full}`);
    if (q.type === 'memory' && answersFromMemory(cfg, i)) lines.push('  note: RELP senders are answered once their messages are in this memory queue: a crash or kill -9 loses what it holds (queue: { type: disk }, or respond_when: delivered, keeps them)');
    lines.push(`  batch: ${i.batch.max_events} events / ${i.batch.max_bytes} bytes / ${i.batch.linger_ms} ms`);
    for (const f of i.filters) lines.push(`  filter "${f.description}"${f.enabled ? '' : ' (disabled)'}: drops events where ${f.filters.map((c) => `${c.field} ${c.operator} ${JSON.stringify(c.value)}`).join(' and ')}`);
  }
  for (const l of cfg.listeners) lines.push(...inputOf(l).describe(l, cfg));
  const threads = workerCount(cfg.workers);
  if (threads > 1) {
    const plan = workerConfig(cfg, () => undefined, () => undefined);
    const own = plan.intakes.filter((i) => i.inputs.length > 0).map((i) => `"${i.name}"`);
    const forwarded = workerForwards(cfg).map((i) => `"${i.name}"`);
    const parts = [
      ...(own.length > 0 ? [`the network inputs of ${own.join(', ')}`] : []),
      ...(plan.listeners.length > 0 ? [`the shared listeners${forwarded.length > 0 ? ` (what they route to ${forwarded.join(', ')}, whose disk queues the main thread runs, goes there)` : ''}`] : []),
    ];
    lines.push(parts.length === 0
      ? `workers: ${threads} asked, but no network input can run in a worker (file inputs, and the inputs of intakes with a disk queue, have a single owner): one thread`
      : `workers: ${threads} threads run ${parts.join(' and ')}; the rest runs in the main thread`);
  }
  if (cfg.stats) lines.push(`forwarder statistics: every ${cfg.stats.interval_ms / 1000} s to intake "${cfg.stats.intake}"`);
  lines.push(cfg.metrics.enabled ? `metrics: http://${cfg.metrics.address}:${cfg.metrics.port}/metrics` : 'metrics: disabled');
  for (const w of cfg.warnings) lines.push(`warning: ${w}`);
  return lines.join('\n');
}

/** Whether a RELP input or listener feeding `intake` answers before delivery (respond_when auto or queued). */
function answersFromMemory(cfg: Config, intake: Config['intakes'][number]): boolean {
  const early = (c: { readonly type: string }): boolean => c.type === 'relp' && 'respond_when' in c && c.respond_when !== 'delivered';
  const feeders = new Set(feedingListeners(cfg.listeners, intake.name));
  return intake.inputs.some(early) || cfg.listeners.some((l) => feeders.has(l.label) && early(l));
}

/**
 * Who holds the configuration's state directories now. The relay running this same file on this
 * host is the one a reload goes to (a line of information); any other holder is a second relay,
 * which `run` would refuse (exit 73): `conflict` is then true.
 */
export function stateInUse(cfg: Config): { readonly lines: string[]; readonly conflict: boolean } {
  const lines: string[] = [];
  let conflict = false;
  const dirs = stateDirs(cfg);
  if (dirs.length > 0 && lockMethod() === 'none') lines.push('warning: state directories cannot be locked here (no native addon, no flock(1)): never run two relays on one data_dir');
  for (const { dir, what } of dirs) {
    const held = stateHolder(dir);
    if (!held) continue;
    const h = held.holder;
    if (h && h.host === hostname() && h.config !== '' && resolve(h.config) === resolve(cfg.file)) {
      lines.push(`state: ${what} is held by the relay running this configuration (process ${h.pid})`);
      continue;
    }
    conflict = true;
    lines.push(`error: ${what} is in use by ${holderText(h)}: \`run\` would refuse to start (exit 73); give each relay its own data_dir or queue.path`);
  }
  return { lines, conflict };
}

/**
 * The effective configuration (every default filled in) as YAML, for `validate --print`. Secrets
 * are replaced, file contents (certificates) left out: keys, key files' contents, bearer tokens.
 */
export function effectiveYaml(cfg: Config): string {
  const internal = new Set(['label', 'tlsFiles', 'caPem', 'clientCertPem', 'clientKeyPem', 'proofBytes', 'windowBytes', 'backlogBytes', 'keySource', 'toEmulator', 'memory', 'endpoint', 'file', 'format', 'warnings']);
  const plain = JSON.parse(
    JSON.stringify(cfg, (k, v: unknown) => {
      if (internal.has(k) || Buffer.isBuffer(v)) return undefined;
      if (k === 'bearer_token') return '[redacted]';
      return v;
    }),
  ) as { intakes: Record<string, unknown>[]; dataDir?: string; data_dir?: string };
  plain.data_dir = plain.dataDir;
  delete plain.dataDir;
  // Back to the file's own keys, so the output is itself a valid configuration (once keys are put back).
  plain.intakes = plain.intakes.map((i, n) => {
    const { intakeKey, ...rest } = i;
    const intake = cfg.intakes[n];
    const output = intake ? JSON.parse(JSON.stringify(outputOf(intake.output).effective(intake.output), (k, v: unknown) => (internal.has(k) || Buffer.isBuffer(v) ? undefined : v))) as unknown : rest.output;
    return { name: rest.name, intake_key: intakeKey === '' ? '' : '[redacted]', ...rest, output };
  });
  return `# ${cfg.file}: effective configuration (defaults filled in, secrets redacted)\n${stringify(plain)}`;
}
