// A backlog you can follow. From a snapshot of the relay every few seconds, each intake's events/s
// in and out over the last minute, and, while more than a few seconds of events wait (an outage, a
// flood the output does not keep up with), the backlog: how many, how fast it drains and when it will be done. /status and `top`
// show it; the log says it when a backlog builds, when it starts draining, every 30 s meanwhile,
// and once when it is done (how many events at its peak, how long).

import type { Logger } from 'pino';
import type { Snapshot } from '../telemetry/snapshot.ts';

/** The window of the rates in and out. */
const RATE_WINDOW_MS = 60_000;
/** The window of the drain rate and the time left: the last sample or two, so a drain shows at once. */
const DRAIN_WINDOW_MS = 3_000;
/** A backlog: at least this many events, and this many seconds of what arrives and of what is delivered. */
const BACKLOG_MIN_EVENTS = 1_000;
const BACKLOG_MIN_SECONDS = 5;
/** Done: at most this many events, or a second of what arrives. */
const DONE_MAX_EVENTS = 100;
/** Progress lines of one intake: one every this long, and a change of course at most this often. */
export const PROGRESS_INTERVAL_MS = 30_000;
const CHANGE_INTERVAL_MS = 5_000;

interface Sample {
  readonly at: number;
  readonly received: number;
  readonly sent: number;
  readonly queued: number;
}

export interface Rates {
  /** Events/s received and delivered over the last minute (or since the start). */
  readonly in_per_s: number;
  readonly out_per_s: number;
}

export interface Backlog {
  readonly events: number;
  /** When it built up (ISO 8601). */
  readonly since: string;
  /** draining (it shrinks), growing, or holding. */
  readonly trend: 'draining' | 'growing' | 'holding';
  /** Events/s it shrank by over the last few seconds (negative: it grew). */
  readonly drain_per_s: number;
  /** Seconds until it is delivered at that pace; null while it does not shrink. */
  readonly eta_seconds: number | null;
}

interface State {
  samples: Sample[];
  backlog: { since: number; peak: number; trend: Backlog['trend']; loggedAt: number; drainingSince: number } | undefined;
}

export class BacklogWatch {
  readonly #log: Logger;
  readonly #intakes = new Map<string, State>();

  constructor(log: Logger) {
    this.#log = log;
  }

  /** Takes a new snapshot: rates, backlogs and their log lines. */
  sample(s: Snapshot): void {
    const seen = new Set<string>();
    for (const i of s.intakes) {
      seen.add(i.name);
      let st = this.#intakes.get(i.name);
      if (!st) this.#intakes.set(i.name, (st = { samples: [], backlog: undefined }));
      st.samples.push({ at: s.at, received: i.received, sent: i.sent, queued: i.queued_events });
      // One sample older than the window stays: the rates span the whole minute.
      while (st.samples.length > 2 && s.at - (st.samples[1] as Sample).at >= RATE_WINDOW_MS) st.samples.shift();
      this.#follow(i.name, st, s.at);
    }
    for (const name of this.#intakes.keys()) if (!seen.has(name)) this.#intakes.delete(name);
  }

  /** Events/s in and out over the last minute; undefined before two samples. */
  rates(intake: string): Rates | undefined {
    const st = this.#intakes.get(intake);
    return st && rateOver(st.samples, RATE_WINDOW_MS);
  }

  /** The intake's backlog, or undefined when there is none. */
  backlog(intake: string): Backlog | undefined {
    const st = this.#intakes.get(intake);
    const b = st?.backlog;
    if (!st || !b) return undefined;
    const now = st.samples.at(-1) as Sample;
    const drain = drainRate(st.samples);
    return {
      events: now.queued,
      since: new Date(b.since).toISOString(),
      trend: b.trend,
      drain_per_s: Math.round(drain),
      eta_seconds: drain > 0 ? Math.ceil(now.queued / drain) : null,
    };
  }

  #follow(name: string, st: State, now: number): void {
    const last = st.samples.at(-1) as Sample;
    const inRate = rateOver(st.samples, RATE_WINDOW_MS)?.in_per_s ?? 0;
    const log = this.#log.child({ intake: name });
    const b = st.backlog;
    if (!b) {
      // Rates need two snapshots; then a backlog is more than a few seconds of what arrives, or of
      // what the output delivers now (a flood that the output keeps up with is not one).
      const recent = rateOver(st.samples, DRAIN_WINDOW_MS);
      if (!recent) return;
      if (last.queued < Math.max(BACKLOG_MIN_EVENTS, BACKLOG_MIN_SECONDS * Math.max(inRate, recent.out_per_s))) return;
      st.backlog = { since: now, peak: last.queued, trend: 'growing', loggedAt: now, drainingSince: 0 };
      const out = recent;
      log.warn({ backlog_events: last.queued, in_per_s: round(out?.in_per_s), out_per_s: round(out?.out_per_s) }, `A backlog is building: ${count(last.queued)} events wait for delivery.`);
      return;
    }
    b.peak = Math.max(b.peak, last.queued);
    if (last.queued <= Math.max(DONE_MAX_EVENTS, inRate)) {
      const took = Math.round((now - b.since) / 1000);
      const drained = b.drainingSince ? Math.round((now - b.drainingSince) / 1000) : took;
      log.info({ peak_events: b.peak, seconds: took, drain_seconds: drained }, `Backlog delivered: at its peak ${count(b.peak)} events waited; it lasted ${took} s, drained in ${drained} s.`);
      st.backlog = undefined;
      return;
    }
    const drain = drainRate(st.samples);
    const trend: Backlog['trend'] = drain > 0.5 ? 'draining' : drain < -0.5 ? 'growing' : 'holding';
    const turned = trend !== b.trend;
    if (turned) {
      b.trend = trend;
      if (trend === 'draining') b.drainingSince = now;
    }
    if (now - b.loggedAt < PROGRESS_INTERVAL_MS && !(turned && now - b.loggedAt >= CHANGE_INTERVAL_MS)) return;
    b.loggedAt = now;
    const rates = rateOver(st.samples, DRAIN_WINDOW_MS);
    const fields = { backlog_events: last.queued, in_per_s: round(rates?.in_per_s), out_per_s: round(rates?.out_per_s), drain_per_s: Math.round(drain) };
    if (trend === 'draining') {
      const eta = Math.ceil(last.queued / drain);
      log.info({ ...fields, eta_seconds: eta }, `Backlog of ${count(last.queued)} events draining at ${count(Math.round(drain))}/s (delivering ${count(fields.out_per_s)}/s, receiving ${count(fields.in_per_s)}/s): about ${duration(eta)} left.`);
    } else {
      log.warn(fields, `Backlog of ${count(last.queued)} events ${trend === 'growing' ? 'growing' : 'not shrinking'}: delivering ${count(fields.out_per_s)}/s, receiving ${count(fields.in_per_s)}/s.`);
    }
  }
}

/** The newest sample and the oldest one within `windowMs` of it (else the one before it), and the seconds between them. */
function span(samples: readonly Sample[], windowMs: number): { first: Sample; last: Sample; dt: number } | undefined {
  const last = samples.at(-1);
  if (!last || samples.length < 2) return undefined;
  const first = samples.find((s) => last.at - s.at <= windowMs && s !== last) ?? samples.at(-2) as Sample;
  const dt = (last.at - first.at) / 1000;
  return dt > 0 ? { first, last, dt } : undefined;
}

/** Events/s in and out over the last `windowMs`. */
function rateOver(samples: readonly Sample[], windowMs: number): Rates | undefined {
  const s = span(samples, windowMs);
  return s && { in_per_s: (s.last.received - s.first.received) / s.dt, out_per_s: (s.last.sent - s.first.sent) / s.dt };
}

/** How fast the queue shrank over the last few seconds (events/s; negative: it grew). */
function drainRate(samples: readonly Sample[]): number {
  const s = span(samples, DRAIN_WINDOW_MS);
  return s ? (s.first.queued - s.last.queued) / s.dt : 0;
}

function round(n: number | undefined): number {
  return Math.round(n ?? 0);
}

/** 12,345 */
export function count(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** 42 s, 3 min 5 s, 2 h 10 min. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`;
  return `${Math.floor(s / 3600)} h${Math.floor((s % 3600) / 60) ? ` ${Math.floor((s % 3600) / 60)} min` : ''}`;
}
