// Turns the frames of one read (a TCP chunk or a UDP datagram) into events, offers them to the
// intake's queue in one call and updates the input's metrics once per read, not per event. Events
// keep referring to the read's buffer (Node gives each read its own, exactly sized): no copy.

import { isAscii, isUtf8 } from 'node:buffer';
import type { LogEvent } from '../core/event.ts';
import type { EventQueue, OfferResult } from '../core/queue.ts';
import type { FilterSet } from '../routing/filters.ts';
import { ROUTE_DROP, type Router } from '../routing/router.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { FrameSink } from '../syslog/framing.ts';
import { fieldCache, headerlessEvent, parseSyslog, type HeaderDefaults } from '../syslog/parse.ts';

/**
 * One intake an input can feed: its queue and its filters. A reload changes the filters (and a
 * queue's limits) in place, so running inputs see them at once.
 */
export interface Target {
  readonly intake: string;
  readonly queue: EventQueue;
  filters: FilterSet;
}

export interface InputContext {
  /** The input's name in metrics (the listener's, for shared listeners). */
  readonly input: string;
  readonly metrics: Metrics;
  readonly defaults: HeaderDefaults;
  /** The intakes this input feeds; a plain input has one. A reload may replace them (shared listeners). */
  targets: readonly Target[];
  /** Picks the target of each event on a shared listener; absent: everything goes to targets[0]. */
  router?: Router;
}

/** The intake a plain input belongs to, for labels and messages; '' for a shared listener. */
export function ownerIntake(ctx: InputContext): string {
  return ctx.router ? '' : (ctx.targets[0]?.intake ?? '');
}

/**
 * Drops the events an intake's filters match (counted per rule); returns the rest, their bytes,
 * and how many were dropped. One pass, shared by every input.
 */
export function applyFilters(target: Target, events: LogEvent[], metrics: Metrics): { events: LogEvent[]; bytes: number; filtered: number } {
  const kept: LogEvent[] = [];
  let bytes = 0;
  for (const e of events) {
    const rule = target.filters.match(e);
    if (rule >= 0) {
      metrics.eventsFiltered.inc({ intake: target.intake, rule: target.filters.name(rule) });
      continue;
    }
    kept.push(e);
    bytes += e.end - e.start;
  }
  return { events: kept, bytes, filtered: events.length - kept.length };
}

function targetCounters(m: Metrics, intake: string, input: string) {
  return {
    received: m.eventsReceived.labels({ intake, input }),
    bytes: m.bytesReceived.labels({ intake, input }),
    queueFull: m.eventsDropped.labels({ intake, stage: 'input', reason: 'queue_full' }),
    closed: m.eventsDropped.labels({ intake, stage: 'input', reason: 'shutdown' }),
    filtered: m.eventsDropped.labels({ intake, stage: 'input', reason: 'filtered' }),
  };
}

/** The input's counters: per input (framing, repairs) and per target intake (received, drops). */
export function inputCounters(ctx: InputContext) {
  const { metrics: m, input } = ctx;
  // Repairs and oversize drops happen before routing: they are counted under the first intake for
  // a plain input, and under the listener for a shared one.
  const owner = ownerIntake(ctx);
  const perIntake = new Map<string, ReturnType<typeof targetCounters>>();
  return {
    /** Counters for the intake a target feeds (made on first use: targets may change on reload). */
    target(intake: string) {
      let c = perIntake.get(intake);
      if (!c) perIntake.set(intake, (c = targetCounters(m, intake, input)));
      return c;
    },
    invalidUtf8: m.eventsModified.labels({ intake: owner, input, reason: 'invalid_utf8' }),
    invalidHeader: m.eventsModified.labels({ intake: owner, input, reason: 'invalid_header' }),
    truncated: m.eventsModified.labels({ intake: owner, input, reason: 'truncated' }),
    tooLarge: ctx.router ? m.routeDropped.labels({ listener: input, reason: 'too_large' }) : m.eventsDropped.labels({ intake: owner, stage: 'input', reason: 'too_large' }),
    tooLargeReceived: ctx.router ? undefined : m.eventsReceived.labels({ intake: owner, input }),
    oversizeFrames: m.framingErrors.labels({ intake: owner, input, reason: 'too_large' }),
    paused: m.inputPaused.labels({ intake: owner, input }),
    routeDrop: m.routeDropped.labels({ listener: input, reason: 'route_drop' }),
    noRoute: m.routeDropped.labels({ listener: input, reason: 'no_route' }),
  };
}
export type InputCounters = ReturnType<typeof inputCounters>;

export class EventBuilder implements FrameSink {
  readonly #ctx: InputContext;
  readonly #c: InputCounters;
  readonly #canPause: boolean;
  readonly #parse: boolean;
  readonly #alwaysWait: boolean;
  readonly #fields = fieldCache();
  #events: LogEvent[] = [];
  #bytes = 0;
  #sender = '';
  #chunk: Buffer | undefined;
  #receivedAt = 0;
  #utf8 = true;
  #invalid = 0;
  #truncated = 0;
  #tooLarge = 0;
  readonly #slow = new Set<EventQueue>();

  /**
   * `canPause`: the input can stop reading when told to slow down (TCP, files); `alwaysWait`: it
   * does so even under drop_newest, because its data keeps (files). `parse`: read a syslog header
   * where a frame has one; false: every frame is a whole message.
   */
  constructor(ctx: InputContext, counters: InputCounters, canPause: boolean, parse = true, alwaysWait = false) {
    this.#ctx = ctx;
    this.#c = counters;
    this.#canPause = canPause;
    this.#parse = parse;
    this.#alwaysWait = alwaysWait;
  }

  #event(buf: Buffer, start: number, end: number): LogEvent {
    return this.#parse
      ? parseSyslog(buf, start, end, this.#receivedAt, this.#sender, this.#ctx.defaults, this.#fields)
      : headerlessEvent(buf, start, end, this.#receivedAt, this.#sender, this.#ctx.defaults);
  }

  /** Events built and not yet offered. */
  get pending(): number {
    return this.#events.length;
  }

  /** Start a read: one reception time and one encoding check for all its frames. */
  begin(chunk: Buffer, sender: string): void {
    this.#sender = sender;
    this.#chunk = chunk;
    this.#receivedAt = Date.now();
    this.#utf8 = isAscii(chunk) || isUtf8(chunk);
  }

  frame(buf: Buffer, start: number, end: number, truncated: boolean): void {
    if (truncated) {
      end = utf8Boundary(buf, start, end);
      this.#truncated++;
    }
    // The read was checked as a whole; a frame joined from an earlier read's tail was not. A part
    // of valid UTF-8 is valid when it neither starts nor ends inside a character, which an octet
    // count (or the end of a skipped oversized frame) may not respect.
    const checked = buf === this.#chunk && this.#utf8 && !isContinuation(buf[start]) && !isContinuation(buf[end]);
    if (!checked && !isUtf8(buf.subarray(start, end))) {
      // Forward what a UTF-8 decoder makes of it (U+FFFD for each bad sequence), never bad bytes.
      this.#invalid++;
      const fixed = Buffer.from(buf.toString('utf8', start, end), 'utf8');
      this.#events.push(this.#event(fixed, 0, fixed.length));
      // The queue accounts each event by its own size: the repaired one's.
      this.#bytes += fixed.length;
      return;
    }
    this.#events.push(this.#event(buf, start, end));
    this.#bytes += end - start;
  }

  oversized(): void {
    this.#tooLarge++;
  }

  /** Offer what this read produced; returns what the caller must do (pause on slow_down). */
  flush(): OfferResult {
    const c = this.#c;
    if (this.#tooLarge > 0) {
      c.tooLarge.inc(this.#tooLarge);
      c.oversizeFrames.inc(this.#tooLarge);
      c.tooLargeReceived?.inc(this.#tooLarge);
      this.#tooLarge = 0;
    }
    if (this.#invalid > 0) {
      c.invalidUtf8.inc(this.#invalid);
      this.#invalid = 0;
    }
    if (this.#truncated > 0) {
      c.truncated.inc(this.#truncated);
      this.#truncated = 0;
    }
    if (this.#fields.repaired > 0) {
      c.invalidHeader.inc(this.#fields.repaired);
      this.#fields.repaired = 0;
    }
    const events = this.#events;
    if (events.length === 0) return 'ok';
    const bytes = this.#bytes;
    this.#events = [];
    this.#bytes = 0;
    const { targets, router } = this.#ctx;
    if (!router) return this.#offer(0, events, bytes);
    // Shared listener: group the read's events by intake, keeping their order within each.
    const groups: (LogEvent[] | undefined)[] = [];
    let routeDrops = 0;
    let noRoute = 0;
    for (const e of events) {
      const t = router.route(e);
      if (t < 0) {
        if (t === ROUTE_DROP) routeDrops++;
        else noRoute++;
        continue;
      }
      (groups[t] ??= []).push(e);
    }
    if (routeDrops > 0) c.routeDrop.inc(routeDrops);
    if (noRoute > 0) c.noRoute.inc(noRoute);
    let result: OfferResult = 'ok';
    for (let t = 0; t < targets.length; t++) {
      const g = groups[t];
      if (!g) continue;
      let groupBytes = 0;
      for (const e of g) groupBytes += e.end - e.start;
      if (this.#offer(t, g, groupBytes) === 'slow_down') result = 'slow_down';
    }
    return result;
  }

  /** Filters, counts and offers one target's events (`bytes`: their total size). */
  #offer(t: number, all: LogEvent[], bytes: number): OfferResult {
    const target = this.#ctx.targets[t] as Target;
    const c = this.#c.target(target.intake);
    c.received.inc(all.length);
    c.bytes.inc(bytes);
    let events = all;
    if (!target.filters.empty) {
      const f = applyFilters(target, all, this.#ctx.metrics);
      if (f.filtered > 0) c.filtered.inc(f.filtered);
      if (f.events.length === 0) return 'ok';
      events = f.events;
      bytes = f.bytes;
    }
    const queue = target.queue;
    const r = queue.offer(events, bytes, this.#canPause, this.#alwaysWait);
    if (r.dropped > 0) (queue.closed ? c.closed : c.queueFull).inc(r.dropped);
    if (r.result === 'slow_down') this.#slow.add(queue);
    return r.result;
  }

  /** Resolves when every queue that asked this input to slow down has room again. */
  writable(): Promise<void> {
    const qs = [...this.#slow];
    this.#slow.clear();
    return Promise.all(qs.map((q) => q.writable())).then(() => undefined);
  }
}

/** "::ffff:10.0.0.1" -> "10.0.0.1". */
export function senderAddress(addr: string | undefined): string {
  if (!addr) return '';
  return addr.startsWith('::ffff:') ? addr.slice(7) : addr;
}

/** A UTF-8 continuation byte (10xxxxxx); false past the end of the buffer. */
function isContinuation(b: number | undefined): boolean {
  return b !== undefined && (b & 0xc0) === 0x80;
}

/** `end`, moved back so that [start, end) does not finish inside a multi-byte UTF-8 sequence. */
export function utf8Boundary(buf: Buffer, start: number, end: number): number {
  let k = end - 1;
  let cont = 0;
  while (k > start && ((buf[k] as number) & 0xc0) === 0x80 && cont < 3) {
    k--;
    cont++;
  }
  const lead = buf[k] as number;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return end - k < need ? k : end;
}
