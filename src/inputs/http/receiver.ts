// HTTP(S) receiver: the intake's own API (/jsons, /plain, /plain/batch, /batch, /array), so a sender
// configured for the intake only changes its base URL, and per-intake routes for newline-delimited
// events. The key the sender presents selects the intake; a key of no intake served here gets 401.
// The answer is sent only once the events are in the intake's queue; a full queue gets 429 with a
// Retry-After from how fast it drains, never "accepted, then dropped". Every refusal is counted.
// Requests in flight share one memory budget (max_inflight_bytes: 429 when it is used up), JSON
// nests at most max_depth deep, and a listener stopped by a reload finishes what is in flight.

import { isUtf8 } from 'node:buffer';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { LogEvent } from '../../core/event.ts';
import type { ResolvedHttpListener } from '../../config/load.ts';
import { RateLimiter } from '../../core/rate-limiter.ts';
import type { Metrics } from '../../telemetry/metrics.ts';
import type { ListenerHealth } from '../../telemetry/ops-server.ts';
import { BodyBudget, type BudgetLease } from './budget.ts';
import { readBody, refuseUnless } from './body.ts';
import { HttpError, type Reason } from './error.ts';
import { scanJson } from './json-scan.ts';
import { listen } from '../../core/net.ts';
import { applyFilters, utf8Boundary, senderAddress, type Target } from '../event-builder.ts';
import { headerlessEvent, type HeaderDefaults } from '../../syslog/parse.ts';

/** An intake this listener can feed. */
export interface HttpTarget extends Target {
  readonly intakeKey: string;
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
  readonly #budget: BodyBudget;
  /** Requests not yet answered, for a stop to finish. */
  readonly #inflight = new Set<http.ServerResponse>();
  /** Connections with requests being handled (their end, if the client goes, is counted there). */
  readonly #reading = new WeakMap<Duplex, number>();
  #stopping = false;
  #disposeProbe: (() => void) | undefined;

  constructor(listener: ResolvedHttpListener, targets: readonly HttpTarget[], metrics: Metrics, log: Logger) {
    this.#l = listener;
    this.#metrics = metrics;
    this.#log = log;
    this.retarget(targets);
    const d = listener.defaults;
    this.#defaults = { pri: d.facility * 8 + d.severity, hostname: d.hostname ?? '', appName: d.app_name ?? '', procId: d.procid ?? '' };
    this.#budget = new BodyBudget(listener.max_inflight_bytes);
  }

  /** For /readyz: saturated while requests are turned away for want of memory budget. */
  health(): ListenerHealth {
    return { name: this.#l.label, inflightBytes: this.#budget.used, budgetBytes: this.#budget.capacity, saturated: this.#budget.saturated };
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
    const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
      // #handle answers every error itself; anything that still escapes must not take the process down.
      this.#handle(req, res).catch((err: unknown) => {
        this.#note('error', 'internal', { err }, 'HTTP input failed on a request.');
        res.destroy();
      });
    };
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
      // The connection ended inside a request: the client went away. A request whose body was
      // being read is counted by its handler; one cut off in its headers is counted here.
      if (err.code === 'HPE_INVALID_EOF_STATE' || err.code === 'ECONNRESET') {
        socket.destroy();
        if (!this.#reading.get(socket)) this.#clientClosed();
        return;
      }
      const slow = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
      this.#count(slow ? 'slow_client' : 'bad_request');
      socket.end(slow ? 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n' : 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      this.#warn(slow ? 'slow' : 'client', { err: err.message }, slow ? 'Slow client cut off (headers_timeout_ms / request_timeout_ms).' : 'Malformed HTTP request.');
    });
    this.#server = server;
    await listen(server, l.address, l.port, `listener ${l.label}`);
    const m = this.#metrics;
    this.#disposeProbe = m.addProbe(() => m.httpInputInflightBytes.set({ listener: l.label }, this.#budget.used));
  }

  #count(reason: Reason): void {
    this.#metrics.httpInputRefused.inc({ listener: this.#l.label, reason });
  }

  #warn(key: string, fields: object, msg: string): void {
    this.#note('warn', key, fields, msg);
  }

  /** A log line that could fire per request: one per interval per key, carrying how many it stood for. */
  #note(level: 'info' | 'warn' | 'error', key: string, fields: object, msg: string): void {
    const suppressed = this.#limiter.allow(key);
    if (suppressed !== undefined) this.#log[level]({ listener: this.#l.label, ...fields, suppressed }, msg);
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const lease = this.#budget.lease();
    this.#inflight.add(res);
    const socket = req.socket;
    this.#reading.set(socket, (this.#reading.get(socket) ?? 0) + 1);
    res.once('close', () => this.#inflight.delete(res));
    try {
      // Node hands over any request target; one that is no URL at all is the client's error.
      const url = URL.parse(req.url ?? '/', 'http://relay');
      if (!url) throw new HttpError(400, 'bad_request', 'The request target is not a valid URL.');
      const route = this.#routes.get(url.pathname);
      const api = !route && ['/jsons', '/plain', '/plain/batch', '/batch', '/array'].includes(url.pathname);
      if (!route && !api) throw new HttpError(404, 'not_found', `No such endpoint: ${url.pathname}. The intake API is /jsons, /plain, /plain/batch, /batch and /array.`);
      if (req.method !== 'POST') throw new HttpError(405, 'method_not_allowed', `${req.method ?? '?'} is not allowed here: use POST.`, { allow: 'POST' });
      if (route) this.#authorizeRoute(req, route.token);
      // A full queue refuses before the body is read (reading it only to refuse it costs memory
      // for nothing) when the intake is known from the route or a key in the headers.
      const known = route ? route.target : url.pathname.startsWith('/plain') || url.pathname === '/jsons' ? this.#byKey.get(this.#requestKey(req, url) ?? '') : undefined;
      if (known) this.#checkRoom(known);
      const l = this.#l;
      const body = await readBody(req, { maxBodyBytes: l.max_body_bytes, maxDecompressedBytes: l.max_decompressed_bytes }, lease);
      // Answered meanwhile (503 at the end of a stop's grace): its events must not go in after all.
      if (res.headersSent) return;
      const sender = senderAddress(req.socket.remoteAddress);
      if (route) {
        const events = route.format === 'ndjson' ? this.#ndjson(body, sender, lease) : this.#lines(body, sender);
        await this.#accept(res, url, route.target, events, false, lease);
        return;
      }
      await this.#intakeApi(req, res, url, body, sender, lease);
    } catch (err) {
      const e = err instanceof HttpError ? err : new HttpError(500, 'bad_request', 'Internal error.');
      // Already answered (a stop's 503): counted then.
      if (res.headersSent) return;
      if (e.reason === 'client_closed') {
        this.#clientClosed();
        return;
      }
      this.#count(e.reason);
      if (!(err instanceof HttpError)) this.#note('error', 'internal', { err }, 'HTTP input failed on a request.');
      const close = e.status === 413 || this.#stopping;
      res.writeHead(e.status, { 'content-type': 'application/json', ...e.headers, ...(close ? { connection: 'close' } : {}) });
      res.end(`${JSON.stringify({ error: e.message, reason: e.reason })}\n`);
      // The rest of a refused body is read and dropped, so the client gets the answer, not a reset.
      if (!req.complete) req.resume();
    } finally {
      lease.end();
      this.#reading.set(socket, (this.#reading.get(socket) ?? 1) - 1);
    }
  }

  /** Nobody to answer, and nothing wrong here: a client went away (its timeout, a restart, a crash). */
  #clientClosed(): void {
    this.#count('client_closed');
    this.#note('info', 'client_closed', {}, 'Clients closed connections before the end of their request (counted as refused, reason client_closed).');
  }

  /** JSON text within max_depth, and its parse within the memory budget; a deeper body gets 400 before anything recurses on it. */
  #parse(body: Buffer, lease: BudgetLease, what: string): void {
    const scan = scanJson(body, this.#l.max_depth);
    if (scan.tooDeep) throw new HttpError(400, 'too_deep', `${what} nests deeper than ${this.#l.max_depth} levels (max_depth).`);
    refuseUnless(lease.take(scan.parseBytes), lease, `Parsing ${what.toLowerCase()}`);
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

  async #intakeApi(req: http.IncomingMessage, res: http.ServerResponse, url: URL, body: Buffer, sender: string, lease: BudgetLease): Promise<void> {
    const path = url.pathname;
    if (path === '/plain') {
      await this.#accept(res, url, this.#target(this.#requestKey(req, url)), this.#fromStrings([body.toString('utf8')], sender), true, lease);
      return;
    }
    if (path === '/plain/batch') {
      await this.#accept(res, url, this.#target(this.#requestKey(req, url)), this.#lines(body, sender), false, lease);
      return;
    }
    this.#parse(body, lease, 'The body');
    const doc = parseJson(body);
    if (path === '/jsons') {
      const target = this.#target(this.#requestKey(req, url));
      const list = select(doc, url.searchParams.get('path'));
      await this.#accept(res, url, target, this.#fromStrings(list.map(eventText), sender), false, lease);
      return;
    }
    if (path === '/batch') {
      const o = doc as { intake_key?: unknown; jsons?: unknown };
      if (typeof o !== 'object' || o === null || !Array.isArray(o.jsons)) throw new HttpError(400, 'not_a_list', 'Expected {"intake_key": "...", "jsons": [...]}.');
      const target = this.#target(typeof o.intake_key === 'string' ? o.intake_key : this.#requestKey(req, url));
      await this.#accept(res, url, target, this.#fromStrings(o.jsons.map(eventText), sender), false, lease);
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
    lease.end();
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
  #ndjson(body: Buffer, sender: string, lease: BudgetLease): Built {
    this.#parse(body, lease, 'The body');
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

  async #accept(res: http.ServerResponse, url: URL, t: HttpTarget, b: Built, single: boolean, lease: BudgetLease): Promise<void> {
    this.#checkRoom(t);
    const accepted = this.#admit(t, b);
    // Queued: the queue's own limits hold them from here.
    lease.end();
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
    if (res.headersSent) return; // a stop's 503 went first
    const ids = Array.from({ length: accepted }, () => randomUUID());
    const body = single && refused.length === 0 ? { event_id: ids[0], accepted } : { event_ids: ids, accepted, ...(refused.length > 0 ? { refused } : {}) };
    this.#metrics.httpInputRequests.inc({ listener: this.#l.label, status: String(status) });
    res.writeHead(status, { 'content-type': 'application/json', ...(this.#stopping ? { connection: 'close' } : {}) }).end(`${JSON.stringify(body)}\n`);
  }

  /**
   * Stops taking connections at once (the port is free for a replacement as soon as this is
   * called) and finishes what is in flight: each request is answered as usual, with Connection:
   * close, so keep-alive clients reconnect to whatever listens next instead of being cut (idle ones
   * are closed now). One still unanswered after `graceMs` gets 503 + Retry-After. Resolves once
   * every connection is closed.
   */
  async stop(graceMs = this.#l.delivery_timeout_ms): Promise<void> {
    const s = this.#server;
    this.#server = undefined;
    if (!s) return;
    this.#stopping = true;
    this.#disposeProbe?.();
    this.#metrics.httpInputInflightBytes.remove({ listener: this.#l.label });
    const closed = new Promise<void>((resolve) => s.close(() => resolve()));
    let last: NodeJS.Timeout | undefined;
    const grace = setTimeout(() => {
      for (const res of this.#inflight) {
        if (res.headersSent) continue;
        this.#count('shutdown');
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1', connection: 'close' });
        res.end(`${JSON.stringify({ error: 'This listener is being restarted or stopped: retry.', reason: 'shutdown' })}\n`);
      }
      // What the answers above cannot close (a client that reads nothing) is cut a second later.
      last = setTimeout(() => s.closeAllConnections(), 1_000);
    }, graceMs);
    await closed;
    clearTimeout(grace);
    clearTimeout(last);
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
