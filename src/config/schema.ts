// The configuration schema (zod). Strict everywhere: an unknown key is an error. Units are in the
// names (_ms, _bytes). Every field has a description: the JSON Schema for editors and the reference
// (docs/reference/configuration.md, the man page) are generated from here.

import { z } from 'zod';
import { REGION_NAMES } from './regions.ts';
import { KiB, MiB, port, positive, senders } from '../core/config-parts.ts';
import { DEFAULT_MEMORY_BYTES, MIN_MEMORY_BYTES } from '../core/memory-budget.ts';
import { filterRule } from '../routing/schema.ts';
import { OUTPUT_ENDPOINT_KEYS, OUTPUT_SCHEMAS, registeredOutputSchemas } from '../outputs/schemas.ts';
import { INPUT_SCHEMAS, LISTENER_SCHEMAS } from '../inputs/schemas.ts';

export const inputSchema = z.discriminatedUnion('type', INPUT_SCHEMAS);

export const outputSchema = z.discriminatedUnion('type', OUTPUT_SCHEMAS);

const whenFull = z.enum(['block', 'drop_newest']).default('block')
  .describe('block: TCP and file inputs stop reading until there is room (UDP still drops, counted); drop_newest: refuse new events (counted). File inputs always wait.');

const memoryQueue = z.strictObject({
  type: z.literal('memory').default('memory').describe('Events wait in memory (the default): fast, but lost if the process is killed. See type: disk.'),
  max_events: positive.default(100_000).describe('Most events queued for this intake.'),
  max_bytes: positive.optional().describe('Most bytes of events queued for this intake (as received; in memory they take 2 to 3 times that). Default: a quarter of the intake\'s share of memory_bytes (24 MiB with one intake and the default memory_bytes).'),
  when_full: whenFull,
});

const diskQueue = z.strictObject({
  type: z.literal('disk').describe('Events are appended to checksummed segment files before they count as accepted, and kept until the intake has them: nothing lost across outages, restarts and kill -9.'),
  path: z.string().min(1).optional().describe('Directory of this intake\'s queue. Default: <data_dir>/queues/<intake name>.'),
  max_bytes: positive.default(1024 * MiB).describe('Most bytes on disk for this intake (1 GiB by default); at the limit the queue is full.'),
  when_full: whenFull,
  memory_events: positive.default(10_000).describe('Events kept in memory, ready for the output, in front of the disk.'),
  memory_bytes: positive.optional().describe('Bytes kept in memory in front of the disk. Default: a sixth of the intake\'s share of memory_bytes (16 MiB with one intake and the default memory_bytes).'),
  segment_bytes: z.int().min(64 * KiB).default(64 * MiB).describe('Size of one segment file; a segment is deleted once all its events are delivered.'),
  fsync_interval_ms: positive.default(1_000).describe('How often appended events are fsynced. File inputs move their checkpoints only past fsynced events.'),
});

const queue = z.discriminatedUnion('type', [memoryQueue, diskQueue])
  .describe('The bounded queue between this intake\'s inputs and its output.');

const batch = z
  .strictObject({
    max_events: positive.default(1000).describe('Most events per write.'),
    max_bytes: positive.default(1 * MiB).describe('Most bytes of events per write.'),
    linger_ms: z.int().min(0).default(50).describe('Longest wait for a batch to fill before it is written.'),
  })
  .describe('How queued events are grouped into writes.');

export const listenerSchema = z.discriminatedUnion('type', LISTENER_SCHEMAS);

export const intakeSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9 _.:\/-]{0,63}$/, 'must start with a letter or digit; letters, digits, space, _ . : / - (at most 64)')
    .describe('Name of the intake in logs, metrics and commands. Never the key.'),
  intake_key: z.string().optional().describe('The intake key. Use ${ENV_VAR} rather than writing it here.'),
  intake_key_file: z.string().min(1).optional().describe('File holding the intake key (e.g. a systemd credential or Docker secret).'),
  inputs: z.array(inputSchema).default([]).describe('Where this intake\'s events come from.'),
  output: outputSchema.prefault({ type: 'syslog' }).describe('How events reach the intake.'),
  queue: queue.prefault({}),
  batch: batch.prefault({}),
  filters: z.array(filterRule).default([]).describe('Drop rules applied before events leave (each counted): saves ingestion volume.'),
  senders: senders.prefault({}),
  platform: z
    .strictObject({
      community_uuid: z.uuid().describe('Community of the intake.'),
      format_uuid: z.uuid().describe('Format (parser) of the intake.'),
      intake_uuid: z.uuid().optional().describe('The intake itself (scopes the rule to it).'),
    })
    .optional()
    .describe('Platform identifiers, for `intake-relay rules push`.'),
});

export const configSchema = z.strictObject({
  region: z.string().toLowerCase().default('fra1')
    .refine((r) => (REGION_NAMES as string[]).includes(r), {
      error: (iss) => `unknown region "${String(iss.input)}": expected one of ${REGION_NAMES.join(', ')}`,
    })
    .describe(`Region of the platform subscription: ${REGION_NAMES.join(', ')}.`),
  endpoints: z
    .strictObject({
      // Each output type's keys (outputs/<type>/schema.ts), then the REST API's.
      ...OUTPUT_ENDPOINT_KEYS,
      api_url: z.url({ protocol: /^https?$/ }).optional().describe('Overrides the region\'s REST API base URL (rules push).'),
    })
    .prefault({})
    .describe('Endpoints set by hand (proxies, tests); each overrides the region\'s.'),
  log_level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('info').describe('Least severe log level printed.'),
  metrics: z
    .strictObject({
      enabled: z.boolean().default(true).describe('Serve /metrics, /healthz and /readyz.'),
      address: z.string().min(1).default('127.0.0.1').describe('Address of the metrics and health server.'),
      port: port.default(9750).describe('Port of the metrics and health server.'),
      stall_timeout_ms: positive.default(300_000)
        .describe('An intake that has had queued events and no delivery for this long is stalled: shown in /status, intake_relay_output_stalled and the alert rules (and /readyz with readiness: delivering).'),
      readiness: z.enum(['accepting', 'delivering']).default('accepting')
        .describe('accepting: /readyz is 503 only while the relay cannot take events (starting, draining, a queue full under when_full: block, an input or listener down, an HTTP listener out of memory budget), so a platform outage does not take a fleet of collectors out of a load balancer while their queues absorb it. delivering: also 503 while an intake is stalled or its key refused (every replica goes out of service together during an intake outage).'),
      tap: z.enum(['local', 'any', 'off']).default('local')
        .describe('Who may watch events live (GET /tap, intake-relay tap): local, clients on this host only (127.0.0.0/8, ::1); any, every client that reaches the port (events can hold personal data); off.'),
    })
    .prefault({})
    .describe('The operations endpoint: /metrics, /healthz, /readyz, /status, /senders, /tap.'),
  data_dir: z.string().min(1).optional()
    .describe('Directory for state that must survive restarts (file input checkpoints). Default: $STATE_DIRECTORY (set by systemd), else /var/lib/intake-relay.'),
  memory_bytes: z.int().min(MIN_MEMORY_BYTES).default(DEFAULT_MEMORY_BYTES)
    .describe('The memory the relay aims to stay under, as one number: 128 MiB by default, or, in a container (or a unit with MemoryMax) whose memory limit is lower than 192 MiB, two thirds of that limit (48 MiB at least; said at load), since under a flood the peaks pass the budget. The defaults of every bound that holds events in memory derive from it. 32 MiB is set aside for the runtime (16 MiB more per worker thread); the rest is shared equally by the intakes, and each intake\'s share gives a quarter to its memory queue (queue.max_bytes) or a sixth to its disk queue\'s memory part (queue.memory_bytes), a sixth to the syslog output\'s resend window (per thread with workers), a third to the HTTP output\'s requests in flight (max_concurrency), and a sixth to each UDP input\'s read backlog (what its reader thread holds ahead of a busy thread, per thread with workers, 16 MiB at most). A bound set by hand wins. Near 90% of it, every thread collects its heap. See "Memory" in docs/guides/configuration.md.'),
  shutdown_timeout_ms: positive.default(8_000).describe('On SIGTERM/SIGINT, time allowed to deliver what memory queues hold before exiting (within the 10 s container engines wait by default; give the engine more to raise it). A disk queue does not wait for its intake: what it holds is fsynced and delivered after the next start.'),
  shutdown_delay_ms: z.int().min(0).default(0).describe('On SIGTERM/SIGINT, keep taking events for this long before closing the inputs (/readyz answers 503 meanwhile): a sidecar that gets its SIGTERM with the application (Kubernetes before native sidecars, a pod under podman) still receives the application\'s last lines; a collector behind a load balancer, until the balancer has seen it go. Give the engine this plus shutdown_timeout_ms.'),
  workers: z.union([z.int().min(1).max(64), z.literal('auto')]).default(1)
    .describe('Threads that run the network inputs (UDP, TCP, TLS, RELP, HTTP), each on its own socket on every port (SO_REUSEPORT: the kernel spreads connections and datagrams), each parsing, queueing and delivering what it received over its own connection per intake. auto: the cores the process may use, at most 8. 1: one thread does everything. File inputs and intakes with a disk queue run in the main thread only. A restart applies a change. See "Workers".'),
  emulator: z
    .strictObject({
      when: z.enum(['never', 'no_intake_key']).default('never')
        .describe('no_intake_key: intakes whose key is empty forward to a local intake emulator (for trying intake-relay out).'),
      port: port.default(0).describe('Port of the local emulator (0 = any free port).'),
    })
    .prefault({})
    .describe('The local intake emulator, for trying intake-relay out without an intake key.'),
  stats: z
    .strictObject({
      intake: z.string().min(1).describe('The intake (by name) that receives the records: one created in the platform with the "forwarder logs" format.'),
      interval_ms: z.int().min(1_000).default(300_000).describe('How often a report is sent (the official forwarder: every 5 minutes).'),
    })
    .optional()
    .describe('Periodic forwarder statistics in the record shapes of the official forwarder (rsyslog impstats JSON), so its dashboards and alert rules keep working.'),
  intakes: z.array(intakeSchema).min(1, 'at least one intake is needed').describe('The intakes events are forwarded to, each with its key, inputs and output.'),
  listeners: z.array(listenerSchema).default([]).describe('Inputs shared by several intakes: syslog listeners with routes, and the HTTP receiver.'),
});

/**
 * The configuration schema with the output types added at run time (registerOutputSchema), or the
 * built-in one when there are none. Their configurations pass through typed as the built-in ones:
 * their definitions read them.
 */
export function currentConfigSchema(): typeof configSchema {
  const extra = registeredOutputSchemas();
  if (extra.length === 0) return configSchema;
  const outputs = z.discriminatedUnion('type', [...OUTPUT_SCHEMAS, ...extra] as unknown as typeof OUTPUT_SCHEMAS);
  const intake = intakeSchema.extend({ output: outputs.prefault({ type: 'syslog' }).describe('How events reach the intake.') });
  return configSchema.extend({
    intakes: z.array(intake).min(1, 'at least one intake is needed').describe('The intakes events are forwarded to, each with its key, inputs and output.'),
  }) as unknown as typeof configSchema;
}

export type RawConfig = z.infer<typeof configSchema>;
export type IntakeConfig = z.infer<typeof intakeSchema>;
export type InputConfig = z.infer<typeof inputSchema>;
export type DiskQueueConfig = z.infer<typeof diskQueue>;
export type ListenerConfig = z.infer<typeof listenerSchema>;
