// The redacted summary `validate` prints for a valid configuration: what will listen where and go
// where. Keys appear only as "set (N characters, from ...)".

import { stringify } from 'yaml';
import { feedingListeners, type Config } from '../config/resolve.ts';
import { inputOf } from '../inputs/registry.ts';
import { outputOf } from '../outputs/registry.ts';
import { workerConfig, workerCount } from '../pipeline/workers.ts';

export function summarize(cfg: Config): string {
  const lines: string[] = [];
  lines.push(`${cfg.file}: valid (${cfg.format === 'native' ? 'intake-relay format' : 'official forwarder intakes.yaml'})`);
  // With ENDPOINT (REGION=OTHER) the region says little on its own: the intake host is the endpoints'.
  const host = cfg.endpoints.syslog_host ?? cfg.endpoints.relp_host;
  lines.push(`region: ${cfg.region}${host ? ` (intake host set by endpoints: ${host})` : ''}`);
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
      : `  queue: disk in ${q.path}, ${q.max_bytes} bytes (memory stage ${q.memory_events} events), fsync every ${q.fsync_interval_ms} ms, when full: ${q.when_full}`);
    lines.push(`  batch: ${i.batch.max_events} events / ${i.batch.max_bytes} bytes / ${i.batch.linger_ms} ms`);
    for (const f of i.filters) lines.push(`  filter "${f.description}"${f.enabled ? '' : ' (disabled)'}: drops events where ${f.filters.map((c) => `${c.field} ${c.operator} ${JSON.stringify(c.value)}`).join(' and ')}`);
  }
  for (const l of cfg.listeners) lines.push(...inputOf(l).describe(l, cfg));
  const threads = workerCount(cfg.workers);
  if (threads > 1) {
    const plan = workerConfig(cfg, () => undefined, () => undefined);
    lines.push(plan.intakes.length === 0
      ? `workers: ${threads} asked, but no network input can run in a worker (file inputs and disk queues have a single owner): one thread`
      : `workers: ${threads} threads run the network inputs of ${plan.intakes.map((i) => `"${i.name}"`).join(', ')}${plan.listeners.length > 0 ? ' and the shared listeners' : ''}; the rest runs in the main thread`);
  }
  if (cfg.stats) lines.push(`forwarder statistics: every ${cfg.stats.interval_ms / 1000} s to intake "${cfg.stats.intake}"`);
  lines.push(cfg.metrics.enabled ? `metrics: http://${cfg.metrics.address}:${cfg.metrics.port}/metrics` : 'metrics: disabled');
  for (const w of cfg.warnings) lines.push(`warning: ${w}`);
  return lines.join('\n');
}

/**
 * The effective configuration (every default filled in) as YAML, for `validate --print`. Secrets
 * are replaced, file contents (certificates) left out: keys, key files' contents, bearer tokens.
 */
export function effectiveYaml(cfg: Config): string {
  const internal = new Set(['label', 'tlsFiles', 'caPem', 'clientCertPem', 'clientKeyPem', 'proofBytes', 'windowBytes', 'keySource', 'toEmulator', 'endpoint', 'file', 'format', 'warnings']);
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
