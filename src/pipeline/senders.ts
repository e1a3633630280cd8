// Who sends to each input: a bounded table per input of its senders (address; hostname for file and
// HTTP inputs) with events, bytes, first and last seen, so that "which firewall stopped sending?"
// has an answer. A sender seen within `known_within_ms` and silent for `silent_after_ms` is reported
// silent once (a warning naming it, a gauge, /status), and once again when it is back. Optionally
// one metric series per sender, capped: what does not fit is counted, never created.

import type { Logger } from 'pino';
import type { SendersConfig } from '../core/config-parts.ts';
import { byteSize, type LogEvent } from '../core/event.ts';
import type { Metrics } from '../telemetry/metrics.ts';

export type { SendersConfig };

interface Entry {
  events: number;
  bytes: number;
  readonly first: number;
  last: number;
  /** When it last moved to the end of the table (the order is the eviction order). */
  moved: number;
  silent: boolean;
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

export class SenderTable {
  readonly intake: string;
  readonly input: string;
  #c: SendersConfig;
  readonly #m: Metrics;
  readonly #log: Logger;
  readonly #labels: { intake: string; input: string };
  /** By sender, about least recently seen first (a Map keeps insertion order). */
  readonly #entries = new Map<string, Entry>();
  readonly #series = new Set<string>();
  #silent = 0;

  /** `intake`: the input's intake, '' for a shared listener. */
  constructor(intake: string, input: string, config: SendersConfig, metrics: Metrics, log: Logger) {
    this.intake = intake;
    this.input = input;
    this.#c = config;
    this.#m = metrics;
    this.#log = log;
    this.#labels = { intake, input };
    metrics.sendersTracked.set(this.#labels, 0);
    metrics.sendersSilent.set(this.#labels, 0);
    if (config.metrics) metrics.senderSeriesOverflow.inc(this.#labels, 0);
  }

  /** A reload's settings. Series already created stay; none beyond the new cap is added. */
  configure(config: SendersConfig): void {
    this.#c = config;
    if (config.metrics) this.#m.senderSeriesOverflow.inc(this.#labels, 0);
  }

  /** `events` events of `bytes` bytes from `sender`, received at `now` (once per read, datagram or request). */
  seen(sender: string, events: number, bytes: number, now: number): void {
    let e = this.#entries.get(sender);
    if (!e) {
      if (this.#entries.size >= this.#c.max_tracked) {
        // Full: the sender seen longest ago makes room.
        const oldest = this.#entries.keys().next().value as string;
        this.#entries.delete(oldest);
      }
      e = { events: 0, bytes: 0, first: now, last: now, moved: now, silent: false };
      this.#entries.set(sender, e);
    } else if (now - e.moved >= MOVE_MS) {
      this.#entries.delete(sender);
      this.#entries.set(sender, e);
      e.moved = now;
    }
    if (e.silent) {
      e.silent = false;
      this.#silent--;
      this.#m.sendersSilent.set(this.#labels, this.#silent);
      this.#log.info({ ...this.#where(), sender, silent_for_s: Math.round((now - e.last) / 1000) }, 'A silent sender is sending again.');
    }
    e.events += events;
    e.bytes += bytes;
    e.last = now;
    if (this.#c.metrics) this.#count(sender, events);
  }

  /**
   * A read's events by their sender address (UDP, TCP: a turn's datagrams come from several) or
   * their HOSTNAME (files, HTTP): one update per run of events from the same one.
   */
  seenEvents(events: readonly LogEvent[], by: 'sender' | 'hostname', now: number): void {
    let who = '';
    let n = 0;
    let bytes = 0;
    for (const e of events) {
      const w = e[by];
      if (w !== who) {
        if (n > 0) this.seen(who, n, bytes, now);
        who = w;
        n = 0;
        bytes = 0;
      }
      n++;
      bytes += byteSize(e);
    }
    if (n > 0) this.seen(who, n, bytes, now);
  }

  #count(sender: string, events: number): void {
    if (!this.#series.has(sender)) {
      if (this.#series.size >= this.#c.max_series) {
        this.#m.senderSeriesOverflow.inc(this.#labels, events);
        return;
      }
      this.#series.add(sender);
    }
    this.#m.senderEvents.inc({ ...this.#labels, sender }, events);
  }

  #where(): { intake?: string; input: string } {
    return this.intake ? { intake: this.intake, input: this.input } : { input: this.input };
  }

  /** Forgets senders unseen for known_within_ms; reports those silent for silent_after_ms (once each). */
  check(now: number): void {
    const c = this.#c;
    let silent = 0;
    for (const [sender, e] of this.#entries) {
      const quiet = now - e.last;
      if (quiet > c.known_within_ms) {
        this.#entries.delete(sender);
        continue;
      }
      if (c.silent_after_ms === 0 || quiet < c.silent_after_ms) continue;
      silent++;
      if (!e.silent) {
        e.silent = true;
        this.#log.warn({ ...this.#where(), sender, last_seen: new Date(e.last).toISOString(), events: e.events }, 'A sender went silent.');
      }
    }
    this.#silent = silent;
    this.#m.sendersTracked.set(this.#labels, this.#entries.size);
    this.#m.sendersSilent.set(this.#labels, silent);
  }

  get size(): number {
    return this.#entries.size;
  }

  get silentCount(): number {
    return this.#silent;
  }

  /** Its senders: the silent ones first, then the most recently seen; at most `limit`. */
  rows(limit: number, silentOnly = false): SenderRow[] {
    const all = [...this.#entries].filter(([, e]) => !silentOnly || e.silent);
    all.sort(([, a], [, b]) => Number(b.silent) - Number(a.silent) || b.last - a.last);
    return all.slice(0, limit).map(([sender, e]) => ({
      sender,
      events: e.events,
      bytes: e.bytes,
      first_seen: new Date(e.first).toISOString(),
      last_seen: new Date(e.last).toISOString(),
      silent: e.silent,
    }));
  }

  /** Stops reporting: the input is gone. */
  dispose(): void {
    this.#m.sendersTracked.remove(this.#labels);
    this.#m.sendersSilent.remove(this.#labels);
    this.#m.senderSeriesOverflow.remove(this.#labels);
    for (const s of this.#series) this.#m.senderEvents.remove({ ...this.#labels, sender: s });
  }
}

/**
 * Every input's table, kept across a restart of the input (a reload that changes it) and dropped
 * with it; checked every second.
 */
export class SenderTables {
  readonly #tables = new Map<string, SenderTable>();
  readonly #m: Metrics;
  readonly #log: Logger;
  #timer: NodeJS.Timeout | undefined;

  constructor(metrics: Metrics, log: Logger) {
    this.#m = metrics;
    this.#log = log;
  }

  /** The table of input `input` of intake `intake` ('' for a shared listener), made or reconfigured. */
  table(intake: string, input: string, config: SendersConfig): SenderTable {
    const key = `${intake}\0${input}`;
    let t = this.#tables.get(key);
    if (t) t.configure(config);
    else this.#tables.set(key, (t = new SenderTable(intake, input, config, this.#m, this.#log)));
    return t;
  }

  /** Drops the tables of inputs not in `live` (["intake", "input"] pairs; a reload removed the rest). */
  retain(live: readonly (readonly [string, string])[]): void {
    const keep = new Set(live.map(([i, n]) => `${i}\0${n}`));
    for (const [key, t] of this.#tables) {
      if (keep.has(key)) continue;
      t.dispose();
      this.#tables.delete(key);
    }
  }

  all(): SenderTable[] {
    return [...this.#tables.values()];
  }

  check(now = Date.now()): void {
    for (const t of this.#tables.values()) t.check(now);
  }

  start(everyMs = 1_000): void {
    this.#timer ??= setInterval(() => this.check(), everyMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
