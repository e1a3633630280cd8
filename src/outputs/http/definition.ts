// The HTTP output type: batched HTTPS POSTs to the intake's /jsons (the sink is http-json.ts). Its
// configuration, how it is resolved (the endpoint from the region, the CA file, the proxy), and how
// it is built and described.

import type { OutputDefinition } from '../../core/component.ts';
import type { HttpEndpoints, HttpOutputConfig } from './schema.ts';
import { VERSION } from '../../version.ts';
import { httpConcurrencyOf } from '../../core/memory-budget.ts';
import { HttpJsonSink } from './sink.ts';
import { checkTlsFiles } from '../tls-check.ts';
import { httpOutputTelemetry } from './instruments.ts';
import type { OutputTools } from '../../telemetry/tools.ts';

/** The intake's HTTP endpoint for JSON events (../shared/intake-platform-spec.md, "Event intake"). */
export const JSONS_PATH = '/jsons?path=%24.events&status_code=200';


export interface ResolvedHttpOutput extends HttpOutputConfig {
  /** max_concurrency as set, or derived from memory_bytes. */
  readonly max_concurrency: number;
  /** The endpoint: base URL + /jsons?path=%24.events&status_code=200. */
  readonly endpoint: string;
  readonly caPem: Buffer | undefined;
}

export const httpOutput = {

  resolve(o, ctx) {
    if (!['env', 'none'].includes(o.proxy) && !URL.canParse(o.proxy)) ctx.problem(['proxy'], 'proxy must be env, none, or a URL such as http://proxy.example:3128');
    const base = o.url ?? (ctx.endpoints.overrides as HttpEndpoints).http_url ?? ctx.endpoints.region.httpBase;
    const caPem = o.ca_file ? ctx.readFile(o.ca_file, ['ca_file']) : undefined;
    checkTlsFiles(ctx, caPem, o.ca_file, undefined);
    return {
      ...o,
      max_concurrency: o.max_concurrency ?? httpConcurrencyOf(ctx.memory.perThreadBytes, o.max_body_bytes),
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
      telemetry: httpOutputTelemetry(ctx.tools.metrics, ctx.tools.intake),
    });
  },

  describe: (o) => {
    const c = o.concurrency === 'adaptive' ? `adaptive up to ${o.max_concurrency}` : String(o.concurrency);
    return `HTTP POST to ${o.endpoint}, ${o.gzip ? 'gzip, ' : ''}events as ${o.event}, concurrency ${c}, proxy ${shownProxy(o.proxy)}, CA ${o.ca_file ?? 'system store'}`;
  },
  where: (o) => o.endpoint,
  endpoint: (o) => {
    const u = new URL(o.endpoint);
    return { host: u.hostname, port: Number(u.port || (u.protocol === 'https:' ? 443 : 80)), serverName: u.hostname, ca: o.caPem, cert: undefined, key: undefined };
  },
  effective: (o) => ({ ...o, url: o.endpoint.replace(JSONS_PATH, ''), proxy: shownProxy(o.proxy) }),
  checkNote: (o) =>
    o.proxy !== 'none' && (o.proxy !== 'env' || process.env.HTTPS_PROXY || process.env.https_proxy) ? ` (the relay goes through proxy ${shownProxy(o.proxy)}; checked directly here)` : '',
  maxRetries: (o) => o.max_retries,
  confirmation: 'answer the request with a 2xx status',
  handOverMs: () => 1_000,
  backoff: (o) => ({ initialMs: o.backoff.initial_ms, maxMs: o.backoff.max_ms }),
} satisfies OutputDefinition<HttpOutputConfig, ResolvedHttpOutput, OutputTools>;

/** `proxy` as printed (validate, check): the user and password of a proxy URL are secrets. */
export function shownProxy(proxy: string): string {
  if (proxy === 'none' || proxy === 'env') return proxy;
  try {
    const u = new URL(proxy);
    if (u.username === '' && u.password === '') return proxy;
    return `${u.protocol}//[redacted]@${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return '[redacted]';
  }
}
