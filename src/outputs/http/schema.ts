// The http output's configuration schema (config time only: the daemon does not load zod).

import { z } from 'zod';
import { MiB, backoff, positive } from '../../core/config-parts.ts';

/** The `endpoints:` keys this output type reads (config/schema.ts merges every type's). */
export const httpEndpointKeys = {
  http_url: z.url({ protocol: /^https?$/ }).optional().describe('Overrides the region\'s HTTP intake base URL.'),
};

export interface HttpEndpoints {
  readonly http_url?: string | undefined;
}

export const httpOutputSchema = z.strictObject({
  type: z.literal('http').describe('Batched HTTPS POSTs of {"events": [...]} to the intake\'s /jsons endpoint (for networks where only 443 goes out).'),
  url: z.url({ protocol: /^https?$/ }).optional()
    .describe('Base URL of the HTTP intake; /jsons?path=%24.events&status_code=200 is appended. Default: the region\'s (or endpoints.http_url).'),
  event: z.enum(['message', 'line']).default('message')
    .describe('What each event string is: the MSG part of lines with a syslog header (message), or the whole line as received (line). Lines without a header are sent whole either way.'),
  gzip: z.boolean().default(false).describe('Compress request bodies (Content-Encoding: gzip).'),
  max_body_bytes: z.int().min(1024).max(10 * MiB).default(5 * MiB).describe('Largest JSON body sent (before compression); larger batches are split. The intake takes at most 10 MiB.'),
  concurrency: z.union([z.int().min(1).max(256), z.literal('adaptive')]).default('adaptive')
    .describe('Requests in flight: a fixed number, or adaptive (grows while the limit is reached and answers are no slower than usual; shrinks when latency rises or the intake throttles).'),
  max_concurrency: z.int().min(1).max(256).optional().describe('Upper bound of the adaptive concurrency. Default: as many requests as a third of the intake\'s share of memory_bytes holds, each taking twice max_body_bytes (its JSON text and its bytes), from 2 to 32 (3 with one intake and the defaults).'),
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

export type HttpOutputConfig = z.infer<typeof httpOutputSchema>;
