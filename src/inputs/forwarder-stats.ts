// Forwarder statistics sent to an intake of the platform's "forwarder logs" format, in the record
// shapes the official forwarder emits (rsyslog's impstats, format json, counters reset at each
// report), so that existing dashboards and alert rules keep working. Every interval, one event per
// record, with APP-NAME rsyslogd-pstats and PRI syslog.info like impstats:
//   {"name":"output-<intake>","origin":"core.action","processed":N,"failed":N,"suspended":N,"suspended.duration":0,"resumed":N}
//   {"name":"output-<intake> queue","origin":"core.queue","size":N,"enqueued":N,"full":N,"discarded.full":N,"discarded.nf":0,"maxqsize":N}
//   {"name":"imtcp(<port>)","origin":"imtcp","submitted":N}, {"name":"imudp(*:<port>)","origin":"imudp","submitted":N,"disallowed":0}
//   {"name":"main Q","origin":"core.queue",...}, {"name":"resource-usage","origin":"impstats","utime":...}
// Counts are what happened since the previous report.

import { hostname } from 'node:os';
import type { Inlet } from '../core/component.ts';
import type { LogEvent } from '../core/event.ts';
import type { EventQueue } from '../core/event-queue.ts';
import type { CounterReader } from '../core/telemetry.ts';
import { headerlessEvent } from '../syslog/parse.ts';

/** What the statistics describe: the intakes now, with their queues, and their inputs' records. */
export interface StatsView {
  intakes(): readonly {
    readonly name: string;
    readonly queue: EventQueue;
    /** Per input: its impstats record for `submitted` events, or undefined (rsyslog has no such module). */
    readonly inputs: readonly { readonly label: string; record(submitted: number): Record<string, unknown> | undefined }[];
  }[];
}

const PRI_SYSLOG_INFO = 5 * 8 + 6;
const APP_NAME = 'rsyslogd-pstats';

export class ForwarderStats {
  readonly #counters: CounterReader;
  readonly #view: StatsView;
  /** Routes to the statistics intake (a reload may replace it). */
  readonly #inlet: Inlet;
  readonly #intervalMs: number;
  /** Counter totals at the previous report, by record and field. */
  readonly #last = new Map<string, number>();
  /** Largest queue size seen per queue (impstats' maxqsize), sampled every second. */
  readonly #maxSize = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #sampler: NodeJS.Timeout | undefined;
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
    this.#sampler = setInterval(() => this.#sample(), Math.min(1000, this.#intervalMs));
    this.#sampler.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    if (this.#sampler) clearInterval(this.#sampler);
  }

  #sample(): void {
    let all = 0;
    for (const i of this.#view.intakes()) {
      const size = i.queue.pendingEvents;
      all += size;
      this.#maxSize.set(i.name, Math.max(this.#maxSize.get(i.name) ?? 0, size));
    }
    this.#maxSize.set('', Math.max(this.#maxSize.get('') ?? 0, all));
  }

  /** The change of a counter since the last report. */
  #delta(key: string, now: number): number {
    const before = this.#last.get(key) ?? 0;
    this.#last.set(key, now);
    return Math.max(0, now - before);
  }

  /** The records of one report. */
  async records(): Promise<Record<string, unknown>[]> {
    this.#sample();
    const total = (counter: Parameters<CounterReader['total']>[0], labels: Record<string, string>): Promise<number> => this.#counters.total(counter, labels);
    const out: Record<string, unknown>[] = [];
    let enqueuedAll = 0;
    let discardedAll = 0;
    let sizeAll = 0;
    for (const i of this.#view.intakes()) {
      const name = `output-${i.name.toLowerCase()}`;
      const intake = { intake: i.name };
      out.push({
        name,
        origin: 'core.action',
        processed: this.#delta(`${name}|processed`, await total('events_sent', intake)),
        failed: this.#delta(`${name}|failed`, await total('events_dropped', { ...intake, stage: 'output' })),
        suspended: this.#delta(`${name}|suspended`, await total('output_retries', intake)),
        'suspended.duration': 0,
        resumed: this.#delta(`${name}|resumed`, await total('output_reconnects', intake)),
      });
      const enqueued = this.#delta(`${name}|enqueued`, await total('events_received', intake));
      const full = this.#delta(`${name}|full`, await total('events_dropped', { ...intake, reason: 'queue_full' }));
      const size = i.queue.pendingEvents;
      out.push({ name: `${name} queue`, origin: 'core.queue', size, enqueued, full: full > 0 ? 1 : 0, 'discarded.full': full, 'discarded.nf': 0, maxqsize: this.#maxSize.get(i.name) ?? size });
      this.#maxSize.set(i.name, size);
      enqueuedAll += enqueued;
      discardedAll += full;
      sizeAll += size;
      for (const input of i.inputs) {
        if (!input.record(0)) continue;
        const submitted = this.#delta(`${i.name}|${input.label}`, await total('events_received', { intake: i.name, input: input.label }));
        out.push(input.record(submitted) as Record<string, unknown>);
      }
    }
    out.push({ name: 'main Q', origin: 'core.queue', size: sizeAll, enqueued: enqueuedAll, full: discardedAll > 0 ? 1 : 0, 'discarded.full': discardedAll, 'discarded.nf': 0, maxqsize: this.#maxSize.get('') ?? sizeAll });
    this.#maxSize.set('', sizeAll);
    const r = process.resourceUsage();
    out.push({
      name: 'resource-usage', origin: 'impstats', utime: r.userCPUTime, stime: r.systemCPUTime, maxrss: r.maxRSS, minflt: r.minorPageFault, majflt: r.majorPageFault,
      inblock: r.fsRead, oublock: r.fsWrite, nvcsw: r.voluntaryContextSwitches, nivcsw: r.involuntaryContextSwitches,
    });
    return out;
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
