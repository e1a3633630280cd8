// HTTP output: one POST of `{"events": [...]}` per batch to the intake's /jsons endpoint, with the
// intake key as Basic password. One attempt per send(); the answer is translated into what the
// runner must do: 2xx acknowledged; 408/429/5xx and connection errors retried (429 and 503 pause
// the whole output, Retry-After honoured); 401/403 retried slowly with the output marked not
// ready; 413 and other 4xx split to isolate the refused events. Timeouts and resets after the
// request was sent are "unknown outcome": retried, and counted as possible duplicates.

import { promisify } from 'node:util';
import { gzip as gzipCb, constants as zlib } from 'node:zlib';
import type { Dispatcher } from 'undici';
import type { Batch } from '../../core/event.ts';
import { RelayError, classifyConnectError } from '../../core/errors.ts';
import { PeerTextRedactor } from '../../core/peer-text.ts';
import type { Concurrency, SendResult, Sink, SinkEvents } from '../../core/contracts.ts';
import type { HttpOutputTelemetry } from '../../core/telemetry.ts';
import { jsonEventsBody } from './json-body.ts';
import { freeNow } from '../../core/free-now.ts';

const gzip = promisify(gzipCb);
/** Of an answer's body, what is read: an error page's head explains it; the rest is not kept. */
const ANSWER_READ_BYTES = 16 * 1024;

export interface HttpJsonOptions {
  readonly intake: string;
  /** Full URL of the endpoint, query included. */
  readonly url: URL;
  readonly intakeKey: string;
  /** message: MSG of lines with a syslog header; line: the whole line as received. */
  readonly event: 'message' | 'line';
  readonly gzip: boolean;
  readonly maxBodyBytes: number;
  readonly concurrency: Concurrency;
  readonly connectTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keyRetryMs: number;
  readonly ca: Buffer | undefined;
  /** 'env': HTTPS_PROXY / HTTP_PROXY / NO_PROXY; 'none'; or a proxy URL. */
  readonly proxy: string;
  readonly userAgent: string;
  readonly telemetry: HttpOutputTelemetry;
}

export class HttpJsonSink implements Sink {
  readonly type = 'http';
  readonly concurrency: Concurrency;
  readonly #o: HttpJsonOptions;
  readonly #auth: string;
  /** What the intake or a proxy says goes into errors (logs, /status) only through this. */
  readonly #peerText: PeerTextRedactor;
  readonly #t: HttpOutputTelemetry;
  #dispatcher: Dispatcher | undefined;
  #request: typeof import('undici').request = () => Promise.reject(new Error('HTTP output not started'));
  #events: SinkEvents | undefined;
  #inFlight = 0;
  #up = false;
  /**
   * Whether a body is freed once the intake accepted it (freeNow), rather than when a collection
   * finds it. Over HTTP/1.1 and TLS, undici hands a request's head and body to the socket in one
   * write, which TLS encrypts (or copies) at once; an answer means the head was sent, so the body
   * went with it, and nothing reads it again. Over plain HTTP, a socket still writing it reads it
   * in place; over HTTP/2 (which the dispatcher does not offer) a stream sends it piece by piece,
   * as the intake's window allows, and an intake may answer before the end.
   */
  readonly #freeBodies: boolean;

  constructor(o: HttpJsonOptions) {
    this.#o = o;
    this.concurrency = o.concurrency;
    this.#auth = `Basic ${Buffer.from(`:${o.intakeKey}`).toString('base64')}`;
    this.#peerText = new PeerTextRedactor([o.intakeKey, ...proxyCredentials(o.proxy)]);
    this.#t = o.telemetry;
    this.#freeBodies = o.url.protocol === 'https:';
  }

  /**
   * None: send() resolves only once the intake answered, so the events of a request in flight are
   * still the runner's, counted in the queue (counting them here too would count them twice).
   */
  get unacknowledged(): number {
    return 0;
  }

  async start(events: SinkEvents): Promise<void> {
    this.#events = events;
    const o = this.#o;
    // Loaded by the first HTTP output only: a relay without one never holds undici (~8 MB resident).
    const { Agent, EnvHttpProxyAgent, ProxyAgent, request } = await import('undici');
    this.#request = request;
    // HTTP/1.1 only, also through a proxy's tunnel (undici offers HTTP/2 by default): one request
    // per connection at a time, which the adaptive concurrency counts, and a body the intake has
    // answered is no longer read by the socket (#freeBodies).
    const agentOptions = {
      connect: { ca: o.ca, timeout: o.connectTimeoutMs, rejectUnauthorized: true },
      headersTimeout: o.headersTimeoutMs,
      bodyTimeout: o.bodyTimeoutMs,
      keepAliveTimeout: 30_000,
      allowH2: false,
    };
    const requestTls = { ca: o.ca, rejectUnauthorized: true, allowH2: false };
    if (o.proxy === 'none') this.#dispatcher = new Agent(agentOptions);
    else if (o.proxy === 'env') this.#dispatcher = new EnvHttpProxyAgent({ ...agentOptions, requestTls });
    else this.#dispatcher = new ProxyAgent({ ...agentOptions, uri: o.proxy, requestTls });
  }

  async send(batch: Batch, signal: AbortSignal): Promise<SendResult> {
    const o = this.#o;
    const n = batch.events.length;
    if (n === 0) return { status: 'sent' };
    const json = jsonEventsBody(batch.events, o.event === 'line');
    const jsonBytes = json.length;
    if (jsonBytes > o.maxBodyBytes) {
      freeNow(json);
      // Never send what the intake would refuse: split before sending.
      return { status: 'permanent', reason: 'too_large', bisect: true, error: new RelayError('ERELAY_BODY_TOO_LARGE', `Body of ${jsonBytes} bytes exceeds max_body_bytes (${o.maxBodyBytes}).`) };
    }
    let body = json;
    if (o.gzip) {
      body = await gzip(json, { level: zlib.Z_BEST_SPEED });
      // zlib has read it all: the compressed copy is what goes out.
      freeNow(json);
    }
    const headers: Record<string, string> = {
      authorization: this.#auth,
      'content-type': 'application/json',
      'user-agent': o.userAgent,
    };
    if (o.gzip) headers['content-encoding'] = 'gzip';
    const started = performance.now();
    this.#inFlight += n;
    let sentBody = false;
    try {
      const res = await this.#request(o.url, {
        method: 'POST',
        headers,
        body,
        dispatcher: this.#dispatcher,
        signal: AbortSignal.any([signal, AbortSignal.timeout(o.requestTimeoutMs)]),
      });
      sentBody = true;
      // Read the answer to its end, or the connection leaks; one too long to keep closes it.
      const text = await readHead(res.body, ANSWER_READ_BYTES).catch(() => '');
      this.#t.requestSeconds((performance.now() - started) / 1000);
      this.#events?.wrote(body.length);
      this.#t.bodyBytes(jsonBytes);
      const result = this.#answer(res.statusCode, res.headers, text, batch);
      if (result.status === 'sent' && this.#freeBodies) freeNow(body);
      return result;
    } catch (err) {
      this.#t.request('error');
      this.#up = false;
      const timeout = isTimeout(err);
      const error = timeout
        ? new RelayError('ERELAY_HTTP_TIMEOUT', `No complete answer from ${o.url.host} within the timeouts.`, { cause: err })
        : this.#redacted(classifyConnectError(err, o.url.hostname, Number(o.url.port || 443)));
      // Whether the intake processed the request is unknown once the body may have gone out.
      return { status: 'retryable', error, unknownOutcome: timeout || sentBody || isReset(err) };
    } finally {
      this.#inFlight -= n;
    }
  }

  #answer(status: number, headers: Record<string, string | string[] | undefined>, text: string, batch: Batch): SendResult {
    const o = this.#o;
    if (status >= 200 && status < 300) {
      this.#t.request('2xx');
      if (!this.#up) {
        this.#up = true;
        this.#events?.connected();
      }
      this.#events?.acknowledged(batch.seq, batch.events.length);
      return { status: 'sent' };
    }
    this.#t.request(status >= 500 ? '5xx' : status >= 400 ? '4xx' : 'other');
    const detail = this.#peerText.clean(text);
    const error = (msg: string, code: 'ERELAY_HTTP_STATUS' | 'ERELAY_KEY_REJECTED' = 'ERELAY_HTTP_STATUS'): RelayError =>
      new RelayError(code, `${msg} (HTTP ${status} from ${o.url.host}${detail ? `: ${detail}` : ''}).`);
    if (status === 401 || status === 403) {
      this.#up = false;
      return { status: 'retryable', error: error('The intake refused the intake key', 'ERELAY_KEY_REJECTED'), retryAfterMs: o.keyRetryMs, pauseAll: true, keyRejected: true };
    }
    if (status === 413) return { status: 'permanent', reason: 'too_large', bisect: true, error: error('The intake refused the request as too large') };
    if (status === 408 || status === 429 || status >= 500) {
      const retryAfterMs = parseRetryAfter(headers['retry-after']);
      return {
        status: 'retryable',
        error: error(status === 429 ? 'The intake throttles requests' : 'The intake could not take the request'),
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
        pauseAll: status === 429 || status === 503,
      };
    }
    if (status >= 400) return { status: 'permanent', reason: 'rejected', bisect: true, error: error('The intake refused events') };
    return { status: 'retryable', error: error('Unexpected answer from the intake') };
  }

  /** A socket's or a proxy's error message may quote what the peer said. */
  #redacted(e: RelayError): RelayError {
    return this.#peerText.cleanError(e, 600);
  }

  async stop(): Promise<number> {
    const d = this.#dispatcher;
    this.#dispatcher = undefined;
    await d?.close().catch(() => {});
    return this.#inFlight;
  }
}

/** Retry-After as delay-seconds or an HTTP-date (RFC 9110 §10.2.3), in ms; capped at an hour. */
export function parseRetryAfter(v: string | string[] | undefined, now = Date.now()): number | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  if (!s) return undefined;
  const ms = /^\d+$/.test(s.trim()) ? Number(s.trim()) * 1000 : Date.parse(s) - now;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(3_600_000, Math.max(0, ms));
}

/** The password, and user:password, of a proxy URL (config or environment): a proxy may echo them. */
function proxyCredentials(proxy: string): string[] {
  const urls = proxy === 'env' ? [process.env.HTTPS_PROXY, process.env.https_proxy, process.env.HTTP_PROXY, process.env.http_proxy] : [proxy];
  const out: string[] = [];
  for (const u of urls) {
    if (!u || !URL.canParse(u)) continue;
    const { username, password } = new URL(u);
    if (password) out.push(password, decoded(password), `${decoded(username)}:${decoded(password)}`);
  }
  return out;
}

/** A malformed %-escape is kept as written: a proxy URL must not make the output fail to build. */
function decoded(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** At most `max` bytes of a body as text; a longer body is destroyed (the connection with it). */
async function readHead(body: Dispatcher.ResponseData['body'], max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of body) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    chunks.push(b);
    n += b.length;
    if (n >= max) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).toString('utf8', 0, Math.min(n, max));
}

function isTimeout(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : '';
  const name = err instanceof Error ? err.name : '';
  return code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || name === 'TimeoutError' || code === 'UND_ERR_ABORTED' && name === 'TimeoutError';
}

function isReset(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : '';
  return code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE';
}
