// The live view of events (`intake-relay tap`, GET /tap on the operations port): each viewer gets
// the events of the intakes and inputs it asked for, as they leave the parser (routed, before the
// intake's filters), one JSON object per line. It never slows the pipeline: a viewer gets at most
// `rate` events a second, spread over what arrives (the rest skipped), and while its connection
// cannot take more, what it would have got is dropped and counted. No intake key is ever shown:
// one that appears in an event's text is masked. With workers, a view is one viewer per thread
// joined into one output (joinedTap).

import { Writable } from 'node:stream';
import type { LogEvent } from '../core/event.ts';
import { messageText, structuredDataText, timestampText } from '../core/event.ts';
import type { EventTap } from '../core/telemetry.ts';
import { isoUtc } from '../core/iso-time.ts';
import { FACILITIES, SEVERITIES } from '../syslog/priorities.ts';
import type { Metrics } from '../telemetry/metrics.ts';

export interface TapQuery {
  /** Only this intake's events (any case); undefined: every intake. */
  readonly intake?: string | undefined;
  /** Only this input's (or shared listener's) events; undefined: every input. */
  readonly input?: string | undefined;
  /** Events shown before the view ends; 0: until the viewer goes. */
  readonly limit: number;
  /** Most events shown a second. */
  readonly rate: number;
}

/** How often a viewer is told what it missed (skipped by its rate, dropped while it was slow). */
const NOTICE_MS = 5_000;
/** Viewers at once: each costs its rate of JSON lines in the sources' read path. */
export const MAX_VIEWERS = 8;

class Viewer {
  readonly q: TapQuery;
  readonly #out: Writable;
  readonly #mask: () => readonly string[];
  readonly #dropped: (events: number) => void;
  readonly #intake: string | undefined;
  #tokens: number;
  #refilled = performance.now();
  #blocked = false;
  shown = 0;
  skipped = 0;
  dropped = 0;
  #told = { skipped: 0, dropped: 0 };
  readonly #timer: NodeJS.Timeout;
  closed = false;

  constructor(q: TapQuery, out: Writable, mask: () => readonly string[], dropped: (events: number) => void, onClose: () => void) {
    this.q = q;
    this.#out = out;
    this.#mask = mask;
    this.#dropped = dropped;
    this.#intake = q.intake?.toLowerCase();
    this.#tokens = Math.min(q.rate, q.limit || q.rate);
    out.on('drain', () => (this.#blocked = false));
    out.once('close', () => {
      this.close();
      onClose();
    });
    this.#timer = setInterval(() => this.#notice(), NOTICE_MS);
    this.#timer.unref();
  }

  wants(input: string, intake: string): boolean {
    return !this.closed && (this.q.input === undefined || this.q.input === input) && (this.#intake === undefined || this.#intake === intake.toLowerCase());
  }

  /** Shows some of `events`: as many as its rate allows now, evenly spread over them. */
  show(input: string, intake: string, events: readonly LogEvent[]): void {
    const now = performance.now();
    this.#tokens = Math.min(this.q.rate, this.#tokens + ((now - this.#refilled) * this.q.rate) / 1000);
    this.#refilled = now;
    let room = Math.floor(this.#tokens);
    if (this.q.limit > 0) room = Math.min(room, this.q.limit - this.shown);
    const n = Math.min(room, events.length);
    this.skipped += events.length - n;
    if (n === 0) return;
    this.#tokens -= n;
    if (this.#blocked) {
      this.dropped += n;
      this.#dropped(n);
      return;
    }
    const step = events.length / n;
    const keys = this.#mask();
    let lines = '';
    for (let i = 0; i < n; i++) lines += this.#line(input, intake, events[Math.floor(i * step)] as LogEvent, keys);
    this.shown += n;
    if (!this.#out.write(lines)) this.#blocked = true;
    if (this.q.limit > 0 && this.shown >= this.q.limit) this.end();
  }

  #line(input: string, intake: string, e: LogEvent, keys: readonly string[]): string {
    let line = JSON.stringify({
      received_at: isoUtc(e.receivedAt),
      intake,
      input,
      sender: e.sender,
      facility: FACILITIES[e.pri >> 3] ?? e.pri >> 3,
      severity: SEVERITIES[e.pri & 7],
      header: e.format === 0 ? 'none' : `rfc${e.format}`,
      timestamp: timestampText(e) || null,
      hostname: e.hostname,
      app_name: e.appName,
      procid: e.procId,
      msgid: e.msgId,
      structured_data: structuredDataText(e),
      message: messageText(e),
    });
    for (const key of keys) if (key && line.includes(key)) line = line.replaceAll(key, '<intake key>');
    return `${line}\n`;
  }

  /** What it missed since the last notice, when it missed anything. */
  #notice(): void {
    const skipped = this.skipped - this.#told.skipped;
    const dropped = this.dropped - this.#told.dropped;
    if ((skipped === 0 && dropped === 0) || this.#blocked) return;
    this.#told = { skipped: this.skipped, dropped: this.dropped };
    const parts = [];
    if (skipped > 0) parts.push(`${skipped} events skipped (more than ${this.q.rate}/s)`);
    if (dropped > 0) parts.push(`${dropped} dropped (the viewer was not reading fast enough)`);
    this.#blocked = !this.#out.write(`${JSON.stringify({ notice: `${parts.join('; ')} in the last ${NOTICE_MS / 1000} s.`, skipped, dropped })}\n`);
  }

  end(): void {
    if (this.closed) return;
    this.close();
    this.#out.end();
  }

  close(): void {
    this.closed = true;
    clearInterval(this.#timer);
  }
}

/** Every viewer; each source's tap (`forInput`) is active only while one watches. */
export class Taps {
  readonly #viewers = new Set<Viewer>();
  readonly #m: Metrics;
  /** The intake keys in force, masked wherever they appear. */
  readonly #keys: () => readonly string[];

  constructor(metrics: Metrics, keys: () => readonly string[]) {
    this.#m = metrics;
    this.#keys = keys;
    metrics.tapViewers.set(0);
    metrics.tapDropped.inc(0);
  }

  get active(): boolean {
    return this.#viewers.size > 0;
  }

  /** The tap of the source `input`. */
  forInput(input: string): EventTap {
    const viewers = this.#viewers;
    return {
      get active() {
        return viewers.size > 0;
      },
      events(intake, events) {
        for (const v of viewers) if (v.wants(input, intake)) v.show(input, intake, events);
      },
    };
  }

  /** A viewer writing to `out` until it closes (or reaches its limit); false when MAX_VIEWERS watch already. */
  open(q: TapQuery, out: Writable): boolean {
    if (this.#viewers.size >= MAX_VIEWERS) return false;
    const v = new Viewer(q, out, this.#keys, (n) => this.#m.tapDropped.inc(n), () => {
      this.#viewers.delete(v);
      this.#m.tapViewers.set(this.#viewers.size);
    });
    this.#viewers.add(v);
    this.#m.tapViewers.set(this.#viewers.size);
    return true;
  }

  /** Ends every view (the daemon stops). */
  close(): void {
    for (const v of this.#viewers) v.end();
    this.#viewers.clear();
    this.#m.tapViewers.set(0);
  }
}

/** A notice line of a view (what it missed), as Viewer writes it: `{"notice": ...}`. */
function isNotice(line: string): boolean {
  return line.startsWith('{"notice"');
}

/**
 * A tap view across threads: the main thread's viewer writes to `local`, the workers' lines come to
 * `remote`; each thread shows its share of the rate, and `out` ends at the viewer's limit. Lines
 * that come while `out` cannot take more are dropped and counted, as a viewer's own are.
 */
export function joinedTap(q: TapQuery, out: Writable, threads: number, metrics: Metrics): { query: TapQuery; local: Writable; remote: (text: string) => void } {
  let shown = 0;
  /** Writes a thread's lines unless `out` cannot take more (then they are dropped and counted); ends `out` at the limit. */
  const take = (text: string): void => {
    if (out.writableEnded || out.destroyed) return;
    if (out.writableNeedDrain) {
      const n = text.split('\n').filter((l) => l && !isNotice(l)).length;
      if (n > 0) metrics.tapDropped.inc(n);
      return;
    }
    let lines = text;
    if (q.limit > 0) {
      const kept: string[] = [];
      for (const line of text.split('\n')) {
        if (!line) continue;
        const isEvent = !isNotice(line);
        if (isEvent && shown >= q.limit) continue;
        if (isEvent) shown++;
        kept.push(line);
      }
      lines = kept.length > 0 ? `${kept.join('\n')}\n` : '';
    }
    if (lines !== '') out.write(lines);
    if (q.limit > 0 && shown >= q.limit) out.end();
  };
  const local = new Writable({
    write(chunk: Buffer | string, _enc, cb) {
      take(chunk.toString());
      cb();
    },
  });
  out.once('close', () => local.destroy());
  // Each thread's viewer shows its share of the rate; the limit is the joined view's alone (a
  // thread's viewer counting toward it lines the view then dropped would stop short of it).
  return { query: { ...q, limit: 0, rate: Math.max(1, Math.ceil(q.rate / threads)) }, local, remote: take };
}
