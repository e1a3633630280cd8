// docs/reference/ops-endpoints.md: the operations server's HTTP endpoints (src/telemetry/ops-server.ts)
// with their query parameters and bodies, and its settings from the configuration schema. The
// endpoints' text is hand-kept here; test/unit/docs-reference.test.ts checks that every path the
// server answers and every query parameter it reads is on the page.
import { configReference } from '../../src/config/reference.ts';
import { MAX_VIEWERS } from '../../src/pipeline/tap.ts';
import { code, pageHead, table } from './markdown.ts';

const intakeRow = table(['field', 'meaning'], [
  ['`name`, `output`', 'The intake and its output type.'],
  ['`state`', 'Its output\'s state: `starting`, `connected`, `retrying`, `key_rejected` or `stopped`.'],
  ['`accepting`', 'Its queue takes events (false while full under `when_full: block`).'],
  ['`stalled`', 'Events wait and nothing was delivered for `metrics.stall_timeout_ms`, or its key is refused.'],
  ['`queued_events`, `unacked_events`', 'Events waiting in its queue; events written and not yet acknowledged.'],
  ['`last_delivery`, `last_error`', 'The time of the last acknowledged delivery and the last error, or null.'],
]);

const progressRow = table(['field', 'meaning'], [
  ['`events_in_per_s`, `events_out_per_s`', 'Events received and delivered a second over the last minute (since the start, in its first minute); absent until two snapshots were taken.'],
  ['`backlog`', 'null, or while more than a few seconds of events wait (at least 1,000, and 5 seconds of what arrives): `events`, `since` (when it built up), `trend` (`draining`, `growing` or `holding`), `drain_per_s` (how fast it shrank over the last snapshots; negative: it grew) and `eta_seconds` (the time left at that pace; null while it does not shrink). The log says the same every 30 s, at a change of course, and once when it is delivered.'],
]);

const snapshotRow = table(['field', 'meaning'], [
  ['`received`, `sent`, `resent`, `filtered`', 'Totals: events received for it, delivered and acknowledged, written again after a lost connection, dropped by its filters.'],
  ['`dropped`', 'Events that will never be delivered, by reason (only reasons with any).'],
  ['`queued_bytes`, `max_events`, `max_bytes`', 'Bytes waiting, and its queue\'s limits (`max_events`: null for a disk queue).'],
  ['`oldest_age_seconds`', 'Age of the oldest event waiting in its queue.'],
]);

const senderRow = table(['field', 'meaning'], [
  ['`sender`', 'The address (UDP, TCP, RELP) or the HOSTNAME (file and HTTP inputs).'],
  ['`events`, `bytes`', 'What it sent since it was first seen.'],
  ['`first_seen`, `last_seen`', 'ISO 8601 times, UTC.'],
  ['`silent`', 'Known, and silent for `senders.silent_after_ms`.'],
]);

export function opsEndpointsPage(schemaJson: string): string {
  return `${pageHead('Operations endpoints', 'the text in [scripts/docs/ops-endpoints-page.ts](../../scripts/docs/ops-endpoints-page.ts), checked against [src/telemetry/ops-server.ts](../../src/telemetry/ops-server.ts), and the `metrics` settings of the configuration schema')}
Unless \`metrics.enabled\` is false, the relay serves its operations endpoints over plain HTTP on
\`metrics.address\` and \`metrics.port\` (\`127.0.0.1:9750\` unless configured; \`METRICS_ADDRESS\` and
\`METRICS_PORT\` in \`config/intake-relay.yaml\` and the container image). Every endpoint answers \`GET\` and \`HEAD\` (\`/tap\`: \`GET\`
only); another method gets 405, another path 404. Anyone who reaches the port may read them, except
\`/tap\` (see \`metrics.tap\`): keep the address on loopback, or on a network only the monitoring reaches.
An intake key that a body would quote (in an error, a sender's name, an event) is masked.

## Settings

${configReference({ properties: { metrics: JSON.parse(schemaJson).properties.metrics } })}

## \`/metrics\`

The metrics in the Prometheus text format: every one is in [metrics.md](metrics.md). With
\`workers: N\`, one scrape holds every thread's, added up.

## \`/healthz\`

\`200 ok\` while the process answers: a liveness probe. It says nothing about the intakes.

## \`/readyz\`

\`200\` while the relay takes events, else \`503\`: a readiness probe, and what \`intake-relay healthcheck\`
(the container image's \`HEALTHCHECK\`) asks. By default (\`metrics.readiness: accepting\`) it is 503
only while the relay cannot take events: starting, draining, a queue full under \`when_full: block\`, an
input or listener down, an HTTP listener out of memory budget; with \`delivering\`, also while an
intake is stalled or its key is refused. The body is JSON, the same for 200 and 503:

${table(['field', 'meaning'], [
    ['`ready`', 'What the status code says.'],
    ['`phase`', '`starting`, `running`, `draining` or `stopped`.'],
    ['`readiness`', 'The `metrics.readiness` setting.'],
    ['`down`', 'Inputs and listeners configured but not running (a reload could not start them); only when there are any.'],
    ['`intakes`', 'One object per intake: see below.'],
    ['`listeners`', 'HTTP listeners\' memory budgets: `name`, `saturated`, `inflight_bytes`, `budget_bytes`; only when there are any.'],
  ])}

Each of \`intakes\`:

${intakeRow}

## \`/status\`

The body of \`/readyz\`, always with \`200\`, and \`inputs\`: for each input (and shared listener) its
\`intake\` (absent for a shared listener), \`input\`, \`senders\` (how many it tracks) and \`silent\` (how
many of them are silent), and when some are, \`silent_senders\`: the first 20, as \`/senders\` gives them.
Each intake also has its rates and its backlog, from a snapshot the relay takes every 2 seconds:

${progressRow}

## \`/snapshot\`

What \`intake-relay top\` shows, as JSON, taken at one instant: counters are totals since the start
(a reader makes rates from two snapshots and their \`at\`), gauges are as they are now, every
thread's added up. \`{"at", "version", "phase", "intakes": [...], "inputs": [...], "threads": [...]}\`;
\`at\` is the time in milliseconds since the epoch, \`threads\` each thread's \`utilization\` (0 to 1).
Each of \`intakes\` has the fields of \`/status\` (\`name\`, \`output\`, \`state\`, \`stalled\`,
\`accepting\`, \`queued_events\`, \`unacked_events\`, \`last_error\`, the rates and \`backlog\`) and:

${snapshotRow}

Each of \`inputs\`: \`intake\` (\`""\` for a shared listener), \`input\`, \`received\` (events, to any
intake), \`connections\` (open now; 0 for UDP and file inputs), \`kernel_drops\` (UDP; null for the
others) and \`silent_senders\`.

## \`/senders\`

Every input's table of senders (see the \`senders\` settings of [configuration.md](configuration.md)):
\`{"inputs": [{"intake", "input", "tracked", "silent", "senders": [...]}]}\`, the silent senders first,
then the most recently seen.

${table(['parameter', 'meaning'], [
    [code('intake'), 'Only the inputs of this intake (any case).'],
    [code('input'), 'Only this input or shared listener.'],
    [code('silent'), '`1` (or `true`): only the silent senders. Default `0`.'],
    [code('limit'), 'Senders per input, 1 to 1000000. Default 1000.'],
  ])}

An unknown intake or input, or a malformed parameter, gets \`400\` with \`{"error": "..."}\`. Each sender:

${senderRow}

## \`/tap\`

The events the inputs receive, live, as they leave the parser: one JSON object per line
(\`application/x-ndjson\`), until the client goes or \`limit\` is reached. \`intake-relay tap\` reads it
and prints it. Each line has \`received_at\`, \`intake\`, \`input\`, \`sender\`, \`facility\`, \`severity\`,
\`header\`, \`timestamp\`, \`hostname\`, \`app_name\`, \`procid\`, \`msgid\`, \`structured_data\` and
\`message\`; every 5 seconds a \`{"notice", "skipped", "dropped"}\` line says what the view missed. The
pipeline never waits for a viewer: what a slow one misses is counted in
\`intake_relay_tap_dropped_total\`.

Who may use it is \`metrics.tap\`: \`local\` (the default) answers clients on the relay's host only
(loopback, or the host's own address when the server listens on it); \`any\` every client that
reaches the port (events can hold personal data); \`off\` nobody. A refused client gets \`403\`.

${table(['parameter', 'meaning'], [
    [code('intake'), 'Only this intake\'s events (any case).'],
    [code('input'), 'Only this input\'s or shared listener\'s events.'],
    [code('rate'), 'Events a second at most, 1 to 1000, spread evenly over what arrives. Default 100.'],
    [code('limit'), 'Stop after this many events; `0` (the default): no limit.'],
  ])}

A malformed parameter or an unknown intake or input gets \`400\`; more than ${MAX_VIEWERS} viewers at once, \`429\`.
`;
}
