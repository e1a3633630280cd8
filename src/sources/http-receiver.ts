// HTTP(S) receiver: the intake's own API (/jsons, /plain, /plain/batch, /batch, /array), so a sender
// configured for the intake only changes its base URL, and per-intake routes for newline-delimited
// events. The key the sender presents selects the intake; a key of no intake served here gets 401.
// The answer is sent only once the events are in the intake's queue; a full queue gets 429 with a
// Retry-After from how fast it drains, never "accepted, then dropped". Every refusal is counted.

import { isUtf8 } from 'node:buffer';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { gunzip as gunzipCb } from 'node:zlib';
import type { Logger } from 'pino';
import type { LogEvent } from '../core/event.ts';
import type { ResolvedHttpListener } from '../config/load.ts';
import { RateLimiter } from '../telemetry/log.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { listen } from './tcp-syslog.ts';
import { applyFilters, utf8Boundary, senderAddress, type Target } from './event-builder.ts';
import { headerlessEvent, type HeaderDefaults } from './syslog-parse.ts';

const gunzip = promisify(gunzipCb);

/** An intake this listener can feed. */
export interface HttpTarget extends Target {
  readonly intakeKey: string;
}

type Reason =
  | 'invalid_json' | 'path_not_found' | 'not_a_list' | 'body_too_large' | 'too_many_events' | 'unsupported_encoding'
  | 'unsupported_media_type' | 'method_not_allowed' | 'not_found' | 'unauthorized' | 'throttled' | 'shutdown' | 'bad_request'
  | 'slow_client' | 'not_delivered';

class HttpError extends Error {
  readonly status: number;
  readonly reason: Reason;
  readonly headers: Record<string, string>;
  constructor(status: number, reason: Reason, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.reason = reason;
    this.headers = headers;
  }
}

/** One event as text: strings as they are, anything else as its JSON text. */
function eventText(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

export class HttpReceiver {
  readonly #l: ResolvedHttpListener;
  readonly #byKey = new Map<string, HttpTarget>();
  readonly #byName = new Map<string, HttpTarget>();
  readonly #metrics: Metrics;
  readonly #log: Logger;
  readonly #limiter = new RateLimiter();
  readonly #defaults: HeaderDefaults;
  #routes = new Map<string, { target: HttpTarget; format: 'ndjson' | 'lines'; token: Buffer | undefined }>();
  #server: http.Server | undefined;

  constructor(listener: ResolvedHttpListener, targets: readonly HttpTarget[], metrics: Metrics, log: Logger) {
    this.#l = listener;
    this.#metrics = metrics;
    this.#log = log;
    this.retarget(targets);
    const d = listener.defaults;
    this.#defaults = { pri: d.facility * 8 + d.severity, hostname: d.hostname ?? '', appName: d.app_name ?? '', procId: d.procid ?? '' };
  }

  get label(): string {
    return this.#l.label;
  }

  /** The intakes it serves (at start, and when a reload adds, removes or changes intakes). */
  retarget(targets: readonly HttpTarget[]): void {
    const served = this.#l.intakes?.map((n) => n.toLowerCase());
    this.#byKey.clear();
    this.#byName.clear();
    for (const t of targets) {
      this.#byName.set(t.intake.toLowerCase(), t);
      if (t.intakeKey && (!served || served.includes(t.intake.toLowerCase()))) this.#byKey.set(t.intakeKey, t);
    }
    this.#routes = new Map(
      this.#l.paths.map((r) => [
        r.path,
        { target: this.#byName.get(r.intake.toLowerCase()) as HttpTarget, format: r.format, token: r.bearer_token ? Buffer.from(r.bearer_token) : undefined },
      ]),
    );
  }

  get port(): number {
    return (this.#server?.address() as AddressInfo | null)?.port ?? this.#l.port;
  }

  async start(): Promise<void> {
    const l = this.#l;
    const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => void this.#handle(req, res);
    // Node checks header and request timeouts only this often (30 s by default): check often
    // enough that a slow client is cut off close to its deadline.
    const connectionsCheckingInterval = Math.max(100, Math.min(5000, Math.floor(Math.min(l.headers_timeout_ms, l.request_timeout_ms) / 4)));
    const server = l.tlsFiles
      ? https.createServer(
          { cert: l.tlsFiles.cert, key: l.tlsFiles.key, ca: l.tlsFiles.ca, requestCert: !!l.tlsFiles.ca, rejectUnauthorized: !!l.tlsFiles.ca, minVersion: 'TLSv1.2', connectionsCheckingInterval },
          handler,
        )
      : http.createServer({ connectionsCheckingInterval }, handler);
    server.headersTimeout = l.headers_timeout_ms;
    server.requestTimeout = l.request_timeout_ms;
    server.keepAliveTimeout = l.keep_alive_timeout_ms;
    server.maxConnections = l.max_connections;
    server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
      // Once answered, the parser may report the connection's end again: count each client once.
      if (!socket.writable) {
        socket.destroy();
        return;
      }
      const slow = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
      this.#count(slow ? 'slow_client' : 'bad_request');
      socket.end(slow ? 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n' : 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      this.#warn(slow ? 'slow' : 'client', { err: err.message }, slow ? 'Slow client cut off (headers_timeout_ms / request_timeout_ms).' : 'Malformed HTTP request.');
    });
    this.#server = server;
    await listen(server, l.address, l.port, `listener ${l.label}`);
  }

  #count(reason: Reason): void {
    this.#metrics.httpInputRefused.inc({ listener: this.#l.label, reason });
  }

  #warn(key: string, fields: object, msg: string): void {
    const suppressed = this.#limiter.allow(key);
    if (suppressed !== undefined) this.#log.warn({ listener: this.#l.label, ...fields, suppressed }, msg);
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://relay');
    try {
      const route = this.#routes.get(url.pathname);
      const api = !route && ['/jsons', '/plain', '/plain/batch', '/batch', '/array'].includes(url.pathname);
      if (!route && !api) throw new HttpError(404, 'not_found', `No such endpoint: ${url.pathname}. The intake API is /jsons, /plain, /plain/batch, /batch and /array.`);
      if (req.method !== 'POST') throw new HttpError(405, 'method_not_allowed', `${req.method ?? '?'} is not allowed here: use POST.`, { allow: 'POST' });
      const body = await this.#body(req);
      const sender = senderAddress(req.socket.remoteAddress);
      if (route) {
        this.#authorizeRoute(req, route.token);
        const events = route.format === 'ndjson' ? this.#ndjson(body, sender) : this.#lines(body, sender);
        await this.#accept(res, url, route.target, events, false);
        return;
      }
      await this.#intakeApi(req, res, url, body, sender);
    } catch (err) {
      const e = err instanceof HttpError ? err : new HttpError(500, 'bad_request', 'Internal error.');
      if (!(err instanceof HttpError)) this.#log.error({ listener: this.#l.label, err }, 'HTTP input failed on a request.');
      this.#count(e.reason);
      if (!res.headersSent) {
        res.writeHead(e.status, { 'content-type': 'application/json', ...e.headers, ...(e.status === 413 ? { connection: 'close' } : {}) });
        res.end(`${JSON.stringify({ error: e.message, reason: e.reason })}\n`);
      }
      if (e.status === 413) req.resume();
    }
  }

  /** The request body, within max_body_bytes, gunzipped within max_decompressed_bytes. */
  async #body(req: http.IncomingMessage): Promise<Buffer> {
    const l = this.#l;
    const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
    if (encoding !== 'identity' && encoding !== 'gzip') throw new HttpError(415, 'unsupported_encoding', `Content-Encoding ${encoding} is not supported: use gzip or none.`);
    const type = (req.headers['content-type'] ?? '').toLowerCase();
    // The body is read as JSON or text whatever it is labelled (curl --data labels it as a form);
    // only multipart, a different body format altogether, is refused.
    if (type.startsWith('multipart/')) {
      throw new HttpError(415, 'unsupported_media_type', `Content-Type ${type} is not supported: send JSON or plain text.`);
    }
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > l.max_body_bytes) throw new HttpError(413, 'body_too_large', `Body of ${declared} bytes exceeds ${l.max_body_bytes}.`);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > l.max_body_bytes) throw new HttpError(413, 'body_too_large', `Body exceeds ${l.max_body_bytes} bytes.`);
      chunks.push(chunk);
    }
    const raw = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
    if (encoding !== 'gzip') return raw;
    try {
      return await gunzip(raw, { maxOutputLength: l.max_decompressed_bytes });
    } catch (err) {
      if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
        throw new HttpError(413, 'body_too_large', `Body exceeds ${l.max_decompressed_bytes} bytes once decompressed.`);
      }
      throw new HttpError(400, 'bad_request', 'Body is not valid gzip.');
    }
  }

  #authorizeRoute(req: http.IncomingMessage, token: Buffer | undefined): void {
    if (!token) return;
    const given = Buffer.from(/^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '');
    if (given.length !== token.length || !timingSafeEqual(given, token)) {
      throw new HttpError(401, 'unauthorized', 'A valid "Authorization: Bearer <token>" is needed.', { 'www-authenticate': 'Bearer' });
    }
  }

  /** The key from the request (Basic password, X-SEKOIAIO-INTAKE-KEY, ?intake_key=), if any. */
  #requestKey(req: http.IncomingMessage, url: URL): string | undefined {
    const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (basic) {
      const decoded = Buffer.from(basic, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      return colon >= 0 ? decoded.slice(colon + 1) : decoded;
    }
    const header = req.headers['x-sekoiaio-intake-key'];
    if (typeof header === 'string' && header) return header;
    return url.searchParams.get('intake_key') ?? undefined;
  }

  #target(key: string | undefined): HttpTarget {
    const t = key ? this.#byKey.get(key) : undefined;
    if (!t) throw new HttpError(401, 'unauthorized', key ? 'This intake key is not served here.' : 'No intake key: give it as Basic password, X-SEKOIAIO-INTAKE-KEY or ?intake_key=.', { 'www-authenticate': 'Basic realm="intake"' });
    return t;
  }

  async #intakeApi(req: http.IncomingMessage, res: http.ServerResponse, url: URL, body: Buffer, sender: string): Promise<void> {
    const path = url.pathname;
    if (path === '/plain') {
      await this.#accept(res, url, this.#target(this.#requestKey(req, url)), this.#fromStrings([body.toString('utf8')], sender), true);
      return;
    }
    if (path === '/plain/batch') {
      await this.#accept(res, url, this.#target(this.#requestKey(req, url)), this.#lines(body, sender), false);
      return;
    }
    const doc = parseJson(body);
    if (path === '/jsons') {
      const target = this.#target(this.#requestKey(req, url));
      const list = select(doc, url.searchParams.get('path'));
      await this.#accept(res, url, target, this.#fromStrings(list.map(eventText), sender), false);
      return;
    }
    if (path === '/batch') {
      const o = doc as { intake_key?: unknown; jsons?: unknown };
      if (typeof o !== 'object' || o === null || !Array.isArray(o.jsons)) throw new HttpError(400, 'not_a_list', 'Expected {"intake_key": "...", "jsons": [...]}.');
      const target = this.#target(typeof o.intake_key === 'string' ? o.intake_key : this.#requestKey(req, url));
      await this.#accept(res, url, target, this.#fromStrings(o.jsons.map(eventText), sender), false);
      return;
    }
    // /array: [{"intake_key", "json"}], possibly for several intakes; unknown keys refused per event.
    if (!Array.isArray(doc)) throw new HttpError(400, 'not_a_list', 'Expected [{"intake_key": "...", "json": ...}, ...].');
    const groups = new Map<HttpTarget, string[]>();
    const refused: { index: number; error: string }[] = [];
    doc.forEach((item: unknown, index) => {
      const o = item as { intake_key?: unknown; json?: unknown };
      const t = typeof o === 'object' && o !== null && typeof o.intake_key === 'string' ? this.#byKey.get(o.intake_key) : undefined;
      if (!t || o.json === undefined) {
        refused.push({ index, error: t ? 'no "json" member' : 'intake key not served here' });
        return;
      }
      let g = groups.get(t);
      if (!g) groups.set(t, (g = []));
      g.push(eventText(o.json));
    });
    if (groups.size === 0) throw new HttpError(401, 'unauthorized', 'No element carries an intake key served here.');
    const total = [...groups.values()].reduce((n, g) => n + g.length, 0);
    if (total > this.#l.max_events_per_request) throw new HttpError(413, 'too_many_events', `More than ${this.#l.max_events_per_request} events in one request.`);
    // Admit every group or none, so a retry after 429 does not duplicate part of the request.
    const batches = [...groups].map(([t, strings]) => ({ t, built: this.#fromStrings(strings, sender) }));
    for (const { t } of batches) this.#checkRoom(t);
    let accepted = 0;
    const ends: [HttpTarget, number][] = [];
    for (const { t, built } of batches) {
      accepted += this.#admit(t, built);
      ends.push([t, t.queue.nextSeq]);
    }
    await this.#settled(ends);
    if (refused.length > 0) this.#count('unauthorized');
    this.#answer(res, url, accepted, refused.concat(batches.flatMap(({ built }) => built.refused)), false);
  }

  /** Events from strings: encoded into one buffer per request, each event a range of it. */
  #fromStrings(strings: readonly string[], sender: string): Built {
    if (strings.length > this.#l.max_events_per_request) throw new HttpError(413, 'too_many_events', `More than ${this.#l.max_events_per_request} events in one request.`);
    let total = 0;
    for (const s of strings) total += Buffer.byteLength(s, 'utf8');
    const buf = Buffer.allocUnsafe(total);
    const ranges: [number, number][] = [];
    let off = 0;
    for (const s of strings) {
      const n = buf.write(s, off, 'utf8');
      ranges.push([off, off + n]);
      off += n;
    }
    return this.#build(buf, ranges, sender);
  }

  /** Events from lines of the body (LF or CRLF), empty lines skipped: ranges of the body itself. */
  #lines(raw: Buffer, sender: string): Built {
    // Invalid UTF-8 becomes U+FFFD (counted per event); valid bodies are used in place.
    const repaired = !isUtf8(raw);
    const body = repaired ? Buffer.from(raw.toString('utf8')) : raw;
    const ranges: [number, number][] = [];
    let pos = 0;
    while (pos < body.length) {
      let end = body.indexOf(0x0a, pos);
      const next = end < 0 ? body.length : end + 1;
      if (end < 0) end = body.length;
      if (end > pos && body[end - 1] === 0x0d) end--;
      if (end > pos) ranges.push([pos, end]);
      pos = next;
    }
    if (ranges.length > this.#l.max_events_per_request) throw new HttpError(413, 'too_many_events', `More than ${this.#l.max_events_per_request} events in one request.`);
    const built = this.#build(body, ranges, sender);
    if (repaired) built.repaired = built.events.filter((e) => body.subarray(e.start, e.end).includes(REPLACEMENT)).length;
    return built;
  }

  /** NDJSON: each line one JSON value; strings are their text, other values their JSON text. */
  #ndjson(body: Buffer, sender: string): Built {
    const strings: string[] = [];
    let lineNo = 0;
    for (const line of body.toString('utf8').split('\n')) {
      lineNo++;
      const t = line.trim();
      if (t === '') continue;
      let v: unknown;
      try {
        v = JSON.parse(t);
      } catch {
        throw new HttpError(400, 'invalid_json', `Line ${lineNo} is not valid JSON.`);
      }
      strings.push(typeof v === 'string' ? v : t);
    }
    return this.#fromStrings(strings, sender);
  }

  /** LogEvents over `buf`; events over max_message_bytes are truncated or refused (counted). */
  #build(buf: Buffer, ranges: [number, number][], sender: string): Built {
    const l = this.#l;
    const events: LogEvent[] = [];
    const refused: { index: number; error: string }[] = [];
    let bytes = 0;
    let truncated = 0;
    const now = Date.now();
    const d = this.#defaults;
    ranges.forEach(([start, endIn], index) => {
      let end = endIn;
      if (end - start > l.max_message_bytes) {
        if (l.oversize === 'drop') {
          refused.push({ index, error: `event larger than ${l.max_message_bytes} bytes` });
          return;
        }
        end = utf8Boundary(buf, start, start + l.max_message_bytes);
        truncated++;
      }
      bytes += end - start;
      events.push(headerlessEvent(buf, start, end, now, sender, d));
    });
    return { events, bytes, refused, truncated, repaired: 0 };
  }

  #checkRoom(t: HttpTarget): void {
    if (t.queue.closed) throw new HttpError(503, 'shutdown', 'intake-relay is shutting down.', { 'retry-after': '5' });
    if (t.queue.full) {
      throw new HttpError(429, 'throttled', `The queue of intake "${t.intake}" is full: retry later.`, { 'retry-after': String(t.queue.retryAfterSeconds()) });
    }
  }

  /** Puts the events in the queue (the caller checked there is room); returns how many. */
  #admit(t: HttpTarget, b: Built): number {
    const m = this.#metrics;
    const labels = { intake: t.intake, input: this.#l.label };
    const received = b.events.length + b.refused.length;
    m.eventsReceived.inc(labels, received);
    m.bytesReceived.inc(labels, b.bytes);
    if (b.refused.length > 0) m.eventsDropped.inc({ intake: t.intake, stage: 'input', reason: 'too_large' }, b.refused.length);
    if (b.truncated > 0) m.eventsModified.inc({ ...labels, reason: 'truncated' }, b.truncated);
    if (b.repaired > 0) m.eventsModified.inc({ ...labels, reason: 'invalid_utf8' }, b.repaired);
    let events = b.events;
    let bytes = b.bytes;
    if (!t.filters.empty) {
      const f = applyFilters(t, b.events, m);
      if (f.filtered > 0) m.eventsDropped.inc({ intake: t.intake, stage: 'input', reason: 'filtered' }, f.filtered);
      events = f.events;
      bytes = f.bytes;
    }
    if (events.length === 0) return 0;
    const r = t.queue.admit(events, bytes);
    if (r !== 'ok') {
      // Checked just before, in the same turn of the event loop: cannot happen; never lose silently.
      m.eventsDropped.inc({ intake: t.intake, stage: 'input', reason: r === 'closed' ? 'shutdown' : 'queue_full' }, events.length);
      throw new HttpError(503, 'shutdown', 'The queue refused the events.', { 'retry-after': '5' });
    }
    return events.length;
  }

  async #accept(res: http.ServerResponse, url: URL, t: HttpTarget, b: Built, single: boolean): Promise<void> {
    this.#checkRoom(t);
    const accepted = this.#admit(t, b);
    await this.#settled([[t, t.queue.nextSeq]]);
    this.#answer(res, url, accepted, b.refused, single);
  }

  /**
   * The answer waits until the request's events are safe: in a disk queue (written when admitted),
   * or, with a memory queue, delivered (respond_when: auto). respond_when: queued answers at once.
   */
  async #settled(ends: readonly [HttpTarget, number][]): Promise<void> {
    if (this.#l.respond_when === 'queued') return;
    const waits = ends.filter(([t]) => !t.queue.durable).map(([t, end]) => t.queue.untilSettled(end));
    if (waits.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), this.#l.delivery_timeout_ms)));
    const r = await Promise.race([Promise.all(waits), timeout]);
    clearTimeout(timer);
    if (r === 'timeout') {
      throw new HttpError(503, 'not_delivered', `The events were queued but not delivered to the intake within ${this.#l.delivery_timeout_ms} ms: retry (they may arrive twice).`, { 'retry-after': '10' });
    }
  }

  /** The success answer: status_code= honoured; counts and relay-side ids like the intake's. */
  #answer(res: http.ServerResponse, url: URL, accepted: number, refused: { index: number; error: string }[], single: boolean): void {
    const asked = Number(url.searchParams.get('status_code'));
    const status = Number.isInteger(asked) && asked >= 200 && asked <= 299 ? asked : 200;
    const ids = Array.from({ length: accepted }, () => randomUUID());
    const body = single && refused.length === 0 ? { event_id: ids[0], accepted } : { event_ids: ids, accepted, ...(refused.length > 0 ? { refused } : {}) };
    this.#metrics.httpInputRequests.inc({ listener: this.#l.label, status: String(status) });
    res.writeHead(status, { 'content-type': 'application/json' }).end(`${JSON.stringify(body)}\n`);
  }

  async stop(): Promise<void> {
    const s = this.#server;
    this.#server = undefined;
    if (!s) return;
    const closed = new Promise<void>((resolve) => s.close(() => resolve()));
    s.closeIdleConnections();
    const timer = setTimeout(() => s.closeAllConnections(), 1000);
    await closed;
    clearTimeout(timer);
  }
}

interface Built {
  readonly events: LogEvent[];
  readonly bytes: number;
  readonly refused: { index: number; error: string }[];
  readonly truncated: number;
  /** Events whose invalid UTF-8 was replaced. */
  repaired: number;
}

const REPLACEMENT = Buffer.from('\uFFFD');

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new HttpError(400, 'invalid_json', 'The body is not valid JSON.');
  }
}

/** `?path=` as the intake reads it: `$` then `.member` steps (e.g. `$.events`); the result must be a list. */
function select(doc: unknown, path: string | null): unknown[] {
  let v: unknown = doc;
  if (path && path !== '$') {
    if (!path.startsWith('$.')) throw new HttpError(400, 'path_not_found', `path must look like $.events, not "${path}".`);
    for (const step of path.slice(2).split('.')) {
      if (typeof v !== 'object' || v === null || !(step in v)) throw new HttpError(400, 'path_not_found', `path ${path} selects nothing in the body.`);
      v = (v as Record<string, unknown>)[step];
    }
  }
  if (!Array.isArray(v)) throw new HttpError(400, 'not_a_list', path ? `path ${path} does not select a list.` : 'Expected a JSON list of events (or give ?path=).');
  return v;
}
