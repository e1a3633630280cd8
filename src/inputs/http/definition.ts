// The HTTP input type (the server is receiver.ts): a listener shared by the intakes, serving the
// intake's own API routed by the key the sender presents, and per-intake paths.

import { z } from 'zod';
import type { InputDefinition, TlsFiles } from '../../core/component.ts';
import { MiB, listener, positive, tlsServer } from '../../core/config-parts.ts';

/** Paths of the intake's own API, served by every HTTP listener. */
export const INTAKE_API_PATHS = ['/jsons', '/plain', '/plain/batch', '/batch', '/array'];

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
});

export type HttpListenerConfig = z.infer<typeof httpListenerSchema>;
export type ResolvedHttpListener = HttpListenerConfig & { readonly label: string; readonly tlsFiles: TlsFiles | undefined };

export const httpInput = {
  inputSchema: undefined,
  listenerSchema: httpListenerSchema,
  resolve(l, ctx) {
    (l.intakes ?? []).forEach((name, j) => {
      if (ctx.intakeIndex(name) < 0) ctx.problem(['intakes', j], `no intake is named "${name}"`);
    });
    // Parsing JSON takes about twice its text on top of it; gzip holds raw and inflated at once.
    const needed = Math.max(3 * l.max_body_bytes, l.max_body_bytes + l.max_decompressed_bytes, 3 * l.max_decompressed_bytes);
    if (l.max_inflight_bytes < needed) {
      ctx.warn(`max_inflight_bytes (${l.max_inflight_bytes}) cannot hold one JSON body at max_body_bytes and max_decompressed_bytes (about ${needed}): such bodies get 413. Raise it, or lower those limits (line bodies need no parsing).`);
    }
    const paths = new Set<string>();
    l.paths.forEach((r, j) => {
      if (ctx.intakeIndex(r.intake) < 0) ctx.problem(['paths', j, 'intake'], `no intake is named "${r.intake}"`);
      if (INTAKE_API_PATHS.includes(r.path)) ctx.problem(['paths', j, 'path'], `${r.path} is the intake API's own path`);
      if (paths.has(r.path)) ctx.problem(['paths', j, 'path'], `path ${r.path} is used twice`);
      paths.add(r.path);
    });
    let tlsFiles: TlsFiles | undefined;
    if (l.tls) {
      const cert = ctx.readFile(l.tls.cert_file, ['tls', 'cert_file']);
      const key = ctx.readFile(l.tls.key_file, ['tls', 'key_file']);
      const ca = l.tls.client_ca_file ? ctx.readFile(l.tls.client_ca_file, ['tls', 'client_ca_file']) : undefined;
      if (cert && key) tlsFiles = { cert, key, ca };
    }
    return { ...l, label: l.name ?? `${l.tls ? 'https' : 'http'}/${l.port}`, tlsFiles };
  },
  listening: (l) => ({ proto: 'tcp', address: l.address, port: l.port }),
  feeds(l, name) {
    const me = name.toLowerCase();
    return !l.intakes || l.intakes.some((n) => n.toLowerCase() === me) || l.paths.some((p) => p.intake.toLowerCase() === me);
  },
  describe: (l) => [
    `listener ${l.label}: ${l.tls ? 'https' : 'http'} on ${l.address}:${l.port}`,
    `  intake API (/jsons, /plain, /plain/batch, /batch, /array) for the keys of: ${l.intakes ? l.intakes.join(', ') : 'all intakes'}`,
    ...l.paths.map((r) => `  path ${r.path} -> intake "${r.intake}" (${r.format}${r.bearer_token ? ', bearer token required' : ''})`),
  ],
} satisfies InputDefinition<HttpListenerConfig, ResolvedHttpListener>;
