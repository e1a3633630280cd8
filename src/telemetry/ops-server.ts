// The operations endpoint: /metrics (Prometheus), /healthz (the process answers), /readyz (200
// while the relay takes events: see the daemon's ready() and the readiness setting), /status (the
// same body, always 200: per intake its output state, queue, rates and backlog and whether it is
// stalled; per input its senders and the silent ones), /snapshot (counters and gauges per intake,
// input and thread at one instant, for intake-relay top), /senders (every input's table of senders), /tap (events live,
// one JSON object per line, for intake-relay tap; local clients only unless metrics.tap says any).

import type * as Http from 'node:http';
import { http } from '../platform/builtins.ts';
import { isIPv4, type AddressInfo } from 'node:net';
import type { Writable } from 'node:stream';
import { listen } from '../platform/net.ts';
import { secretMask } from './secret-mask.ts';
import { isoUtc } from '../core/iso-time.ts';

export interface IntakeHealth {
  readonly name: string;
  readonly output: string;
  readonly state: string;
  readonly queuedEvents: number;
  readonly unackedEvents: number;
  readonly lastDeliveryAt: number;
  readonly lastError: string | undefined;
  readonly stalled: boolean;
  /** Its queue takes events (not full under when_full: block). */
  readonly accepting: boolean;
}

/** What /status adds to an intake: its rates over the last minute and its backlog (runtime/backlog.ts). */
export interface IntakeProgress {
  readonly events_in_per_s?: number;
  readonly events_out_per_s?: number;
  readonly backlog: object | null;
}

export interface ListenerHealth {
  readonly name: string;
  readonly inflightBytes: number;
  readonly budgetBytes: number;
  readonly saturated: boolean;
}

/** One input's table of senders (pipeline/senders.ts). */
export interface SendersView {
  /** '' for a shared listener. */
  readonly intake: string;
  readonly input: string;
  readonly size: number;
  readonly silentCount: number;
  /** The silent senders first, then the most recently seen. */
  rows(limit: number, silentOnly?: boolean): readonly object[];
}

export interface HealthSource {
  readonly phase: 'starting' | 'running' | 'draining' | 'stopped';
  /** What /readyz answers 200 for (the readiness setting decides whether stalled intakes count). */
  ready(): boolean;
  readonly readiness: string;
  /** Inputs and listeners configured but not running (a reload could not start them). */
  down(): string[];
  health(): IntakeHealth[];
  /** HTTP listeners' memory budgets. */
  listenerHealth?(): ListenerHealth[];
  /** Every input's senders. */
  senders?(): readonly SendersView[];
  /** Rates and backlog of an intake (in /status). */
  progress?(intake: string): IntakeProgress;
  /** The relay now, for `intake-relay top` (/snapshot). */
  snapshot?(): Promise<object>;
  /** A live view of events written to `out`; or why not, as an HTTP status and a message. */
  tap?(q: TapRequest, out: Writable): { readonly status: number; readonly error: string } | undefined;
}

export interface TapRequest {
  readonly intake: string | undefined;
  readonly input: string | undefined;
  readonly limit: number;
  readonly rate: number;
}

export interface OpsOptions {
  /** Who may use /tap. */
  readonly tap: 'local' | 'any' | 'off';
}

/** A client on this host: 127.0.0.0/8 or ::1 (IPv4-mapped too). */
export function isLocal(addr: string | undefined): boolean {
  if (!addr) return false;
  const v4 = addr.startsWith('::ffff:') ? addr.slice(7) : addr;
  return (isIPv4(v4) && v4.startsWith('127.')) || addr === '::1';
}

/** A whole number from a query parameter within [min, max], or `fallback` when absent; undefined when invalid. */
function intParam(q: URLSearchParams, name: string, fallback: number, min: number, max: number): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return fallback;
  const n = Number(v);
  return Number.isInteger(n) && n >= min && n <= max ? n : undefined;
}

export interface MetricsText {
  readonly contentType: string;
  scrape(): Promise<string>;
}

/** Silent senders named per input in /status (all of them: /senders?silent=1). */
const STATUS_SILENT = 20;

export class OpsServer {
  readonly #server: Http.Server;
  readonly #metrics: MetricsText;
  readonly #source: HealthSource;
  readonly #options: OpsOptions;

  /** `metrics`: the exposition's content type, and the text of a scrape (the workers' metrics added). */
  constructor(metrics: MetricsText, source: HealthSource, options: OpsOptions = { tap: 'local' }) {
    this.#metrics = metrics;
    this.#source = source;
    this.#options = options;
    this.#server = http.createServer((req, res) => this.#route(req, res));
    this.#server.keepAliveTimeout = 5_000;
    this.#server.headersTimeout = 10_000;
  }

  #route(req: Http.IncomingMessage, res: Http.ServerResponse): void {
    const source = this.#source;
    const url = (req.url ?? '/').split('?')[0];
    if (url === '/tap' && source.tap) {
      if (req.method !== 'GET') res.writeHead(405, { allow: 'GET' }).end();
      else this.#tap(req, res, source, this.#options);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (url === '/metrics') {
      this.#body(res, this.#metrics.scrape(), this.#metrics.contentType);
      return;
    }
    if (url === '/snapshot' && source.snapshot) {
      this.#body(res, source.snapshot().then((s) => `${secretMask.mask(JSON.stringify(s))}\n`), 'application/json');
      return;
    }
    if (url === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      return;
    }
    if (url === '/readyz' || url === '/status') {
      this.#status(res, url === '/status');
      return;
    }
    if (url === '/senders' && source.senders) {
      this.#senders(req, res, source.senders());
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found. Try /metrics, /healthz, /readyz, /status, /snapshot, /senders, /tap.\n');
  }

  /** A body computed asynchronously: 200 with it, or 500 with why not. */
  #body(res: Http.ServerResponse, body: Promise<string>, contentType: string): void {
    body.then(
      (text) => res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' }).end(text),
      (err: unknown) => res.writeHead(500).end(String(err)),
    );
  }

  /** /readyz (200 when ready, else 503) and /status (always 200, with rates, backlogs and senders). */
  #status(res: Http.ServerResponse, full: boolean): void {
    const source = this.#source;
    const intakes = source.health();
    const listeners = source.listenerHealth?.() ?? [];
    const ready = source.ready();
    const down = source.down();
    const body = JSON.stringify({
      ready,
      phase: source.phase,
      readiness: source.readiness,
      ...(down.length > 0 ? { down } : {}),
      intakes: intakes.map((i) => ({
        name: i.name,
        output: i.output,
        state: i.state,
        accepting: i.accepting,
        stalled: i.stalled,
        queued_events: i.queuedEvents,
        unacked_events: i.unackedEvents,
        last_delivery: i.lastDeliveryAt ? isoUtc(i.lastDeliveryAt) : null,
        last_error: i.lastError ?? null,
        ...(full ? source.progress?.(i.name) : {}),
      })),
      ...(listeners.length > 0
        ? { listeners: listeners.map((l) => ({ name: l.name, saturated: l.saturated, inflight_bytes: l.inflightBytes, budget_bytes: l.budgetBytes })) }
        : {}),
      ...(full && source.senders
        ? {
            inputs: source.senders().map((t) => ({
              ...(t.intake ? { intake: t.intake } : {}),
              input: t.input,
              senders: t.size,
              silent: t.silentCount,
              ...(t.silentCount > 0 ? { silent_senders: t.rows(STATUS_SILENT, true) } : {}),
            })),
          }
        : {}),
    });
    // A last error or a sender's name may quote a key: masked as the logs are.
    res.writeHead(full || ready ? 200 : 503, { 'content-type': 'application/json' }).end(`${secretMask.mask(body)}\n`);
  }

  /** /senders: every input's table, or those the query names. */
  #senders(req: Http.IncomingMessage, res: Http.ServerResponse, all: readonly SendersView[]): void {
    const q = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
    const limit = intParam(q, 'limit', 1000, 1, 1_000_000);
    const silent = q.get('silent') ?? '0';
    const input = q.get('input');
    const intake = q.get('intake');
    const bad = limit === undefined ? 'limit must be a whole number from 1 to 1000000.'
      : !['0', '1', 'true', 'false'].includes(silent) ? 'silent must be 1 or 0.'
        : input !== null && !all.some((t) => t.input === input) ? `No input or listener named "${input}": they are ${all.map((t) => `"${t.input}"`).join(', ')}.`
          : intake !== null && !all.some((t) => t.intake.toLowerCase() === intake.toLowerCase()) ? `No input of an intake named "${intake}".`
            : undefined;
    if (bad !== undefined || limit === undefined) {
      res.writeHead(400, { 'content-type': 'application/json' }).end(`${JSON.stringify({ error: bad })}\n`);
      return;
    }
    const silentOnly = silent === '1' || silent === 'true';
    const tables = all.filter((t) => (input === null || t.input === input) && (intake === null || t.intake.toLowerCase() === intake.toLowerCase()));
    const body = tables.map((t) => ({ ...(t.intake ? { intake: t.intake } : {}), input: t.input, tracked: t.size, silent: t.silentCount, senders: t.rows(limit, silentOnly) }));
    res.writeHead(200, { 'content-type': 'application/json' }).end(`${secretMask.mask(JSON.stringify({ inputs: body }))}\n`);
  }

  #tap(req: Http.IncomingMessage, res: Http.ServerResponse, source: HealthSource, options: OpsOptions): void {
    const refuse = (status: number, error: string): void => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(`${JSON.stringify({ error })}\n`);
    };
    if (options.tap === 'off') return refuse(403, 'The tap is off (metrics.tap: off).');
    // On this host: loopback, or the host's own address when the server listens on it.
    if (options.tap === 'local' && !isLocal(req.socket.remoteAddress) && req.socket.remoteAddress !== req.socket.localAddress) {
      return refuse(403, 'The tap answers clients on this host only (metrics.tap: local): run intake-relay tap on the relay\'s host.');
    }
    const q = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
    const limit = intParam(q, 'limit', 0, 0, 1e9);
    const rate = intParam(q, 'rate', 100, 1, 1000);
    if (limit === undefined || rate === undefined) return refuse(400, 'limit must be a whole number >= 0 (0: no limit), rate a whole number from 1 to 1000.');
    // Headers go out once the view is open: a problem with the query is still a 400.
    res.setHeader('content-type', 'application/x-ndjson');
    res.setHeader('cache-control', 'no-store');
    const problem = source.tap!({ intake: q.get('intake') ?? undefined, input: q.get('input') ?? undefined, limit, rate }, res);
    if (problem) {
      res.removeHeader('content-type');
      return refuse(problem.status, problem.error);
    }
    res.flushHeaders();
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  start(address: string, port: number): Promise<void> {
    return listen(this.#server, address, port, 'metrics');
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
