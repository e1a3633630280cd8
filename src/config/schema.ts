// The configuration schema (zod). Strict everywhere: an unknown key is an error. Units are in the
// names (_ms, _bytes). Every field has a description: the JSON Schema for editors and the README's
// reference are generated from here.

import { z } from 'zod';
import { REGION_NAMES } from './regions.ts';
import { INTAKE_MAX_EVENT_BYTES, KiB, MiB, listener, port, positive, printable, tlsServer } from '../core/config-parts.ts';
import { filterRule, routingFields } from '../routing/schema.ts';
import { OUTPUT_SCHEMAS } from '../outputs/registry.ts';





const udpInput = z.strictObject({
  type: z.literal('udp').describe('Syslog over UDP: one datagram, one event.'),
  ...listener,
  receive_buffer_bytes: z.int().min(8 * KiB).max(1024 * MiB).optional()
    .describe('Socket receive buffer (SO_RCVBUF). Capped by the kernel\'s net.core.rmem_max.'),
});


const tcpInput = z.strictObject({
  type: z.literal('tcp').describe('Syslog over TCP, octet-counted or newline-delimited (detected per frame).'),
  ...listener,
  tls: tlsServer.optional().describe('Serve TLS (RFC 5425) instead of plain TCP.'),
  max_connections: positive.default(1024).describe('Connections accepted at once; more are refused and counted.'),
  idle_timeout_ms: z.int().min(0).default(0).describe('Close a connection that sent nothing for this long (0 = never).'),
});

const fileInput = z.strictObject({
  type: z.literal('file').describe('Lines appended to files: globs, rotation (rename and copytruncate), checkpoints in data_dir.'),
  name: listener.name.describe('Name of this input in metrics and logs. Default: "file:<first path>".'),
  paths: z.array(z.string().min(1)).min(1, 'needs at least one path or glob')
    .describe('Files to read: paths or globs (*, ?, [abc], {a,b}, ** for any depth). Relative paths are relative to the configuration file.'),
  exclude: z.array(z.string().min(1)).default([]).describe('Globs of files not to read, even when paths match them (e.g. "/var/log/*.gz").'),
  read_from: z.enum(['end', 'beginning']).default('end')
    .describe('Where to start in files that exist at the very first start (no checkpoints yet). Files that appear later are read from new_files_from.'),
  new_files_from: z.enum(['beginning', 'end']).default('beginning')
    .describe('Where to start in a file first seen after the first start (created while running or while stopped).'),
  syslog_header: z.enum(['ignore', 'keep']).default('ignore')
    .describe('ignore: each line is the message, with the header fields below; keep: a line that starts with a syslog header (<PRI>) keeps its own fields.'),
  hostname: printable(255).optional().describe('HOSTNAME of the lines. Default: this machine\'s host name.'),
  app_name: printable(48).optional().describe('APP-NAME of the lines. Default: the file\'s base name (cut to 48 characters).'),
  facility: z.int().min(0).max(23).default(1).describe('Facility of the lines (1 = user).'),
  severity: z.int().min(0).max(7).default(5).describe('Severity of the lines (5 = notice).'),
  encoding: z.enum(['utf-8', 'latin1']).default('utf-8').describe('Character encoding of the files; latin1 (ISO-8859-1) is converted to UTF-8. Invalid UTF-8 is repaired (counted), never forwarded.'),
  max_line_bytes: z.int().min(64).max(INTAKE_MAX_EVENT_BYTES).default(INTAKE_MAX_EVENT_BYTES)
    .describe('Longest line forwarded as one event, in bytes (the intake refuses events over 250 KiB).'),
  oversize: z.enum(['split', 'drop']).default('split')
    .describe('A longer line is split into several events (counted as split) or dropped (counted as too_large).'),
  partial_line_timeout_ms: z.int().min(0).default(5_000)
    .describe('A last line without its newline is forwarded after waiting this long for the rest (0 = wait for the newline forever).'),
  multiline: z
    .strictObject({
      start_pattern: z.string().min(1).describe('Regular expression matching the first line of an event (e.g. "^\\d{4}-\\d{2}-\\d{2}"); other lines join the event before them.'),
      timeout_ms: positive.default(1_000).describe('An event is forwarded once no line was added to it for this long.'),
      max_lines: positive.default(500).describe('Most lines in one event; more start a new event.'),
    })
    .optional()
    .describe('Group lines into one event (stack traces): an event starts at a line matching start_pattern.'),
  poll_interval_ms: positive.default(250).describe('How often files are checked for new lines when inotify does not wake the reader first.'),
  glob_interval_ms: positive.default(1_000).describe('How often paths are matched again to find new, rotated and deleted files.'),
  rotate_wait_ms: positive.default(10_000)
    .describe('A rotated (renamed) or deleted file is read to its end, then kept open this long after it last grew (writers that reopen late), then closed.'),
  max_open_files: z.int().min(1).max(65_536).default(512)
    .describe('Files kept open at once; beyond it, the least recently active are closed and reopened when they grow.'),
  forget_after_ms: positive.default(7 * 24 * 3_600_000).describe('Checkpoints of files gone for this long are forgotten (7 days by default).'),
});

export const inputSchema = z.discriminatedUnion('type', [udpInput, tcpInput, fileInput]);


export const outputSchema = z.discriminatedUnion('type', OUTPUT_SCHEMAS);

const whenFull = z.enum(['block', 'drop_newest']).default('block')
  .describe('block: TCP and file inputs stop reading until there is room (UDP still drops, counted); drop_newest: refuse new events (counted). File inputs always wait.');

const memoryQueue = z.strictObject({
  type: z.literal('memory').default('memory').describe('Events wait in memory (the default): fast, but lost if the process is killed. See type: disk.'),
  max_events: positive.default(100_000).describe('Most events queued for this intake.'),
  max_bytes: positive.default(64 * MiB).describe('Most bytes of events queued for this intake.'),
  when_full: whenFull,
});

const diskQueue = z.strictObject({
  type: z.literal('disk').describe('Events are appended to checksummed segment files before they count as accepted, and kept until the intake has them: nothing lost across outages, restarts and kill -9.'),
  path: z.string().min(1).optional().describe('Directory of this intake\'s queue. Default: <data_dir>/queues/<intake name>.'),
  max_bytes: positive.default(1024 * MiB).describe('Most bytes on disk for this intake (1 GiB by default); at the limit the queue is full.'),
  when_full: whenFull,
  memory_events: positive.default(10_000).describe('Events kept in memory, ready for the output, in front of the disk.'),
  memory_bytes: positive.default(16 * MiB).describe('Bytes kept in memory in front of the disk.'),
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






const udpListener = udpInput.extend({ ...routingFields, type: z.literal('udp').describe('Syslog over UDP, shared by several intakes through routes.') });
const tcpListener = tcpInput.extend({ ...routingFields, type: z.literal('tcp').describe('Syslog over TCP (or TLS), shared by several intakes through routes.') });

const httpPath = z.strictObject({
  path: z.string().regex(/^\/[A-Za-z0-9._~\/-]*$/, 'must be a URL path such as /ingest/app1').describe('URL path of this route.'),
  intake: z.string().min(1).describe('The intake its events go to (by name).'),
  format: z.enum(['ndjson', 'lines']).default('lines').describe('ndjson: one JSON value per line (objects are kept as JSON text, strings as their text); lines: one plain-text event per line.'),
  bearer_token: z.string().min(16).optional().describe('When set, requests must carry "Authorization: Bearer <token>". Use ${ENV_VAR}.'),
});

const httpListener = z.strictObject({
  type: z.literal('http').describe('An HTTP(S) receiver: the intake\'s own API (routed by the key the sender presents), and optional per-intake paths.'),
  name: listener.name,
  address: listener.address,
  port: listener.port,
  tls: tlsServer.optional().describe('Serve HTTPS.'),
  intakes: z.array(z.string().min(1)).optional()
    .describe('Intakes whose keys this listener accepts on the intake API. Default: all. A key of no listed intake is refused with 401.'),
  paths: z.array(httpPath).default([]).describe('Extra paths, each feeding one intake with newline-delimited events.'),
  max_body_bytes: z.int().min(1024).max(1024 * MiB).default(10 * MiB).describe('Largest request body as received (compressed or not); larger gets 413.'),
  max_decompressed_bytes: z.int().min(1024).max(4096 * MiB).default(16 * MiB).describe('Largest body after gzip decompression; a gzip bomb gets 413 without being inflated past it. max_inflight_bytes should hold 3 x this (JSON is parsed on top of its text).'),
  max_inflight_bytes: z.int().min(64 * 1024).max(16384 * MiB).default(64 * MiB)
    .describe('Memory all requests in flight on this listener share: bodies as received, as inflated, and JSON being parsed (about its size plus 24 bytes per value). A request that does not fit now gets 429 with Retry-After (before its body is read when its Content-Length says so) and /readyz turns 503; one that could not fit alone gets 413. The default holds one JSON body at both max_body_bytes and max_decompressed_bytes (a warning at load says when it cannot), or several ordinary ones at once.'),
  max_depth: z.int().min(1).max(1000).default(128)
    .describe('Deepest nesting of lists and objects in a JSON body (the body\'s own list or object counts); deeper gets 400 too_deep. 128 is what serde_json, and so Vector, accepts.'),
  max_events_per_request: positive.default(100_000).describe('Most events in one request; more gets 413.'),
  max_message_bytes: listener.max_message_bytes,
  oversize: listener.oversize,
  defaults: listener.defaults,
  max_connections: positive.default(1024).describe('Connections accepted at once.'),
  headers_timeout_ms: positive.default(10_000).describe('Time allowed to receive the request headers (slow clients are cut off).'),
  request_timeout_ms: positive.default(60_000).describe('Time allowed to receive a whole request.'),
  keep_alive_timeout_ms: positive.default(5_000).describe('How long an idle keep-alive connection stays open.'),
  respond_when: z.enum(['auto', 'queued']).default('auto')
    .describe('auto: answer 200 once the events are safe: in the intake\'s disk queue, or, with a memory queue, delivered to the intake (slower: a syslog output confirms within resend_window_ms). queued: answer as soon as they are queued in memory (faster; lost if the relay dies).'),
  delivery_timeout_ms: positive.default(30_000).describe('respond_when: auto with a memory queue: longest wait for delivery before answering 503 (the client retries; the events may then arrive twice).'),
});

export const listenerSchema = z.discriminatedUnion('type', [udpListener, tcpListener, httpListener]);


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
      syslog_host: z.string().min(1).optional().describe('Overrides the region\'s syslog intake host.'),
      syslog_port: port.optional().describe('Overrides the syslog intake port (10514).'),
      http_url: z.url({ protocol: /^https?$/ }).optional().describe('Overrides the region\'s HTTP intake base URL.'),
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
      stall_timeout_ms: positive.default(300_000).describe('/readyz answers 503 when an intake has had queued events and no delivery for this long.'),
    })
    .prefault({})
    .describe('The operations endpoint: /metrics, /healthz, /readyz, /status.'),
  data_dir: z.string().min(1).optional()
    .describe('Directory for state that must survive restarts (file input checkpoints). Default: $STATE_DIRECTORY (set by systemd), else /var/lib/intake-relay.'),
  shutdown_timeout_ms: positive.default(30_000).describe('On SIGTERM/SIGINT, time allowed to deliver what is queued before exiting.'),
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

export type RawConfig = z.infer<typeof configSchema>;
export type IntakeConfig = z.infer<typeof intakeSchema>;
export type InputConfig = z.infer<typeof inputSchema>;
export type FileInputConfig = z.infer<typeof fileInput>;
export type DiskQueueConfig = z.infer<typeof diskQueue>;
export type HttpListenerConfig = z.infer<typeof httpListener>;
export type SyslogListenerConfig = z.infer<typeof udpListener> | z.infer<typeof tcpListener>;
export type ListenerConfig = z.infer<typeof listenerSchema>;
