// The HTTP listener's configuration: its schema and its resolved shape.

import { z } from 'zod';
import type { TlsFiles } from '../../core/component.ts';
import { MiB, listener, positive, proxyProtocol, senders, tlsServer } from '../../core/config-parts.ts';
import type { ProxyProtocolSettings } from '../../core/config-values.ts';


const httpPath = z.strictObject({
  path: z.string().regex(/^\/[A-Za-z0-9._~\/-]*$/, 'must be a URL path such as /ingest/app1').describe('URL path of this route.'),
  intake: z.string().min(1).describe('The intake its events go to (by name).'),
  format: z.enum(['ndjson', 'lines']).default('lines').describe('ndjson: one JSON value per line (objects are kept as JSON text, strings as their text); lines: one plain-text event per line.'),
  bearer_token: z.string().min(16).optional().describe('When set, requests must carry "Authorization: Bearer <token>". Use ${ENV_VAR}.'),
});

export const httpListenerSchema = z.strictObject({
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
  senders: senders.prefault({}),
  ...proxyProtocol,
});

export type HttpListenerConfig = z.infer<typeof httpListenerSchema>;
export type ResolvedHttpListener = HttpListenerConfig & { readonly label: string; readonly tlsFiles: TlsFiles | undefined; readonly proxy: ProxyProtocolSettings | undefined };

