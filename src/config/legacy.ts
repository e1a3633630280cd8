// The official forwarder's intakes.yaml, accepted as it is: each entry becomes an intake with one
// input. Its environment (REGION, ENDPOINT, MEMORY_MESSAGES, CERTS_DIR) is read the way the
// forwarder reads it, except that an unknown region is an error instead of a fall-back to fra1.

import { z } from 'zod';
import { REGIONS } from './regions.ts';

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
}

export function convertLegacy(legacy: z.infer<typeof legacySchema>, env: NodeJS.ProcessEnv): LegacyResult {
  const warnings: string[] = [];
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
  const memory = env.MEMORY_MESSAGES ? Number(env.MEMORY_MESSAGES) : undefined;
  const receiving = forwarded.filter((e) => !e.stats).length;
  const perIntake = memory && Number.isFinite(memory) && receiving > 0 ? Math.max(1, Math.floor(memory / receiving)) : undefined;
  const intakes = forwarded.map((e) => {
    const input: Record<string, unknown> = { type: e.protocol === 'udp' ? 'udp' : 'tcp', port: e.port };
    if (e.protocol === 'tls') {
      input.tls = { cert_file: `${certsDir}/${e.tls_cert_name ?? 'server'}.crt`, key_file: `${certsDir}/${e.tls_key_name ?? 'server'}.key` };
    }
    const maxEvents = e.queue_size ?? perIntake;
    return {
      name: e.name,
      intake_key: e.intake_key,
      inputs: e.stats || (e.port === undefined && e.protocol === undefined) ? [] : [input],
      ...(maxEvents ? { queue: { max_events: maxEvents } } : {}),
    };
  });
  const native: Record<string, unknown> = { intakes };
  if (stats !== undefined) native.stats = { intake: stats };
  // An invalid REGION is reported by the loader, naming the variable.
  if (env.REGION && env.REGION.toLowerCase() in REGIONS) native.region = env.REGION;
  if (env.ENDPOINT) {
    const [host, p] = env.ENDPOINT.split(':');
    native.endpoints = p ? { syslog_host: host, syslog_port: Number(p) } : { syslog_host: host };
  }
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
  return { native, pathMap, warnings };
}
