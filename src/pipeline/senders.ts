// Who sends to each input: a bounded table per input of its senders (address; hostname for file and
// HTTP inputs) with events, bytes, first and last seen, so that "which firewall stopped sending?"
// has an answer. A sender seen within `known_within_ms` and silent for `silent_after_ms` is reported
// silent (a warning naming it, a gauge, /status), and again when it is back. When the table is full,
// the active sender seen longest ago makes room (counted): silent ones are kept to the last, so a
// flood of new senders cannot quietly clear a silence alert. Optionally one metric series per
// sender, capped: what does not fit is counted, never created.

import type { Logger } from 'pino';
import type { SendersConfig } from '../core/config-parts.ts';
import { byteSize, type LogEvent } from '../core/event.ts';
import { isoUtc } from '../core/iso-time.ts';
import type { Metrics } from '../telemetry/metrics.ts';

export type { SendersConfig };

interface Entry {
  events: number;
  bytes: number;
  readonly first: number;
  last: number;
  /** When it last moved to the end of its map (the order is the eviction order). */
  moved: number;
}

/** One row of /status and /senders. */
export interface SenderRow {
  readonly sender: string;
  readonly events: number;
  readonly bytes: number;
  readonly first_seen: string;
  readonly last_seen: string;
  readonly silent: boolean;
}

/** A sender moves to the end of the eviction order at most this often (a Map re-insert per read costs). */
const MOVE_MS = 1_000;
/** Senders named one line each when they go silent in the same check; beyond, one line for all. */
const NAMED_SILENT = 10;
/** A full table is logged at most this often (each eviction is counted). */
const EVICT_LOG_MS = 60_000;

/** What a worker thread's tables saw in the last second, for the main thread's tables: [intake, input, sender, events, bytes, first seen, last seen]. */
export type Sighting = readonly [string, string, string, number, number, number, number];

export class SenderTable {
  readonly intake: string;
  readonly input: string;
  /** In a worker: what it saw goes to the main thread's table, which alone keeps the table, tells silence and counts. */
  readonly #forward: ((s: Sighting) => void) | undefined;
  readonly #pending = new Map<string, [number, number, number, number]>();
  #c: SendersConfig;
  readonly #m: Metrics;
  readonly #log: Logger;
  readonly #labels: { intake: string; input: string };
  /** Senders not silent, about least recently seen first (a Map keeps insertion order). */
  readonly #active = new Map<string, Entry>();
  /** Known senders that went silent, in the order they did. */
  readonly #quiet = new Map<string, Entry>();
  /** Per-sender counters (senders.metrics), made once per sender. */
  readonly #series = new Map<string, { inc(n: number): void }>();
  #evicted = 0;
  #evictLogged = 0;
  /** What the gauges show: set only when it changes. */
  readonly #shown = { tracked: 0, silent: 0 };
  /** Tells the tables' timer when a check is due for what just changed (table time; -Infinity: the thresholds changed). */
  readonly #wake: ((due: number) => void) | undefined;

  /** `intake`: the input's intake, '' for a shared listener. */
  constructor(intake: string, input: string, config: SendersConfig, metrics: Metrics, log: Logger, forward?: (s: Sighting) => void, wake?: (due: number) => void) {
    this.intake = intake;
    this.input = input;
    this.#c = config;
    this.#m = metrics;
    this.#log = log;
    this.#labels = { intake, input };
    this.#forward = forward;
    this.#wake = wake;
    if (forward) return;
    metrics.sendersTracked.set(this.#labels, 0);
    metrics.sendersSilent.set(this.#labels, 0);
    metrics.sendersEvicted.inc(this.#labels, 0);
    if (config.metrics) metrics.senderSeriesOverflow.inc(this.#labels, 0);
  }

  /** A reload's settings; the next check applies thresholds and a smaller table. */
  configure(config: SendersConfig): void {
    this.#c = config;
    this.#wake?.(-Infinity);
    if (config.metrics) this.#m.senderSeriesOverflow.inc(this.#labels, 0);
    else this.#dropSeries();
  }

  /** `events` events of `bytes` bytes from `sender`, received at `now` (once per run of a read). */
  seen(sender: string, events: number, bytes: number, now: number, first = now): void {
    if (this.#forward) {
      const p = this.#pending.get(sender);
      if (p) {
        p[0] += events;
        p[1] += bytes;
        p[3] = now;
      } else {
        this.#pending.set(sender, [events, bytes, now, now]);
        if (this.#pending.size === 1) this.#wake?.(0);
      }
      return;
    }
    let e = this.#active.get(sender);
    if (e) {
      if (now - e.moved >= MOVE_MS) {
        this.#active.delete(sender);
        this.#active.set(sender, e);
        e.moved = now;
      }
    } else {
      e = this.#quiet.get(sender);
      if (e) {
        this.#quiet.delete(sender);
        this.#showSizes();
        this.#log.info({ ...this.#where(), sender, silent_for_s: Math.round((now - e.last) / 1000) }, 'A silent sender is sending again.');
        e.moved = now;
      } else {
        this.#makeRoom(this.#c.max_tracked - 1, now);
        e = { events: 0, bytes: 0, first, last: now, moved: now };
      }
      this.#active.set(sender, e);
      this.#showSizes();
      // Due to go silent: earlier than the timer when it waits for a quiet sender to be forgotten,
      // or for another input's longer threshold.
      this.#wake?.(Math.max(e.last, now) + this.#dueAfter());
    }
    e.events += events;
    e.bytes += bytes;
    // A worker's sightings arrive up to a second late.
    e.last = Math.max(e.last, now);
    if (this.#c.metrics) this.#count(sender, events);
  }

  /** A read's events by their HOSTNAME (file and HTTP inputs): one update per run of the same host. */
  seenHosts(events: readonly LogEvent[], now: number): void {
    let host = '';
    let n = 0;
    let bytes = 0;
    for (const e of events) {
      if (e.hostname !== host) {
        if (n > 0) this.seen(host, n, bytes, now);
        host = e.hostname;
        n = 0;
        bytes = 0;
      }
      n++;
      bytes += byteSize(e);
    }
    if (n > 0) this.seen(host, n, bytes, now);
  }

  /** Forgets senders until at most `keep` remain: active ones seen longest ago first, silent ones last. */
  #makeRoom(keep: number, now: number): void {
    let n = 0;
    while (this.size > keep) {
      const from = this.#active.size > 0 ? this.#active : this.#quiet;
      from.delete(from.keys().next().value as string);
      n++;
    }
    if (n === 0) return;
    this.#evicted += n;
    this.#m.sendersEvicted.inc(this.#labels, n);
    if (now - this.#evictLogged >= EVICT_LOG_MS) {
      this.#evictLogged = now;
      this.#log.warn({ ...this.#where(), max_tracked: this.#c.max_tracked, evicted: this.#evicted }, 'The table of senders is full: the senders seen longest ago are forgotten (raise senders.max_tracked).');
    }
  }

  #count(sender: string, events: number): void {
    let c = this.#series.get(sender);
    if (!c) {
      if (this.#series.size >= this.#c.max_series) {
        this.#m.senderSeriesOverflow.inc(this.#labels, events);
        return;
      }
      this.#series.set(sender, (c = this.#m.senderEvents.labels({ ...this.#labels, sender })));
    }
    c.inc(events);
  }

  #dropSeries(): void {
    for (const s of this.#series.keys()) this.#m.senderEvents.remove({ ...this.#labels, sender: s });
    this.#series.clear();
  }

  #where(): { intake?: string; input: string } {
    return this.intake ? { intake: this.intake, input: this.input } : { input: this.input };
  }

  /** Forgets senders unseen for known_within_ms; reports those silent for silent_after_ms. */
  check(now: number): void {
    if (this.#forward) {
      for (const [sender, [events, bytes, first, last]] of this.#pending) this.#forward([this.intake, this.input, sender, events, bytes, first, last]);
      this.#pending.clear();
      return;
    }
    const c = this.#c;
    const newly: [string, Entry][] = [];
    for (const [sender, e] of this.#active) {
      const quiet = now - e.last;
      if (quiet > c.known_within_ms) this.#active.delete(sender);
      else if (c.silent_after_ms > 0 && quiet >= c.silent_after_ms) {
        this.#active.delete(sender);
        this.#quiet.set(sender, e);
        newly.push([sender, e]);
      }
    }
    for (const [sender, e] of this.#quiet) {
      const quiet = now - e.last;
      if (quiet > c.known_within_ms) this.#quiet.delete(sender);
      else if (c.silent_after_ms === 0 || quiet < c.silent_after_ms) {
        // A reload raised silent_after_ms (or turned it off): not silent after all.
        this.#quiet.delete(sender);
        this.#active.set(sender, e);
      }
    }
    this.#makeRoom(c.max_tracked, now);
    this.#reportSilent(newly);
    this.#showSizes();
  }

  /**
   * When check() next has something to do (table time: ms), undefined if never until something is
   * seen: a sender goes silent or is forgotten, or (in a worker) sightings wait to be forwarded.
   */
  nextCheckAt(): number | undefined {
    if (this.#forward) return this.#pending.size > 0 ? 0 : undefined;
    const c = this.#c;
    const dueAfter = this.#dueAfter();
    let next = Infinity;
    for (const e of this.#active.values()) next = Math.min(next, e.last + dueAfter);
    for (const e of this.#quiet.values()) next = Math.min(next, e.last + c.known_within_ms + 1);
    return next === Infinity ? undefined : next;
  }

  /** How long after its last sighting an active sender is next due: silent, or forgotten. */
  #dueAfter(): number {
    const c = this.#c;
    return c.silent_after_ms > 0 ? c.silent_after_ms : c.known_within_ms + 1;
  }

  #showSizes(): void {
    const shown = this.#shown;
    if (this.size !== shown.tracked) this.#m.sendersTracked.set(this.#labels, (shown.tracked = this.size));
    if (this.#quiet.size !== shown.silent) this.#m.sendersSilent.set(this.#labels, (shown.silent = this.#quiet.size));
  }

  /** One warning per sender that went silent; past a few at once (a partition), one for all. */
  #reportSilent(newly: readonly [string, Entry][]): void {
    if (newly.length === 0) return;
    if (newly.length <= NAMED_SILENT) {
      for (const [sender, e] of newly) {
        this.#log.warn({ ...this.#where(), sender, last_seen: isoUtc(e.last), events: e.events }, 'A sender went silent.');
      }
      return;
    }
    this.#log.warn(
      { ...this.#where(), silent: newly.length, senders: newly.slice(0, NAMED_SILENT).map(([s]) => s) },
      'Senders went silent (the first named; GET /senders?silent=1 lists every one).',
    );
  }

  get size(): number {
    return this.#active.size + this.#quiet.size;
  }

  get silentCount(): number {
    return this.#quiet.size;
  }

  /**
   * Its senders: the silent ones (most recently silent first), then the others, most recently seen
   * first (to the second); at most `limit`. No sort of the whole table: its maps are in that order.
   */
  rows(limit: number, silentOnly = false): SenderRow[] {
    const out: SenderRow[] = [];
    const add = (map: Map<string, Entry>, silent: boolean): void => {
      if (out.length >= limit) return;
      const newest = [...map].slice(-(limit - out.length)).reverse();
      for (const [sender, e] of newest) {
        out.push({ sender, events: e.events, bytes: e.bytes, first_seen: isoUtc(e.first), last_seen: isoUtc(e.last), silent });
      }
    };
    add(this.#quiet, true);
    if (!silentOnly) add(this.#active, false);
    return out;
  }

  /** Stops reporting: the input is gone. */
  dispose(): void {
    if (this.#forward) return;
    this.#m.sendersTracked.remove(this.#labels);
    this.#m.sendersSilent.remove(this.#labels);
    this.#m.sendersEvicted.remove(this.#labels);
    this.#m.senderSeriesOverflow.remove(this.#labels);
    this.#dropSeries();
  }
}

/** The longest the tables' timer waits (setTimeout's limit is 24.8 days). */
const MAX_WAIT_MS = 3_600_000;

/**
 * Every input's table, kept across a restart of the input (a reload that changes it) and dropped
 * with it; checked when the next sender is due to go silent or be forgotten (at most once a
 * second; in a worker, a second after sightings wait to be forwarded), so that at rest nothing runs.
 */
export class SenderTables {
  readonly #tables = new Map<string, SenderTable>();
  readonly #m: Metrics;
  readonly #log: Logger;
  #timer: NodeJS.Timeout | undefined;
  /** When the timer fires (ms; Infinity: none). */
  #at = Infinity;
  /** Checks at most this often (start()); 0 until started. */
  #everyMs = 0;
  /** In a worker: its sightings, each second, to the main thread (see SenderTable). */
  readonly #forward: ((sightings: Sighting[]) => void) | undefined;
  #batch: Sighting[] = [];

  constructor(metrics: Metrics, log: Logger, forward?: (sightings: Sighting[]) => void) {
    this.#m = metrics;
    this.#log = log;
    this.#forward = forward;
  }

  /** Intakes match in any case (a reload may change a name's case). */
  static #key(intake: string, input: string): string {
    return `${intake.toLowerCase()}\0${input}`;
  }

  /** The table of input `input` of intake `intake` ('' for a shared listener), made or reconfigured. */
  table(intake: string, input: string, config: SendersConfig): SenderTable {
    const key = SenderTables.#key(intake, input);
    let t = this.#tables.get(key);
    if (t) t.configure(config);
    else this.#tables.set(key, (t = new SenderTable(intake, input, config, this.#m, this.#log, this.#forward && ((x) => this.#batch.push(x)), this.#wake)));
    return t;
  }

  /** A worker's sightings, into the tables of the same inputs here (the main thread runs every input a worker runs). */
  sighted(sightings: readonly Sighting[]): void {
    for (const [intake, input, sender, events, bytes, first, last] of sightings) this.#tables.get(SenderTables.#key(intake, input))?.seen(sender, events, bytes, last, first);
  }

  /** The tables follow the inputs that run now (after a reload): new settings, new tables, those of inputs gone dropped. */
  follow(inputs: readonly { readonly intake: string; readonly label: string; readonly senders: SendersConfig }[]): void {
    for (const i of inputs) this.table(i.intake, i.label, i.senders);
    this.retain(inputs.map((i) => [i.intake, i.label] as const));
  }

  /** Drops the tables of inputs not in `live` (["intake", "input"] pairs; a reload removed the rest). */
  retain(live: readonly (readonly [string, string])[]): void {
    const keep = new Set(live.map(([i, n]) => SenderTables.#key(i, n)));
    for (const [key, t] of this.#tables) {
      if (keep.has(key)) continue;
      t.dispose();
      this.#tables.delete(key);
    }
  }

  all(): SenderTable[] {
    return [...this.#tables.values()];
  }

  /**
   * How late sightings may arrive (a worker's, up to two seconds): a sender is judged silent that
   * much later, so that one whose events all go through a worker does not flap.
   */
  lagMs = 0;

  check(now = Date.now()): void {
    for (const t of this.#tables.values()) t.check(now - this.lagMs);
    if (this.#forward && this.#batch.length > 0) {
      this.#forward(this.#batch);
      this.#batch = [];
    }
  }

  start(everyMs = 1_000): void {
    this.#everyMs = everyMs;
    this.#schedule(Date.now());
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#at = Infinity;
    this.#everyMs = 0;
  }

  /** A table has something due at `due` (its time): a new or returning sender, sightings to forward, new thresholds (-Infinity). */
  readonly #wake = (due: number): void => {
    if (this.#everyMs > 0 && due + this.lagMs < this.#at) this.#schedule(Date.now());
  };

  /** Sets the timer for the earliest check due, no sooner than everyMs from now; none if nothing is due. */
  #schedule(now: number): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#at = Infinity;
    let next = Infinity;
    for (const t of this.#tables.values()) next = Math.min(next, (t.nextCheckAt() ?? Infinity) + this.lagMs);
    if (next === Infinity) return;
    const at = Math.max(next, now + this.#everyMs);
    this.#at = at;
    // A millisecond past it: a timer may fire a little early by Date.now().
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      const t = Date.now();
      this.check(t);
      this.#schedule(t);
    }, Math.min(at + 1 - now, MAX_WAIT_MS));
    this.#timer.unref();
  }
}
