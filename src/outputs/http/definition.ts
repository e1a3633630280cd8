// The HTTP output type: batched HTTPS POSTs to the intake's /jsons (the sink is http-json.ts). Its
// configuration, how it is resolved (the endpoint from the region, the CA file, the proxy), and how
// it is built and described.

import { z } from 'zod';
import type { OutputDefinition } from '../../core/component.ts';
import { MiB, backoff, positive } from '../../core/config-parts.ts';
import { VERSION } from '../../version.ts';
import { HttpJsonSink } from './sink.ts';
import { checkTlsFiles } from '../tls-check.ts';

/** The intake's HTTP endpoint for JSON events (../shared/intake-platform-spec.md, "Event intake"). */
export const JSONS_PATH = '/jsons?path=%24.events&status_code=200';

export const httpOutputSchema = z.strictObject({
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

export type HttpOutputConfig = z.infer<typeof httpOutputSchema>;

export interface ResolvedHttpOutput extends HttpOutputConfig {
  /** The endpoint: base URL + /jsons?path=%24.events&status_code=200. */
  readonly endpoint: string;
  readonly caPem: Buffer | undefined;
}

export const httpOutput = {
  schema: httpOutputSchema,

  resolve(o, ctx) {
    if (!['env', 'none'].includes(o.proxy) && !URL.canParse(o.proxy)) ctx.problem(['proxy'], 'proxy must be env, none, or a URL such as http://proxy.example:3128');
    const base = o.url ?? ctx.endpoints.httpBase;
    const caPem = o.ca_file ? ctx.readFile(o.ca_file, ['ca_file']) : undefined;
    checkTlsFiles(ctx, caPem, o.ca_file, undefined);
    return {
      ...o,
      endpoint: `${base.replace(/\/+$/, '')}${JSONS_PATH}`,
      caPem,
    };
  },

  create(o, ctx) {
    return new HttpJsonSink({
      intake: ctx.intake,
      url: new URL(o.endpoint),
      intakeKey: ctx.intakeKey,
      event: o.event,
      gzip: o.gzip,
      maxBodyBytes: o.max_body_bytes,
      concurrency: o.concurrency === 'adaptive' ? { adaptive: { min: 1, max: o.max_concurrency } } : { fixed: o.concurrency },
      connectTimeoutMs: o.connect_timeout_ms,
      headersTimeoutMs: o.headers_timeout_ms,
      bodyTimeoutMs: o.body_timeout_ms,
      requestTimeoutMs: o.request_timeout_ms,
      keyRetryMs: o.key_retry_ms,
      ca: o.caPem,
      proxy: o.proxy,
      userAgent: `intake-relay/${VERSION}`,
      telemetry: ctx.instruments.httpOutput(),
    });
  },

  describe: (o) => {
    const c = o.concurrency === 'adaptive' ? `adaptive up to ${o.max_concurrency}` : String(o.concurrency);
    return `HTTP POST to ${o.endpoint}, ${o.gzip ? 'gzip, ' : ''}events as ${o.event}, concurrency ${c}, proxy ${o.proxy}, CA ${o.ca_file ?? 'system store'}`;
  },
  where: (o) => o.endpoint,
  endpoint: (o) => {
    const u = new URL(o.endpoint);
    return { host: u.hostname, port: Number(u.port || (u.protocol === 'https:' ? 443 : 80)), serverName: u.hostname, ca: o.caPem, cert: undefined, key: undefined };
  },
  effective: (o) => ({ ...o, url: o.endpoint.replace(JSONS_PATH, '') }),
  checkNote: (o) =>
    o.proxy !== 'none' && (o.proxy !== 'env' || process.env.HTTPS_PROXY || process.env.https_proxy) ? ` (the relay goes through proxy ${o.proxy}; checked directly here)` : '',
  maxRetries: (o) => o.max_retries,
  handOverMs: () => 1_000,
  backoff: (o) => ({ initialMs: o.backoff.initial_ms, maxMs: o.backoff.max_ms }),
} satisfies OutputDefinition<HttpOutputConfig, ResolvedHttpOutput>;
