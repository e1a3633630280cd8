// The official forwarder's intakes.yaml, accepted as it is: each entry becomes an intake with one
// input. Its environment (REGION, ENDPOINT, MEMORY_MESSAGES, DISK_SPACE, RELP_OUTPUT: legacy-env.ts;
// CERTS_DIR) is read the way the forwarder reads it, except that an unknown region is an error
// instead of a fall-back to fra1.

import { z } from 'zod';
import { BYTES_PER_MESSAGE, MIN_DISK_SHARE, readLegacyEnv, type LegacyEnv } from './legacy-env.ts';

const legacyIntake = z.strictObject({
  name: z.string().min(1),
  protocol: z.string().toLowerCase().pipe(z.enum(['tcp', 'udp', 'tls'])).optional(),
  port: z.int().min(1).max(65535).optional(),
  intake_key: z.string(),
  queue_size: z.int().min(1).optional(),
  debug: z.boolean().optional(),
  stats: z.boolean().optional(),
  tls_key_name: z.string().min(1).optional(),
  tls_cert_name: z.string().min(1).optional(),
  // Accepted and unused, as by the forwarder: its TLS inputs run with AuthMode "anon", so the CA it
  // names verifies no sender's certificate (client_ca_file in the native format does).
  tls_ca_name: z.string().min(1).optional(),
});

export const legacySchema = z.strictObject({ intakes: z.array(legacyIntake).min(1) });

export function looksLegacy(raw: unknown): boolean {
  if (typeof raw !== 'object' || raw === null || !('intakes' in raw)) return false;
  const keys = Object.keys(raw);
  if (keys.length !== 1 || !Array.isArray(raw.intakes)) return false;
  return raw.intakes.some((i: unknown) => typeof i === 'object' && i !== null && ('protocol' in i || 'stats' in i));
}

export interface LegacyResult {
  /** A native configuration document (still to be validated by the native schema). */
  readonly native: Record<string, unknown>;
  /** Maps a path in `native` to the path in the legacy file, for error positions. */
  readonly pathMap: (path: readonly PropertyKey[]) => PropertyKey[];
  readonly warnings: string[];
  /** Problems with the environment, each "environment NAME: ...". */
  readonly problems: string[];
  /** The environment as read; disk queues when diskBytes > 0 (their directory is checked once resolved). */
  readonly env: LegacyEnv;
}

export function convertLegacy(legacy: z.infer<typeof legacySchema>, env: NodeJS.ProcessEnv): LegacyResult {
  const warnings: string[] = [];
  const problems: string[] = [];
  const vars = readLegacyEnv(env, problems, warnings);
  const certsDir = env.CERTS_DIR ?? '/certs';
  const indexMap: number[] = [];
  let stats: string | undefined;
  const forwarded = legacy.intakes.filter((e, i) => {
    if (e.stats) {
      // The forwarder's statistics go to this entry's intake; it has no input of its own.
      if (stats === undefined) stats = e.name;
      else warnings.push(`intake "${e.name}": a second "stats: true" entry; statistics go to "${stats}" only.`);
    }
    if (e.debug) warnings.push(`intake "${e.name}": "debug" is ignored (it would print intake keys); use log_level: debug.`);
    indexMap.push(i);
    return true;
  });
  const receives = (e: (typeof forwarded)[number]): boolean => !e.stats && (e.port !== undefined || e.protocol !== undefined);
  const receiving = forwarded.filter(receives).length;
  const perIntake = vars.memoryMessages && receiving > 0 ? Math.max(1, Math.floor(vars.memoryMessages / receiving)) : undefined;
  // The forwarder shares one disk budget; split per intake, one intake's backlog cannot starve the others.
  const diskShare = receiving > 0 ? Math.floor(vars.diskBytes / receiving) : 0;
  if (vars.diskBytes > 0 && receiving > 0 && diskShare < MIN_DISK_SHARE) {
    problems.push(`environment DISK_SPACE: ${JSON.stringify(vars.diskSpace)} over ${receiving} intakes is under 1 MiB each: give at least ${receiving}m, or 0 for memory queues only`);
  }
  const intakes = forwarded.map((e) => {
    const input: Record<string, unknown> = { type: e.protocol === 'udp' ? 'udp' : 'tcp', port: e.port };
    if (e.protocol === 'tls') {
      input.tls = { cert_file: `${certsDir}/${e.tls_cert_name ?? 'server'}.crt`, key_file: `${certsDir}/${e.tls_key_name ?? 'server'}.key` };
    }
    // The count binds, not the bytes: the byte limit grows with it.
    const events = e.queue_size ?? perIntake;
    const queue = diskShare >= MIN_DISK_SHARE && receives(e)
      ? { type: 'disk', max_bytes: diskShare, ...(events ? { memory_events: events, memory_bytes: events * BYTES_PER_MESSAGE } : {}) }
      : events ? { max_events: events, max_bytes: events * BYTES_PER_MESSAGE } : undefined;
    return {
      name: e.name,
      intake_key: e.intake_key,
      inputs: receives(e) ? [input] : [],
      ...(vars.relp ? { output: { type: 'relp' } } : {}),
      ...(queue ? { queue } : {}),
    };
  });
  const native: Record<string, unknown> = { intakes };
  if (stats !== undefined) native.stats = { intake: stats };
  if (vars.region !== undefined) native.region = vars.region;
  if (Object.keys(vars.endpoints).length > 0) native.endpoints = vars.endpoints;
  if (Object.keys(vars.metrics).length > 0) native.metrics = vars.metrics;
  const pathMap = (path: readonly PropertyKey[]): PropertyKey[] => {
    if (path[0] !== 'intakes' || typeof path[1] !== 'number') return [];
    const at: PropertyKey[] = ['intakes', indexMap[path[1]] ?? path[1]];
    const rest = path.slice(2);
    if (rest[0] === 'inputs') {
      if (rest[2] === 'tls') return [...at, rest[3] === 'key_file' ? 'tls_key_name' : 'tls_cert_name'];
      return [...at, rest[2] === 'port' ? 'port' : 'protocol'];
    }
    if (rest[0] === 'queue') return [...at, 'queue_size'];
    if (rest[0] === 'intake_key' || rest[0] === 'name') return [...at, rest[0]];
    return at;
  };
  return { native, pathMap, warnings, problems, env: vars };
}
