// The configuration schema (zod). Strict everywhere: an unknown key is an error. Units are in the
// names (_ms, _bytes). Every field has a description: the JSON Schema for editors and the README's
// reference are generated from here.

import { z } from 'zod';
import { REGION_NAMES } from './regions.ts';

const port = z.int().min(0).max(65535);
const positive = z.int().min(1);
const KiB = 1024;
const MiB = 1024 * KiB;

/** The intake refuses events over 250 KiB. */
export const INTAKE_MAX_EVENT_BYTES = 250 * KiB;

const printable = (max: number) => z.string().regex(new RegExp(`^[\\x21-\\x7e]{1,${max}}$`), `must be 1 to ${max} printable ASCII characters without spaces`);

const headerDefaults = z
  .strictObject({
    hostname: printable(255).optional().describe('HOSTNAME for lines without one. Default: the sender\'s IP address.'),
    app_name: printable(48).optional().describe('APP-NAME for lines without a header or tag. Default: none (-).'),
    procid: printable(128).optional().describe('PROCID for lines without a header. Default: none (-).'),
    facility: z.int().min(0).max(23).default(1).describe('Facility for lines without a PRI (1 = user).'),
    severity: z.int().min(0).max(7).default(5).describe('Severity for lines without a PRI (5 = notice).'),
  })
  .describe('Header fields used for lines that arrive without a syslog header.');

const listener = {
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:\/-]{0,63}$/, 'must be letters, digits, _ . : / - (at most 64)').optional()
    .describe('Name of this input in metrics and logs. Default: "<type>/<port>".'),
  address: z.string().min(1).default('0.0.0.0').describe('Address to listen on ("0.0.0.0" all IPv4, "::" all IPv6, "127.0.0.1" local only).'),
  port: port.describe('Port to listen on (0 picks a free port, for tests).'),
  max_message_bytes: z.int().min(64).max(INTAKE_MAX_EVENT_BYTES).default(INTAKE_MAX_EVENT_BYTES)
    .describe('Largest event accepted, in bytes (the intake refuses events over 250 KiB).'),
  oversize: z.enum(['drop', 'truncate']).default('drop').describe('What to do with a larger event: drop it (counted as too_large) or truncate it (counted as truncated).'),
  defaults: headerDefaults.prefault({}),
};

const udpInput = z.strictObject({
  type: z.literal('udp').describe('Syslog over UDP: one datagram, one event.'),
  ...listener,
  receive_buffer_bytes: z.int().min(8 * KiB).max(1024 * MiB).optional()
    .describe('Socket receive buffer (SO_RCVBUF). Capped by the kernel\'s net.core.rmem_max.'),
});

const tlsServer = z.strictObject({
  cert_file: z.string().min(1).describe('PEM certificate (chain) presented to senders.'),
  key_file: z.string().min(1).describe('PEM private key of cert_file.'),
  client_ca_file: z.string().min(1).optional().describe('PEM CA bundle: when set, senders must present a certificate it signed (mutual TLS).'),
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

const backoff = z
  .strictObject({
    initial_ms: positive.default(500).describe('First retry delay.'),
    max_ms: positive.default(30_000).describe('Longest retry delay.'),
  })
  .describe('Capped exponential backoff with jitter between delivery attempts. Retries go on forever (HTTP: unless max_retries is set).');

const syslogOutput = z.strictObject({
  type: z.literal('syslog').describe('RFC 5424 syslog, octet-counted, over TLS to the intake.'),
  host: z.string().min(1).optional().describe('Intake host. Default: the region\'s (or endpoints.syslog_host).'),
  port: port.optional().describe('Intake port. Default: 10514 (or endpoints.syslog_port).'),
  server_name: z.string().min(1).optional().describe('Name the certificate must carry. Default: host.'),
  ca_file: z.string().min(1).optional().describe('PEM CA bundle to verify the intake with. Default: the system CAs.'),
  client_cert_file: z.string().min(1).optional().describe('PEM client certificate, if the peer asks for one.'),
  client_key_file: z.string().min(1).optional().describe('PEM private key of client_cert_file.'),
  timestamp: z.enum(['received', 'source']).default('received').describe('TIMESTAMP written: reception time, or the source\'s own when it has one.'),
  connect_timeout_ms: positive.default(10_000).describe('Time allowed for TCP connect plus TLS handshake.'),
  resend_window_ms: z.int().min(0).default(1_000)
    .describe('Longest a batch waits for the intake to confirm it. Syslog has no acknowledgement, so the intake confirms by reading on (see resend_window_bytes) or by closing its side after the relay closes its own: a batch not confirmed within this time gets such a close, and the next batch opens a new connection at once. Values under 100 count as 100.'),
  resend_window_bytes: z.union([positive, z.literal('auto')]).default('auto')
    .describe('A batch counts as delivered once this many bytes written after it have been taken by the kernel on the same connection: more than this host\'s TCP send buffer and the intake\'s receive buffer can hold unread, so the intake has read the batch. auto: net.ipv4.tcp_wmem max + net.ipv4.tcp_rmem max (this host\'s, standing in for the intake\'s) + 1 MiB. Smaller values hold less memory but may count as delivered what a stalled intake never read.'),
  write_timeout_ms: positive.default(30_000)
    .describe('A connection that takes no data for this long while the relay has data for it, or does not answer a close, has failed: it is dropped and what it held is written again.'),
  backoff: backoff.prefault({}),
});

const httpOutput = z.strictObject({
  type: z.literal('http').describe('Batched HTTPS POSTs of {"events": [...]} to the intake\'s /jsons endpoint (for networks where only 443 goes out).'),
  url: z.url({ protocol: /^https?$/ }).optional()
    .describe('Base URL of the HTTP intake; /jsons?path=%24.events&status_code=200 is appended. Default: the region\'s (or endpoints.http_url).'),
  event: z.enum(['message', 'line']).default('message')
    .describe('What each event string is: the MSG part of lines with a syslog header (message), or the whole line as received (line). Lines without a header are sent whole either way.'),
  gzip: z.boolean().default(false).describe('Compress request bodies (Content-Encoding: gzip).'),
  max_body_bytes: z.int().min(1024).max(10 * MiB).default(5 * MiB).describe('Largest JSON body sent (before compression); larger batches are split. The intake takes at most 10 MiB.'),
  concurrency: z.union([z.int().min(1).max(256), z.literal('adaptive')]).default('adaptive')
    .describe('Requests in flight: a fixed number, or adaptive (grows while the intake answers fast, shrinks when it slows down or throttles).'),
  max_concurrency: z.int().min(1).max(256).default(32).describe('Upper bound of the adaptive concurrency.'),
  connect_timeout_ms: positive.default(10_000).describe('Time allowed for TCP connect plus TLS handshake.'),
  headers_timeout_ms: positive.default(30_000).describe('Time allowed for the answer\'s headers once the request is sent.'),
  body_timeout_ms: positive.default(30_000).describe('Time allowed between chunks of the answer\'s body.'),
  request_timeout_ms: positive.default(60_000).describe('Time allowed for a whole request and its answer.'),
  ca_file: z.string().min(1).optional().describe('PEM CA bundle to verify the intake with. Default: the system CAs.'),
  proxy: z.string().min(1).default('env')
    .describe('env: use HTTPS_PROXY / HTTP_PROXY / NO_PROXY from the environment; none: connect directly; or a proxy URL (http://host:port).'),
  max_retries: z.int().min(0).optional().describe('Attempts after the first before a batch is dropped (counted as retries_exhausted). Default: retry forever.'),
  key_retry_ms: positive.default(60_000).describe('Pause between attempts while the intake refuses the key (HTTP 401/403).'),
  backoff: backoff.prefault({}),
});

export const outputSchema = z.discriminatedUnion('type', [syslogOutput, httpOutput]);

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

export const FACILITIES = ['kern', 'user', 'mail', 'daemon', 'auth', 'syslog', 'lpr', 'news', 'uucp', 'cron', 'authpriv', 'ftp', 'ntp', 'security', 'console', 'solaris-cron',
  'local0', 'local1', 'local2', 'local3', 'local4', 'local5', 'local6', 'local7'] as const;
export const SEVERITIES = ['emerg', 'alert', 'crit', 'err', 'warning', 'notice', 'info', 'debug'] as const;

const oneOrMany = <T extends z.ZodType>(t: T) => z.union([t, z.array(t).min(1)]);
const textMatch = oneOrMany(z.string().min(1))
  .describe('"exact", "prefix*", "*suffix", or "/regular expression/flags"; a list matches any of them.');

const routeSchema = z
  .strictObject({
    match: z
      .strictObject({
        sender: oneOrMany(z.string().min(1)).optional().describe('Sender address or CIDR (10.1.0.0/16, 2001:db8::/32); a list matches any.'),
        hostname: textMatch.optional(),
        app_name: textMatch.optional(),
        facility: oneOrMany(z.union([z.enum(FACILITIES), z.int().min(0).max(23)])).optional().describe('Facility name or number; a list matches any.'),
        severity: oneOrMany(z.union([z.enum(SEVERITIES), z.int().min(0).max(7)])).optional().describe('Severity name or number; a list matches any.'),
        message: z.string().min(1).optional().describe('A regular expression searched in the message (evaluated last, only when the rest matched).'),
      })
      .prefault({})
      .describe('Conditions, all of which must hold (none: matches everything).'),
    intake: z.string().min(1).optional().describe('The intake that gets the matching events.'),
    drop: z.literal(true).optional().describe('Drop the matching events instead (counted).'),
  })
  .refine((r) => (r.intake === undefined) !== (r.drop === undefined), { message: 'a route needs either intake or drop: true' });

const routing = {
  routes: z.array(routeSchema).min(1).describe('Ordered routes: the first whose match holds decides where an event goes.'),
  default: z.string().min(1).default('drop').describe('The intake for events no route matches, or drop (counted as no_route).'),
};

const udpListener = udpInput.extend({ ...routing, type: z.literal('udp').describe('Syslog over UDP, shared by several intakes through routes.') });
const tcpListener = tcpInput.extend({ ...routing, type: z.literal('tcp').describe('Syslog over TCP (or TLS), shared by several intakes through routes.') });

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

const filterValue = z.union([z.string(), z.number(), z.boolean()]);
const filterRule = z
  .strictObject({
    description: z.string().min(1).max(200).describe('What the rule drops; also its name in metrics.'),
    enabled: z.boolean().default(true),
    filters: z
      .array(
        z
          .strictObject({
            field: z.string().min(1).describe('hostname, app_name, procid, msgid, facility, severity or sender; or a dotted path into a JSON message (process.name).'),
            operator: z.enum(['==', 'in']),
            value: z.union([filterValue, z.array(filterValue).min(1)]),
          })
          .refine((f) => (f.operator === 'in') === Array.isArray(f.value), { message: 'operator "in" takes a list of values, "==" a single value' }),
      )
      .min(1)
      .describe('Conditions, all of which must hold for an event to be dropped.'),
  })
  .describe('A drop rule in the platform\'s optimization-rule shape.');

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
export type SyslogOutputConfig = z.infer<typeof syslogOutput>;
export type HttpOutputConfig = z.infer<typeof httpOutput>;
export type HttpListenerConfig = z.infer<typeof httpListener>;
export type SyslogListenerConfig = z.infer<typeof udpListener> | z.infer<typeof tcpListener>;
export type ListenerConfig = z.infer<typeof listenerSchema>;
export type RouteConfig = z.infer<typeof routeSchema>;
export type FilterRuleConfig = z.infer<typeof filterRule>;
