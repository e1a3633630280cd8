// Forwarder statistics sent to an intake of the platform's "forwarder logs" format, as the official
// forwarder sends them: the records rsyslog's impstats writes (format json, counters reset at each
// report) for the configuration the forwarder generates from intakes.yaml, with the same names and
// the same meanings, so that the platform's forwarder views and an operator's saved searches keep
// working. Every interval, one event per record, APP-NAME rsyslogd-pstats, PRI syslog.info, in
// impstats' order:
//   {"name":"TCP-<host>-<port>","origin":"omfwd","bytes.sent":N}                       per syslog output
//   {"name":"output-<intake>","origin":"core.action","processed":N,"failed":N,"suspended":N,"suspended.duration":S,"resumed":N}
//   {"name":"input-<intake>(<port>)","origin":"imtcp","submitted":N}                   per input, and per
//   {"name":"input-<intake>(*/<port>/IPv4)","origin":"imudp","submitted":N,"disallowed":0}   shared listener
//   {"name":"resource-usage","origin":"impstats","utime":...,"openfiles":N}
//   {"name":"ruleset-<intake>[DA]","origin":"core.queue",...0}, {"name":"ruleset-<intake>","origin":"core.queue","size":N,"enqueued":N,"full":N,"discarded.full":N,"discarded.nf":0,"maxqsize":N}
//   {"name":"stats[DA]",...}, {"name":"stats",...}                                      the statistics intake's queue
//   {"name":"main Q[DA]",...0}, {"name":"main Q",...0}                                 no event passes a main queue
// Names: the intake's (or listener's) name with spaces as _ and in lower case, as the forwarder's
// generator writes them. processed: events the output is done with (delivered or dropped); failed:
// dropped there; suspended, resumed: times it stopped delivering and came back; suspended.duration:
// seconds stopped since the start; enqueued: events that entered the queue (not those filtered or
// refused); full: offers that found it full; maxqsize: the most it held at once since the start
// (rsyslog does not reset size, maxqsize, suspended.duration nor resource-usage).
// rsyslog's records of modules the relay does not have (imuxsock, imudp's worker "imudp(w0)", the
// empty dynstats and percentile globals) are not sent.

import { readdirSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Inlet } from '../core/component.ts';
import type { LogEvent } from '../core/event.ts';
import type { EventQueue } from '../core/event-queue.ts';
import type { CounterReader } from '../core/telemetry.ts';
import { headerlessEvent } from '../syslog/parse.ts';

/** An input (or shared listener) with its impstats record for `submitted` events (undefined: rsyslog has no such module). */
export interface StatsInput {
  /** Its intake, or '' for a shared listener (whose events are counted under the intakes it routed them to). */
  readonly intake: string;
  readonly label: string;
  record(submitted: number): Record<string, unknown> | undefined;
}

/** What the statistics describe: the intakes now, their queues, outputs and inputs, and the shared listeners. */
export interface StatsView {
  intakes(): readonly {
    readonly name: string;
    readonly queue: EventQueue;
    /** Its omfwd record's name (`TCP-<host>-<port>`): for a syslog output; undefined for the others. */
    readonly omfwd: string | undefined;
    /** The statistics intake: its queue is "stats", as the forwarder names that ruleset. */
    readonly stats: boolean;
    readonly inputs: readonly StatsInput[];
  }[];
  listeners(): readonly StatsInput[];
}

const PRI_SYSLOG_INFO = 5 * 8 + 6;
const APP_NAME = 'rsyslogd-pstats';

/** A name as the forwarder's generator writes it into rsyslog's configuration: spaces as _, lower case. */
export function forwarderName(name: string): string {
  return name.replaceAll(' ', '_').toLowerCase();
}

/** A queue record with nothing in it (a [DA] part never used, the unused main queue). */
function emptyQueue(name: string): Record<string, unknown> {
  return { name, origin: 'core.queue', size: 0, enqueued: 0, full: 0, 'discarded.full': 0, 'discarded.nf': 0, maxqsize: 0 };
}

export class ForwarderStats {
  readonly #counters: CounterReader;
  readonly #view: StatsView;
  /** Routes to the statistics intake (a reload may replace it). */
  readonly #inlet: Inlet;
  readonly #intervalMs: number;
  /** Totals at the previous report, by record and field: what impstats resets, reported as changes. */
  readonly #last = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  readonly #host = hostname();

  constructor(counters: CounterReader, view: StatsView, inlet: Inlet, intervalMs: number) {
    this.#counters = counters;
    this.#view = view;
    this.#inlet = inlet;
    this.#intervalMs = intervalMs;
  }

  start(): void {
    this.#timer = setInterval(() => void this.report(), this.#intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
  }

  /** The change of a total since the last report. */
  #delta(key: string, now: number): number {
    const before = this.#last.get(key) ?? 0;
    this.#last.set(key, now);
    return Math.max(0, now - before);
  }

  /** The records of one report, in impstats' order. */
  async records(): Promise<Record<string, unknown>[]> {
    const c = await this.#counters.read();
    const intakes = this.#view.intakes();
    const actions: Record<string, unknown>[] = [];
    const inputs: Record<string, unknown>[] = [];
    const queues: Record<string, unknown>[] = [];
    const submitted = (i: StatsInput, record: Record<string, unknown>): number =>
      this.#delta(`${String(record.name)}|submitted`, c.total('events_received', i.intake ? { intake: i.intake, input: i.label } : { input: i.label }));
    for (const i of intakes) {
      const name = forwarderName(i.name);
      const intake = { intake: i.name };
      const key = `output-${name}`;
      if (i.omfwd) actions.push({ name: i.omfwd, origin: 'omfwd', 'bytes.sent': this.#delta(`${key}|bytes`, c.total('bytes_sent', intake)) });
      const failed = c.total('events_dropped', { ...intake, stage: 'output' });
      actions.push({
        name: key,
        origin: 'core.action',
        processed: this.#delta(`${key}|processed`, c.total('events_sent', intake) + failed),
        failed: this.#delta(`${key}|failed`, failed),
        suspended: this.#delta(`${key}|suspended`, c.total('output_suspended', intake)),
        'suspended.duration': Math.round(c.total('output_suspended_seconds', intake)),
        resumed: this.#delta(`${key}|resumed`, c.total('output_resumed', intake)),
      });
      for (const input of i.inputs) {
        const r = input.record(0);
        if (r) inputs.push(input.record(submitted(input, r)) as Record<string, unknown>);
      }
      // What entered the queue: received, less what the inputs dropped (filtered, refused as full, too large).
      const entered = c.total('events_received', intake) - c.total('events_dropped', { ...intake, stage: 'input' });
      const q = i.stats ? 'stats' : `ruleset-${name}`;
      queues.push(emptyQueue(`${q}[DA]`), {
        name: q,
        origin: 'core.queue',
        size: i.queue.pendingEvents,
        enqueued: this.#delta(`${q}|enqueued`, entered),
        full: this.#delta(`${q}|full`, i.queue.timesFull),
        'discarded.full': this.#delta(`${q}|discarded`, c.total('events_dropped', { ...intake, reason: 'queue_full' })),
        'discarded.nf': 0,
        maxqsize: i.queue.highWater,
      });
    }
    for (const l of this.#view.listeners()) {
      const r = l.record(0);
      if (r) inputs.push(l.record(submitted(l, r)) as Record<string, unknown>);
    }
    return [...actions, ...inputs, resourceUsage(), ...queues, emptyQueue('main Q[DA]'), emptyQueue('main Q')];
  }

  /** Builds a report and hands it to the statistics intake (counted like any input's events). */
  async report(): Promise<void> {
    if (this.#inlet.targets.length === 0) return;
    const records = await this.records();
    const now = Date.now();
    const defaults = { pri: PRI_SYSLOG_INFO, hostname: this.#host, appName: APP_NAME, procId: '' };
    const events: LogEvent[] = [];
    let bytes = 0;
    for (const rec of records) {
      const buf = Buffer.from(JSON.stringify(rec));
      events.push(headerlessEvent(buf, 0, buf.length, now, '', defaults));
      bytes += buf.length;
    }
    this.#inlet.send(events, bytes);
  }
}

/** impstats' resource-usage record: the process's since its start (µs of CPU, KiB of memory). */
function resourceUsage(): Record<string, unknown> {
  const r = process.resourceUsage();
  let openfiles: number | undefined;
  try {
    openfiles = readdirSync('/proc/self/fd').length;
  } catch {
    openfiles = undefined; // not Linux
  }
  return {
    name: 'resource-usage', origin: 'impstats', utime: r.userCPUTime, stime: r.systemCPUTime, maxrss: r.maxRSS, minflt: r.minorPageFault, majflt: r.majorPageFault,
    inblock: r.fsRead, oublock: r.fsWrite, nvcsw: r.voluntaryContextSwitches, nivcsw: r.involuntaryContextSwitches, ...(openfiles === undefined ? {} : { openfiles }),
  };
}
