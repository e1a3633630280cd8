// docs/reference/metrics.md: every metric /metrics exports, read from the registry that
// src/telemetry/metrics.ts fills (names, types, help texts, label names, how worker threads are
// added up), and the reasons of intake_relay_events_dropped_total by stage from DROP_STAGES.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { DROP_STAGES } from '../../src/core/contracts.ts';
import { Metrics } from '../../src/telemetry/metrics.ts';
import { code, pageHead, table } from './markdown.ts';

/**
 * What each drop reason means where it is counted. Hand-kept: the code says where a reason is
 * counted, not why an operator would see it; the page refuses to generate when this and
 * DROP_STAGES disagree.
 */
const DROP_MEANINGS: Readonly<Record<string, string>> = {
  'input/queue_full': 'The intake\'s queue was full and the input could not wait: `when_full: drop_newest`, or a UDP input (a datagram cannot be held back).',
  'input/too_large': 'Over the input\'s size limit and not cut to it: an octet-counted frame over `max_message_bytes` (stream inputs count it in `intake_relay_framing_errors_total` too), a file line dropped at its limit, an HTTP event too large.',
  'input/shutdown': 'Received while the intake\'s queue was closing (a stop or a reload that removed the intake).',
  'input/filtered': 'Matched one of the intake\'s filters (by rule in `intake_relay_events_filtered_total`).',
  'queue/corrupt': 'In a damaged part of a disk queue segment (a torn write, a bad checksum), skipped when read back.',
  'queue/shutdown': 'Still queued when the queue was closed for good: a removed intake\'s queue that another thread was still handing over, or events a worker forwarded to the main thread after its queue had closed.',
  'output/rejected': 'The intake refused them for good (an HTTP 4xx other than 401, 403, 408, 413 and 429; a RELP answer other than 200).',
  'output/too_large': 'Over what the intake takes in one request, even alone in a batch (HTTP `max_body_bytes`, or a 413).',
  'output/retries_exhausted': 'Still not delivered after `max_retries` attempts (HTTP outputs with `max_retries` set; by default retries never end).',
  'output/shutdown': 'Still in a memory queue or unacknowledged when `shutdown_timeout_ms` ran out at a stop (a disk queue keeps them for the next start).',
};

interface MetricRow {
  readonly name: string;
  readonly type: string;
  readonly labels: readonly string[];
  readonly aggregator: string;
  readonly help: string;
}

/** A property of a prom-client metric that its typings do not declare, read without a cast. */
function field(metric: object, key: string): unknown {
  return key in metric ? Reflect.get(metric, key) : undefined;
}

function rows(registry: Registry): MetricRow[] {
  return registry.getMetricsAsArray().map((m) => {
    const labels = field(m, 'labelNames');
    const buckets = field(m, 'upperBounds');
    const type = m instanceof Histogram ? 'histogram' : m instanceof Counter ? 'counter' : m instanceof Gauge ? 'gauge' : 'summary';
    return {
      name: m.name,
      type: Array.isArray(buckets) ? `${type} (buckets ${buckets.join(', ')})` : type,
      labels: Array.isArray(labels) ? labels.filter((l): l is string => typeof l === 'string') : [],
      aggregator: m.aggregator,
      help: m.help,
    };
  });
}

/** How /metrics adds up a metric over the worker threads, in words. */
const ACROSS: Readonly<Record<string, string>> = { sum: 'summed', max: 'highest', min: 'lowest', first: 'first thread\'s (the main one first)', average: 'averaged', omit: 'left out' };

function dropReasons(): string {
  const listed = Object.entries(DROP_STAGES).flatMap(([stage, reasons]) => reasons.map((reason) => `${stage}/${reason}`));
  const unlisted = Object.keys(DROP_MEANINGS).filter((k) => !listed.includes(k));
  const missing = listed.filter((k) => !(k in DROP_MEANINGS));
  if (unlisted.length > 0 || missing.length > 0) {
    throw new Error(`scripts/docs/metrics-page.ts: DROP_MEANINGS and DROP_STAGES (src/core/contracts.ts) disagree: ${[...missing.map((k) => `${k} has no meaning`), ...unlisted.map((k) => `${k} is not a stage's reason`)].join('; ')}.`);
  }
  return table(['stage', 'reason', 'meaning'], listed.map((k) => {
    const [stage = '', reason = ''] = k.split('/');
    return [code(stage), code(reason), DROP_MEANINGS[k] ?? ''];
  }));
}

export function metricsPage(): string {
  // prom-client registers a few process metrics on Linux only (open and max file descriptors,
  // virtual memory, heap): the page is the one of the platform the relay is built for.
  if (process.platform !== 'linux') throw new Error('Generate docs/reference/metrics.md on Linux: the process metrics differ by platform.');
  const own = rows(new Metrics(false).registry);
  const names = new Set(own.map((r) => r.name));
  const runtime = rows(new Metrics(true).registry).filter((r) => !names.has(r.name));
  const labels = (r: MetricRow): string => r.labels.map(code).join(', ');
  return `${pageHead('Metrics reference', 'the metric definitions in [src/telemetry/metrics.ts](../../src/telemetry/metrics.ts) and the drop reasons in [src/core/contracts.ts](../../src/core/contracts.ts)')}
The operations server serves them at \`/metrics\` (see [ops-endpoints.md](ops-endpoints.md)), in the
Prometheus text format. Labels are bounded: intake, input, listener and output names, reasons and
error codes; never a key, never an event's content. With \`workers: N\`, one scrape adds up every
thread: the "across threads" column says how (counters and amounts are summed; states take the
highest, the lowest or the first thread's value).

## The relay's metrics

${table(['metric', 'type', 'labels', 'across threads', 'meaning'], own.map((r) => [code(r.name), r.type, labels(r), ACROSS[r.aggregator] ?? r.aggregator, r.help]))}

## Drop reasons

Every event that will never be delivered is counted once in \`intake_relay_events_dropped_total\`,
by \`stage\` and \`reason\`. These series exist at 0 from the start for every intake, so that a
\`rate()\` alert has a series to watch:

${dropReasons()}

## Process and Node.js metrics

prom-client's default metrics, with the same \`intake_relay_\` prefix (as on Linux). The
\`nodejs_active_*_total\` gauges are left out: gauges named like counters, which Prometheus' linter
refuses; the event loop and heap metrics say as much.

${table(['metric', 'type', 'labels', 'meaning'], runtime.map((r) => [code(r.name), r.type, labels(r), r.help]))}
`;
}
