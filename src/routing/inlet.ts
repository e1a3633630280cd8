// The one way into intake queues. Every source hands its events to its Inlet, which routes them
// (a shared listener's router, or the one intake of a plain input), applies each intake's drop
// rules, counts what each intake received and what was dropped with the reason, and offers the rest
// to the queue. Whether its source can pause is fixed when it is made. Sources that answer "later"
// (HTTP) take a whole request or nothing with admit(); the same counting applies.

import type { Routing, Inlet as InletContract, Target } from '../core/component.ts';
import type { DropReason } from '../core/contracts.ts';
import type { LogEvent } from '../core/event.ts';
import type { AdmitResult, EventQueue, OfferMode, OfferResult } from '../core/event-queue.ts';
import type { EventTap, InletTelemetry } from '../core/telemetry.ts';
import { ROUTE_DROP } from './router.ts';

export interface InletOptions {
  /** What its source does when a queue cannot take more (EventQueue.offer). */
  readonly mode: OfferMode;
  /** The relay's own reports (forwarder statistics): not subject to the intakes' drop rules. */
  readonly unfiltered?: boolean;
}

export class Inlet implements InletContract {
  #routing: Routing;
  readonly #o: InletOptions;
  readonly #t: InletTelemetry;
  readonly #tap: EventTap | undefined;
  readonly #slow = new Set<EventQueue>();

  /** `tap`: the live view of its events, when it has one. */
  constructor(routing: Routing, options: InletOptions, telemetry: InletTelemetry, tap?: EventTap) {
    this.#routing = routing;
    this.#o = options;
    this.#t = telemetry;
    this.#tap = tap;
  }

  /** The intake of a plain input, for labels; '' for a shared listener. */
  get owner(): string {
    return this.#routing.router ? '' : (this.#routing.targets[0]?.intake ?? '');
  }

  get targets(): readonly Target[] {
    return this.#routing.targets;
  }

  /** A reload changed the intakes or the routes: both change in one step, between two reads. */
  retarget(routing: Routing): void {
    this.#routing = routing;
  }

  send(events: LogEvent[], bytes: number): OfferResult {
    if (events.length === 0) return 'ok';
    const { targets, router } = this.#routing;
    if (!router) return targets[0] ? this.#offer(targets[0], events, bytes) : 'ok';
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
    if (routeDrops > 0) this.#t.unrouted('route_drop', routeDrops);
    if (noRoute > 0) this.#t.unrouted('no_route', noRoute);
    let result: OfferResult = 'ok';
    for (let t = 0; t < targets.length; t++) {
      const g = groups[t];
      if (!g) continue;
      let groupBytes = 0;
      for (const e of g) groupBytes += e.end - e.start;
      if (this.#offer(targets[t] as Target, g, groupBytes) === 'slow_down') result = 'slow_down';
    }
    return result;
  }

  /**
   * All of `events` or none, for sources that can answer "later": filtered and counted as received
   * first (what the filters drop is settled at once), then admitted whole or refused.
   */
  refuse(target: Target, reason: DropReason, events: number): void {
    if (events <= 0) return;
    this.#t.received(target.intake, events, 0);
    this.#t.dropped(target.intake, reason, events);
  }

  admit(target: Target, events: LogEvent[], bytes: number): { result: AdmitResult; admitted: number } {
    this.#t.received(target.intake, events.length, bytes);
    if (this.#tap?.active) this.#tap.events(target.intake, events);
    const kept = this.#filter(target, events, bytes);
    if (kept.events.length === 0) return { result: 'ok', admitted: 0 };
    const result = target.queue.admit(kept.events, kept.bytes);
    if (result !== 'ok') {
      this.#t.dropped(target.intake, result === 'closed' ? 'shutdown' : 'queue_full', kept.events.length);
      return { result, admitted: 0 };
    }
    return { result, admitted: kept.events.length };
  }

  /** Resolves when every queue that asked this source to slow down has room again. */
  writable(): Promise<void> {
    const qs = [...this.#slow];
    this.#slow.clear();
    return Promise.all(qs.map((q) => q.writable())).then(() => undefined);
  }

  /** Filters, counts and offers one target's events (`bytes`: their total size). */
  #offer(target: Target, all: LogEvent[], bytes: number): OfferResult {
    this.#t.received(target.intake, all.length, bytes);
    if (this.#tap?.active) this.#tap.events(target.intake, all);
    const { events, bytes: kept } = this.#filter(target, all, bytes);
    if (events.length === 0) return 'ok';
    const queue = target.queue;
    const r = queue.offer(events, kept, this.#o.mode);
    if (r.dropped > 0) this.#t.dropped(target.intake, queue.closed ? 'shutdown' : 'queue_full', r.dropped);
    if (r.result === 'slow_down') this.#slow.add(queue);
    return r.result;
  }

  /** Drops the events an intake's filters match (counted per rule); one pass, the rest kept in order. */
  #filter(target: Target, events: LogEvent[], bytes: number): { events: LogEvent[]; bytes: number } {
    if (target.filters.empty || this.#o.unfiltered) return { events, bytes };
    const kept: LogEvent[] = [];
    let keptBytes = 0;
    for (const e of events) {
      const rule = target.filters.match(e);
      if (rule >= 0) {
        this.#t.filtered(target.intake, target.filters.name(rule));
        continue;
      }
      kept.push(e);
      keptBytes += e.end - e.start;
    }
    const dropped = events.length - kept.length;
    if (dropped > 0) this.#t.dropped(target.intake, 'filtered', dropped);
    return { events: kept, bytes: keptBytes };
  }
}
