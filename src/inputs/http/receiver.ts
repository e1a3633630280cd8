// HTTP(S) receiver, the server: the intake's own API (/jsons, /plain, /plain/batch, /batch, /array),
// so a sender configured for the intake only changes its base URL, and per-intake routes for
// newline-delimited events; their bodies are decoded by decoders.ts. The key the sender presents
// selects the intake; a key of no intake served here gets 401. The answer is sent only once the
// events are in the intake's queue; a full queue gets 429 with a Retry-After from how fast it
// drains, never "accepted, then dropped". Every refusal is counted. Requests in flight share one
// memory budget (max_inflight_bytes: 429 when it is used up), JSON nests at most max_depth deep,
// and a listener stopped by a reload finishes what is in flight.

import { randomUUID, timingSafeEqual } from 'node:crypto';
import type * as Http from 'node:http';
import { http, https } from '../../platform/builtins.ts';
import net, { type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ResolvedHttpListener } from './config.ts';
import { BodyBudget, type BudgetLease } from './budget.ts';
import { readBody } from './body.ts';
import { INTAKE_API, routeDecoder, type ApiFacts, type Built, type Decoded, type DecodeSettings, type Refusal } from './decoders.ts';
import { HttpError } from './error.ts';
import type { Inlet, Target } from '../../core/component.ts';
import { listen } from '../../platform/net.ts';
import type { HttpInputTelemetry } from '../../core/telemetry.ts';
import { senderAddress } from '../frame-builder.ts';
import { ProxyAcceptor } from '../proxied.ts';

/** For /readyz: the listener's memory budget, and whether it is turning requests away. */
export interface HttpListenerHealth {
  readonly name: string;
  readonly inflightBytes: number;
  readonly budgetBytes: number;
  readonly saturated: boolean;
}

/** Decodes a request to this listener: an intake-API path's decoder, or a route's. */
type Decode = (body: Buffer, s: DecodeSettings, f: ApiFacts<Target>) => Decoded<Target>;

/** A per-intake route (`paths`): its intake, its format's decoder, the bearer token it asks for. */
interface Route {
  readonly target: Target;
  readonly decode: Decode;
  readonly token: Buffer | undefined;
}

export class HttpReceiver {
  readonly #l: ResolvedHttpListener;
  readonly #inlet: Inlet;
  /** The inlet's targets the maps below were made from: a reload replaces them. */
  #mapped: readonly Target[] | undefined;
  readonly #byKey = new Map<string, Target>();
  readonly #byName = new Map<string, Target>();
  readonly #t: HttpInputTelemetry;
  readonly #decode: DecodeSettings;
  #routes = new Map<string, Route>();
  #server: Http.Server | undefined;
  /** With the PROXY protocol: what listens, handing each connection to #server once its header is read. */
  #outer: net.Server | undefined;
  #proxy: ProxyAcceptor | undefined;
  readonly #budget: BodyBudget;
  /** Requests not yet answered, for a stop to finish. */
  readonly #inflight = new Set<Http.ServerResponse>();
  /** Connections with requests being handled (their end, if the client goes, is counted there). */
  readonly #reading = new WeakMap<Duplex, number>();
  #stopping = false;
  #stopInflight: (() => void) | undefined;
  /** A stopped server's requests in flight, for finish(). */
  #closing: Http.Server | undefined;
  #closed: Promise<void> = Promise.resolve();

  constructor(listener: ResolvedHttpListener, inlet: Inlet, telemetry: HttpInputTelemetry) {
    this.#l = listener;
    this.#inlet = inlet;
    this.#t = telemetry;
    this.#map();
    const d = listener.defaults;
    this.#decode = {
      maxDepth: listener.max_depth,
      maxEvents: listener.max_events_per_request,
      maxMessageBytes: listener.max_message_bytes,
      oversize: listener.oversize,
      defaults: { pri: d.facility * 8 + d.severity, hostname: d.hostname ?? '', appName: d.app_name ?? '', procId: d.procid ?? '' },
    };
    this.#budget = new BodyBudget(listener.max_inflight_bytes);
  }

  /** For /readyz: saturated while requests are turned away for want of memory budget. */
  health(): HttpListenerHealth {
    return { name: this.#l.label, inflightBytes: this.#budget.used, budgetBytes: this.#budget.capacity, saturated: this.#budget.saturated };
  }

  get label(): string {
    return this.#l.label;
  }

  /** Keys and routes of the intakes it serves, made again when a reload changed the inlet's targets. */
  #map(): void {
    const targets = this.#inlet.targets;
    if (targets === this.#mapped) return;
    this.#mapped = targets;
    const served = this.#l.intakes?.map((n) => n.toLowerCase());
    this.#byKey.clear();
    this.#byName.clear();
    for (const t of targets) {
      this.#byName.set(t.intake.toLowerCase(), t);
      if (t.intakeKey && (!served || served.includes(t.intake.toLowerCase()))) this.#byKey.set(t.intakeKey, t);
    }
    this.#routes = new Map(
      this.#l.paths.map((r): [string, Route] => {
        const target = this.#byName.get(r.intake.toLowerCase()) as Target;
        return [r.path, { target, decode: routeDecoder(target, r.format), token: r.bearer_token ? Buffer.from(r.bearer_token) : undefined }];
      }),
    );
  }

  get port(): number {
    return ((this.#outer ?? this.#server)?.address() as AddressInfo | null)?.port ?? this.#l.port;
  }

  get where(): string {
    return `on port ${this.port}`;
  }

  async start(): Promise<void> {
    const l = this.#l;
    const handler = (req: Http.IncomingMessage, res: Http.ServerResponse): void => {
      // #handle answers every error itself; anything that still escapes must not take the process down.
      this.#handle(req, res).catch((err: unknown) => {
        this.#t.log.error('internal', err, {}, 'HTTP input failed on a request.');
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
      this.#t.refused(slow ? 'slow_client' : 'bad_request');
      socket.end(slow ? 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n' : 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      // Not the error itself: Node attaches the request's raw bytes (rawPacket), keys and all.
      const { code, reason } = err as NodeJS.ErrnoException & { reason?: string };
      this.#t.log.warn(slow ? 'slow' : 'client', { code, reason: reason ?? err.message }, slow ? 'Slow client cut off (headers_timeout_ms / request_timeout_ms).' : 'Malformed HTTP request.');
    });
    this.#server = server;
    const proxy = l.proxy ? new ProxyAcceptor(l.proxy, this.#t, l.headers_timeout_ms) : undefined;
    this.#proxy = proxy;
    if (proxy) {
      // Connections reach the HTTP(S) server once their PROXY header is read (TLS starts then).
      const outer = net.createServer((raw) =>
        proxy.accept(raw, (r) => {
          // As http.Server does for the connections it accepts itself.
          r.setNoDelay(true);
          server.emit('connection', r);
          if (!l.tlsFiles) r.resume();
        }),
      );
      outer.maxConnections = l.max_connections;
      this.#outer = outer;
    }
    await listen(this.#outer ?? server, l.address, l.port, `listener ${l.label}`, true);
    // The HTTP server never listens itself: told that its listener does, it tracks the connections
    // handed to it (headers and request timeouts, closing idle and all connections at a stop).
    if (this.#outer) server.emit('listening');
    this.#stopInflight = this.#t.inflightBytes(() => this.#budget.used);
  }

  async #handle(req: Http.IncomingMessage, res: Http.ServerResponse): Promise<void> {
    this.#map();
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
      const decode = route ? route.decode : INTAKE_API.get(url.pathname);
      if (!decode) throw new HttpError(404, 'not_found', `No such endpoint: ${url.pathname}. The intake API is /jsons, /plain, /plain/batch, /batch and /array.`);
      if (req.method !== 'POST') throw new HttpError(405, 'method_not_allowed', `${req.method ?? '?'} is not allowed here: use POST.`, { allow: 'POST' });
      if (route) this.#authorizeRoute(req, route.token);
      // A full queue refuses before the body is read (reading it only to refuse it costs memory
      // for nothing) when the intake is known from the route or a key in the headers.
      const key = route ? undefined : this.#requestKey(req, url);
      const known = route ? route.target : url.pathname.startsWith('/plain') || url.pathname === '/jsons' ? this.#byKey.get(key ?? '') : undefined;
      if (known) this.#checkRoom(known);
      const l = this.#l;
      const body = await readBody(req, { maxBodyBytes: l.max_body_bytes, maxDecompressedBytes: l.max_decompressed_bytes }, lease);
      // Answered meanwhile (503 at the end of a stop's grace): its events must not go in after all.
      if (res.headersSent) return;
      const byKey = this.#byKey;
      const facts: ApiFacts<Target> = {
        sender: this.#proxy ? this.#proxy.origin(req.socket) : senderAddress(req.socket.remoteAddress), receivedAt: Date.now(), lease, key, path: url.searchParams.get('path'), target: (k) => byKey.get(k),
      };
      await this.#accept(res, url, decode(body, this.#decode, facts), lease, facts.receivedAt);
    } catch (err) {
      const e = err instanceof HttpError ? err : new HttpError(500, 'bad_request', 'Internal error.');
      // Already answered (a stop's 503): counted then.
      if (res.headersSent) return;
      if (e.reason === 'client_closed') {
        this.#clientClosed();
        return;
      }
      this.#t.refused(e.reason);
      if (!(err instanceof HttpError)) this.#t.log.error('internal', err, {}, 'HTTP input failed on a request.');
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
    this.#t.refused('client_closed');
    this.#t.log.info('client_closed', {}, 'Clients closed connections before the end of their request (counted as refused, reason client_closed).');
  }

  #authorizeRoute(req: Http.IncomingMessage, token: Buffer | undefined): void {
    if (!token) return;
    const given = Buffer.from(/^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '');
    if (given.length !== token.length || !timingSafeEqual(given, token)) {
      throw new HttpError(401, 'unauthorized', 'A valid "Authorization: Bearer <token>" is needed.', { 'www-authenticate': 'Bearer' });
    }
  }

  /** The key from the request (Basic password, X-SEKOIAIO-INTAKE-KEY, ?intake_key=), if any. */
  #requestKey(req: Http.IncomingMessage, url: URL): string | undefined {
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

  #checkRoom(t: Target): void {
    if (t.queue.closed) throw new HttpError(503, 'shutdown', 'intake-relay is shutting down.', { 'retry-after': '5' });
    if (t.queue.full) {
      throw new HttpError(429, 'throttled', `The queue of intake "${t.intake}" is full: retry later.`, { 'retry-after': String(t.queue.retryAfterSeconds()) });
    }
  }

  /** Puts the events in the queue (the caller checked there is room); returns how many. */
  #admit(t: Target, b: Built): number {
    this.#inlet.refuse(t, 'too_large', b.refused.length);
    if (b.truncated > 0) this.#t.modified(t.intake, 'truncated', b.truncated);
    if (b.repaired > 0) this.#t.modified(t.intake, 'invalid_utf8', b.repaired);
    const { result, admitted } = this.#inlet.admit(t, b.events, b.bytes);
    // Room was checked just before, in the same turn of the event loop: a refusal here (counted
    // by the sender) means the queue closed for a stop.
    if (result !== 'ok') throw new HttpError(503, 'shutdown', 'The queue refused the events.', { 'retry-after': '5' });
    return admitted;
  }


  /** Queues a request's events and answers; for several intakes (/array), every batch or none. */
  async #accept(res: Http.ServerResponse, url: URL, d: Decoded<Target>, lease: BudgetLease, receivedAt: number): Promise<void> {
    // Room for every batch first, so a retry after 429 does not duplicate part of the request.
    for (const { target } of d.batches) this.#checkRoom(target);
    let accepted = 0;
    const ends: [Target, number][] = [];
    for (const { target, built } of d.batches) {
      accepted += this.#admit(target, built);
      ends.push([target, target.queue.nextSeq]);
      this.#t.senders.hosts(built.events, receivedAt);
    }
    // Queued: the queue's own limits hold them from here.
    lease.end();
    await this.#settled(ends);
    if (d.refused.length > 0) this.#t.refused('unauthorized');
    this.#answer(res, url, accepted, d.refused.concat(d.batches.flatMap(({ built }) => built.refused)), d.single);
  }

  /**
   * The answer waits until the request's events are safe: in a disk queue (written when admitted),
   * or, with a memory queue, delivered (respond_when: auto). respond_when: queued answers at once.
   */
  async #settled(ends: readonly [Target, number][]): Promise<void> {
    if (this.#l.respond_when === 'queued') return;
    // A disk queue another thread owns (a worker's listener): once that thread wrote them.
    const waits = ends.flatMap(([t, end]) => {
      const q = t.queue;
      if (!q.durable) return [q.untilSettled(end)];
      return q.untilWritten ? [q.untilWritten(end)] : [];
    });
    if (waits.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), this.#l.delivery_timeout_ms)));
    let r: unknown;
    try {
      r = await Promise.race([Promise.all(waits), timeout]);
    } catch {
      clearTimeout(timer);
      throw new HttpError(503, 'shutdown', 'The queue refused the events.', { 'retry-after': '5' });
    }
    clearTimeout(timer);
    if (r === 'timeout') {
      throw new HttpError(503, 'not_delivered', `The events were queued but not delivered to the intake within ${this.#l.delivery_timeout_ms} ms: retry (they may arrive twice).`, { 'retry-after': '10' });
    }
  }

  /** The success answer: status_code= honoured; counts and relay-side ids like the intake's. */
  #answer(res: Http.ServerResponse, url: URL, accepted: number, refused: Refusal[], single: boolean): void {
    const asked = Number(url.searchParams.get('status_code'));
    const status = Number.isInteger(asked) && asked >= 200 && asked <= 299 ? asked : 200;
    if (res.headersSent) return; // a stop's 503 went first
    const ids = Array.from({ length: accepted }, () => randomUUID());
    const body = single && refused.length === 0 ? { event_id: ids[0], accepted } : { event_ids: ids, accepted, ...(refused.length > 0 ? { refused } : {}) };
    this.#t.answered(status);
    res.writeHead(status, { 'content-type': 'application/json', ...(this.#stopping ? { connection: 'close' } : {}) }).end(`${JSON.stringify(body)}\n`);
  }

  /**
   * Stops taking connections at once (the port is free for a replacement as soon as this is
   * called) and finishes what is in flight: each request is answered as usual, with Connection:
   * close, so keep-alive clients reconnect to whatever listens next instead of being cut (idle ones
   * are closed now). One still unanswered after `graceMs` gets 503 + Retry-After. Resolves once
   * every connection is closed.
   */
  /**
   * Stops accepting connections at once (the port is free for a new listener); requests in flight
   * go on, and are finished by finish().
   */
  async stop(): Promise<void> {
    const s = this.#server;
    this.#server = undefined;
    if (!s) return;
    this.#stopping = true;
    this.#stopInflight?.();
    this.#stopInflight = undefined;
    const outer = this.#outer;
    this.#outer = undefined;
    if (outer) {
      // The HTTP server never listened: its close() only closes its idle connections; the
      // listening server's close waits for every connection.
      this.#closed = new Promise<void>((resolve) => outer.close(() => resolve()));
      s.close(() => {});
      this.#proxy?.close();
    } else {
      this.#closed = new Promise<void>((resolve) => s.close(() => resolve()));
    }
    this.#closing = s;
  }

  /**
   * Waits for the requests in flight (answered as usual, with Connection: close) up to `graceMs`;
   * those still unanswered then get 503 with Retry-After, and what that cannot close is cut.
   */
  async finish(graceMs = this.#l.delivery_timeout_ms): Promise<void> {
    const s = this.#closing;
    if (!s) return;
    this.#closing = undefined;
    let last: NodeJS.Timeout | undefined;
    const grace = setTimeout(() => {
      for (const res of this.#inflight) {
        if (res.headersSent) continue;
        this.#t.refused('shutdown');
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1', connection: 'close' });
        res.end(`${JSON.stringify({ error: 'This listener is being restarted or stopped: retry.', reason: 'shutdown' })}\n`);
      }
      // What the answers above cannot close (a client that reads nothing) is cut a second later.
      last = setTimeout(() => s.closeAllConnections(), 1_000);
    }, graceMs);
    await this.#closed;
    clearTimeout(grace);
    clearTimeout(last);
  }
}
