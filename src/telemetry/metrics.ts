// Every metric intake-relay exports, in one place. Labels are bounded: intake name, input name,
// output type, reason, error code. Never a key, never event content. With workers, /metrics adds
// up every thread's metrics: counters and amounts summed, states by their `aggregator` (a stall
// or a refused key in any thread shows; the latest delivery of any thread counts).

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';


export class Metrics {
  readonly registry = new Registry();
  readonly #probes: (() => void)[] = [];

  /**
   * `probe` sets metrics read from live state (queue depth, kernel counters). Every probed metric
   * runs all probes when collected, so each reads fresh values whatever the order of collection.
   */
  addProbe(probe: () => void): () => void {
    this.#probes.push(probe);
    // Removes the probe (what it watched is gone: a reload removed an intake or an input).
    return () => {
      const i = this.#probes.indexOf(probe);
      if (i >= 0) this.#probes.splice(i, 1);
    };
  }

  #runProbes(): void {
    for (const p of this.#probes) p();
  }

  readonly eventsReceived = new Counter({
    name: 'intake_relay_events_received_total',
    help: 'Events received by an input and handed to the intake\'s queue or dropped.',
    labelNames: ['intake', 'input'] as const,
    registers: [this.registry],
  });
  readonly bytesReceived = new Counter({
    name: 'intake_relay_bytes_received_total',
    help: 'Bytes of framed events received by an input.',
    labelNames: ['intake', 'input'] as const,
    registers: [this.registry],
  });
  readonly eventsModified = new Counter({
    name: 'intake_relay_events_modified_total',
    help: 'Events forwarded after a repair: invalid UTF-8 replaced, truncated to max_message_bytes, split (a file line longer than max_line_bytes, counted once per line), or invalid_header (a header field outside RFC 5424 cleaned or cut, a BSD tag or malformed STRUCTURED-DATA left in MSG).',
    labelNames: ['intake', 'input', 'reason'] as const,
    registers: [this.registry],
  });
  readonly framingErrors = new Counter({
    name: 'intake_relay_framing_errors_total',
    help: 'Malformed frames on stream inputs: too_large (over max_message_bytes), relp_protocol (a RELP session that was not RELP, closed).',
    labelNames: ['intake', 'input', 'reason'] as const,
    registers: [this.registry],
  });
  readonly eventsDropped = new Counter({
    name: 'intake_relay_events_dropped_total',
    help: 'Events that will never be delivered, by reason.',
    labelNames: ['intake', 'stage', 'reason'] as const,
    registers: [this.registry],
  });
  readonly udpKernelDrops = new Counter({
    name: 'intake_relay_udp_kernel_drops_total',
    help: 'Datagrams the kernel dropped before intake-relay could read them (socket receive buffer full; Linux only). Raise receive_buffer_bytes.',
    labelNames: ['intake', 'input'] as const,
    registers: [this.registry],
    collect: () => this.#runProbes(),
  });
  readonly udpReceiveDrops = new Counter({
    name: 'intake_relay_udp_receive_drops_total',
    help: 'Datagrams a UDP receive thread read and dropped because the main thread had not taken the last 16 MiB it handed over (receive_threads: the relay cannot keep up; see CPU).',
    labelNames: ['intake', 'input'] as const,
    registers: [this.registry],
  });
  readonly routeDropped = new Counter({
    name: 'intake_relay_route_dropped_total',
    help: 'Events a shared listener did not hand to any intake: route_drop (a route said drop), no_route (nothing matched and the default is drop), too_large.',
    labelNames: ['listener', 'reason'] as const,
    registers: [this.registry],
  });
  readonly eventsFiltered = new Counter({
    name: 'intake_relay_events_filtered_total',
    help: 'Events dropped by an intake\'s filters, by rule (its description).',
    labelNames: ['intake', 'rule'] as const,
    registers: [this.registry],
  });
  readonly connections = new Gauge({
    name: 'intake_relay_input_connections',
    help: 'Open connections on a stream input.',
    labelNames: ['intake', 'input'] as const,
    registers: [this.registry],
  });
  readonly connectionsRejected = new Counter({
    name: 'intake_relay_input_connections_rejected_total',
    help: 'Connections refused or cut by an input (max_connections, TLS handshake failure, idle timeout, a PROXY protocol header from an untrusted address, malformed or late).',
    labelNames: ['intake', 'input', 'reason'] as const,
    registers: [this.registry],
  });
  readonly proxyHealthChecks = new Counter({
    name: 'intake_relay_input_proxy_health_checks_total',
    help: 'Load balancer health checks on a listener with the PROXY protocol: a LOCAL header, or a header and then the end or a reset, from any address. Not counted as refused.',
    labelNames: ['intake', 'input'] as const,
    registers: [this.registry],
  });
  readonly relpAnswers = new Counter({
    name: 'intake_relay_relp_answers_total',
    help: 'RELP messages (syslog transactions) a RELP input answered, by code: 200 accepted (as respond_when says: in the queue, fsynced by a disk queue, or delivered), 500 refused (over the size limit, session not open). Opens are counted apart.',
    labelNames: ['intake', 'input', 'code'] as const,
    registers: [this.registry],
  });
  readonly relpOpens = new Counter({
    name: 'intake_relay_relp_sessions_opened_total',
    help: 'RELP sessions a RELP input opened (their open command answered 200).',
    labelNames: ['intake', 'input'] as const,
    registers: [this.registry],
  });
  readonly inputPaused = new Counter({
    name: 'intake_relay_input_pauses_total',
    help: 'Times a stream input stopped reading (backpressure): its queue was full, or held a tenth of its limits while the output was taking batches; for RELP also a sender that does not read its answers, or too many answers waiting for an earlier one.',
    labelNames: ['intake', 'input'] as const,
    registers: [this.registry],
  });
  readonly sendersTracked = new Gauge({
    name: 'intake_relay_senders',
    help: 'Senders an input has seen and still tracks (seen within senders.known_within_ms, at most senders.max_tracked).',
    labelNames: ['intake', 'input'] as const,
    registers: [this.registry],
  });
  readonly sendersSilent = new Gauge({
    name: 'intake_relay_senders_silent',
    help: 'Known senders of an input that have sent nothing for senders.silent_after_ms: /status and the log name them.',
    labelNames: ['intake', 'input'] as const,
    registers: [this.registry],
  });
  readonly sendersEvicted = new Counter({
    name: 'intake_relay_senders_evicted_total',
    help: 'Senders forgotten to make room in a full table of senders (senders.max_tracked): active ones seen longest ago first, silent ones last.',
    labelNames: ['intake', 'input'] as const,
    registers: [this.registry],
  });
  readonly senderEvents = new Counter({
    name: 'intake_relay_sender_events_total',
    help: 'Events an input received per sender (address, or hostname for file and HTTP inputs); only with senders.metrics: true, at most senders.max_series series per input.',
    labelNames: ['intake', 'input', 'sender'] as const,
    registers: [this.registry],
  });
  readonly senderSeriesOverflow = new Counter({
    name: 'intake_relay_sender_series_overflow_total',
    help: 'Events of senders that got no intake_relay_sender_events_total series (senders.max_series reached).',
    labelNames: ['intake', 'input'] as const,
    registers: [this.registry],
  });
  readonly threadUtilization = new Gauge({
    name: 'intake_relay_thread_utilization',
    help: 'Share of the last second each thread of the relay was busy (event loop utilization, 0 to 1): near 1, that thread is at its limit. thread: main, or a worker\'s number (workers: N).',
    labelNames: ['thread'] as const,
    registers: [this.registry],
    collect: () => this.#runProbes(),
  });
  readonly tapViewers = new Gauge({
    name: 'intake_relay_tap_viewers',
    aggregator: 'max',
    help: 'Viewers of the live tap (intake-relay tap) connected now.',
    registers: [this.registry],
  });
  readonly tapDropped = new Counter({
    name: 'intake_relay_tap_dropped_total',
    help: 'Events a tap viewer did not get because it was not reading fast enough (the pipeline never waits for a viewer).',
    registers: [this.registry],
  });
  readonly filesTracked = new Gauge({
    name: 'intake_relay_files_tracked',
    help: 'Files a file input follows (matched by its paths, or rotated away and read to their end).',
    labelNames: ['intake', 'input'] as const,
    registers: [this.registry],
    collect: () => this.#runProbes(),
  });
  readonly filesOpen = new Gauge({
    name: 'intake_relay_files_open',
    help: 'Files a file input holds open (at most max_open_files).',
    labelNames: ['intake', 'input'] as const,
    registers: [this.registry],
    collect: () => this.#runProbes(),
  });
  readonly fileUnreadBytes = new Gauge({
    name: 'intake_relay_file_unread_bytes',
    help: 'Bytes appended to followed files and not read yet (a reader falling behind, or paused by a full queue).',
    labelNames: ['intake', 'input'] as const,
    registers: [this.registry],
    collect: () => this.#runProbes(),
  });
  readonly fileRotations = new Counter({
    name: 'intake_relay_file_rotations_total',
    help: 'Rotations seen by a file input: rename (read to its end, then closed), truncate (copytruncate: read again from the start), delete, copy (a copy of a file already read starts where that file was).',
    labelNames: ['intake', 'input', 'kind'] as const,
    registers: [this.registry],
  });
  readonly fileErrors = new Counter({
    name: 'intake_relay_file_errors_total',
    help: 'Errors of a file input: reason is the system error code (EACCES, EMFILE, ...), checkpoint (the checkpoint file could not be written), or, for a file copytruncated while the relay was stopped, copy_compressed (its rotated copy, holding unread lines, was already compressed) or copy_missing (no rotated copy found), or deleted_unread (a file closed at max_open_files with unread bytes was deleted or replaced before it could be reopened: those bytes are lost).',
    labelNames: ['intake', 'input', 'reason'] as const,
    registers: [this.registry],
  });
  readonly diskQueueBytes = new Gauge({
    name: 'intake_relay_disk_queue_bytes',
    help: 'Bytes of a disk queue\'s segment files.',
    labelNames: ['intake'] as const,
    registers: [this.registry],
    collect: () => this.#runProbes(),
  });
  readonly diskQueueEvents = new Gauge({
    name: 'intake_relay_disk_queue_events',
    help: 'Events in a disk queue not delivered yet.',
    labelNames: ['intake'] as const,
    registers: [this.registry],
    collect: () => this.#runProbes(),
  });
  readonly diskQueueOldestAge = new Gauge({
    name: 'intake_relay_disk_queue_oldest_event_age_seconds',
    help: 'Age of the oldest event in a disk queue not delivered yet (0 when empty).',
    labelNames: ['intake'] as const,
    registers: [this.registry],
    collect: () => this.#runProbes(),
  });
  readonly diskQueueWritten = new Counter({
    name: 'intake_relay_disk_queue_written_bytes_total',
    help: 'Bytes appended to a disk queue.',
    labelNames: ['intake'] as const,
    registers: [this.registry],
  });
  readonly diskQueueSynced = new Counter({
    name: 'intake_relay_disk_queue_fsynced_bytes_total',
    help: 'Bytes of a disk queue made durable by fsync.',
    labelNames: ['intake'] as const,
    registers: [this.registry],
  });
  readonly diskQueueErrors = new Counter({
    name: 'intake_relay_disk_queue_errors_total',
    help: 'Failed writes to a disk queue, by system error code (ENOSPC: disk full); the queue counts as full meanwhile.',
    labelNames: ['intake', 'code'] as const,
    registers: [this.registry],
  });
  readonly diskQueueRecovered = new Counter({
    name: 'intake_relay_disk_queue_recovered_events_total',
    help: 'Events found in a disk queue at start (not delivered before the last stop), to be delivered now.',
    labelNames: ['intake'] as const,
    registers: [this.registry],
  });
  readonly queueEvents = new Gauge({
    name: 'intake_relay_queue_events',
    help: 'Events waiting for delivery: in the intake\'s queue or being retried.',
    labelNames: ['intake'] as const,
    registers: [this.registry],
    collect: () => this.#runProbes(),
  });
  readonly queueOldestAge = new Gauge({
    name: 'intake_relay_queue_oldest_event_age_seconds',
    aggregator: 'max',
    help: 'Age of the oldest event waiting for delivery in the intake\'s queue (a memory queue: waiting to be taken, not counting a batch being sent; a disk queue: not delivered yet); 0 when empty.',
    labelNames: ['intake'] as const,
    registers: [this.registry],
    collect: () => this.#runProbes(),
  });
  readonly queueMaxEvents = new Gauge({
    name: 'intake_relay_queue_max_events',
    help: 'A memory queue\'s max_events: intake_relay_queue_events / this is how full it is.',
    labelNames: ['intake'] as const,
    registers: [this.registry],
  });
  readonly queueMaxBytes = new Gauge({
    name: 'intake_relay_queue_max_bytes',
    help: 'The queue\'s max_bytes: for a memory queue, intake_relay_queue_bytes / this is how full it is; for a disk queue, intake_relay_disk_queue_bytes / this.',
    labelNames: ['intake'] as const,
    registers: [this.registry],
  });
  readonly buildInfo = new Gauge({
    name: 'intake_relay_build_info',
    aggregator: 'first',
    help: 'Always 1: the version, commit and Node.js version of the running relay.',
    labelNames: ['version', 'commit', 'node'] as const,
    registers: [this.registry],
  });
  readonly queueBytes = new Gauge({
    name: 'intake_relay_queue_bytes',
    help: 'Bytes of events waiting for delivery: in the intake\'s queue or being retried.',
    labelNames: ['intake'] as const,
    registers: [this.registry],
    collect: () => this.#runProbes(),
  });
  readonly unackedEvents = new Gauge({
    name: 'intake_relay_output_unacked_events',
    help: 'Events written to the output but not yet acknowledged (syslog: inside the resend window).',
    labelNames: ['intake'] as const,
    registers: [this.registry],
    collect: () => this.#runProbes(),
  });
  readonly eventsSent = new Counter({
    name: 'intake_relay_events_sent_total',
    help: 'Events delivered to the intake and acknowledged.',
    labelNames: ['intake', 'output'] as const,
    registers: [this.registry],
  });
  readonly bytesSent = new Counter({
    name: 'intake_relay_bytes_sent_total',
    help: 'Bytes written to the intake (framed, before TLS).',
    labelNames: ['intake', 'output'] as const,
    registers: [this.registry],
  });
  readonly eventsResent = new Counter({
    name: 'intake_relay_events_resent_total',
    help: 'Events written again after the output connection was lost before they were acknowledged (possible duplicates).',
    labelNames: ['intake', 'output'] as const,
    registers: [this.registry],
  });
  readonly outputConnected = new Gauge({
    name: 'intake_relay_output_connected',
    aggregator: 'min',
    help: '1 while the output has an open connection to the intake.',
    labelNames: ['intake', 'output'] as const,
    registers: [this.registry],
  });
  readonly outputReconnects = new Counter({
    name: 'intake_relay_output_connects_total',
    help: 'Output connections established.',
    labelNames: ['intake', 'output'] as const,
    registers: [this.registry],
  });
  readonly outputTlsResumed = new Counter({
    name: 'intake_relay_output_tls_resumed_total',
    help: 'Output connections whose TLS handshake resumed an earlier session (of intake_relay_output_connects_total).',
    labelNames: ['intake', 'output'] as const,
    registers: [this.registry],
  });
  readonly outputErrors = new Counter({
    name: 'intake_relay_output_errors_total',
    help: 'Failed delivery attempts, by error code.',
    labelNames: ['intake', 'output', 'code'] as const,
    registers: [this.registry],
  });
  readonly outputRetries = new Counter({
    name: 'intake_relay_output_retries_total',
    help: 'Delivery attempts that failed and will be retried.',
    labelNames: ['intake', 'output'] as const,
    registers: [this.registry],
  });
  readonly outputKeyRejected = new Gauge({
    name: 'intake_relay_output_key_rejected',
    aggregator: 'max',
    help: '1 while the intake refuses this intake\'s key (HTTP 401/403): events are kept, the output is not ready.',
    labelNames: ['intake', 'output'] as const,
    registers: [this.registry],
  });
  readonly concurrencyLimit = new Gauge({
    name: 'intake_relay_output_concurrency_limit',
    help: 'Sends the output may have in flight now (adaptive for HTTP unless fixed).',
    labelNames: ['intake', 'output'] as const,
    registers: [this.registry],
  });
  readonly inFlight = new Gauge({
    name: 'intake_relay_output_in_flight',
    help: 'Sends in flight.',
    labelNames: ['intake', 'output'] as const,
    registers: [this.registry],
  });
  readonly httpRequests = new Counter({
    name: 'intake_relay_http_requests_total',
    help: 'HTTP requests to the intake by status class (2xx, 4xx, 5xx, or error when no answer came).',
    labelNames: ['intake', 'status_class'] as const,
    registers: [this.registry],
  });
  readonly httpBodyBytes = new Counter({
    name: 'intake_relay_http_body_bytes_total',
    help: 'Bytes of JSON request bodies before compression (bytes_sent_total counts what went on the wire).',
    labelNames: ['intake'] as const,
    registers: [this.registry],
  });
  readonly httpRequestDuration = new Histogram({
    name: 'intake_relay_http_request_duration_seconds',
    help: 'Time from sending an HTTP request to its complete answer.',
    labelNames: ['intake'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly httpInputRequests = new Counter({
    name: 'intake_relay_http_input_requests_total',
    help: 'Requests the HTTP input accepted, by the success status it answered.',
    labelNames: ['listener', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpInputRefused = new Counter({
    name: 'intake_relay_http_input_refused_total',
    help: 'Requests the HTTP input refused or could not finish, by reason (throttled, over_budget, unauthorized, invalid_json, too_deep, body_too_large, client_closed, ...).',
    labelNames: ['listener', 'reason'] as const,
    registers: [this.registry],
  });
  readonly httpInputInflightBytes = new Gauge({
    name: 'intake_relay_http_input_inflight_bytes',
    help: 'Bytes of the HTTP input\'s memory budget (max_inflight_bytes) held by requests in flight: bodies as received, inflated, and being parsed.',
    labelNames: ['listener'] as const,
    registers: [this.registry],
    collect: () => this.#runProbes(),
  });
  readonly outputStalled = new Gauge({
    name: 'intake_relay_output_stalled',
    aggregator: 'max',
    help: 'Whether an intake is stalled (1): events waiting and no delivery for metrics.stall_timeout_ms, or its key refused. Alert on it; /readyz ignores it unless readiness is delivering.',
    labelNames: ['intake'] as const,
    registers: [this.registry],
    collect: () => this.#runProbes(),
  });
  readonly outputSinceDelivery = new Gauge({
    name: 'intake_relay_output_seconds_since_delivery',
    aggregator: 'min',
    help: 'Seconds since the intake last acknowledged a delivery (since the start when none yet).',
    labelNames: ['intake'] as const,
    registers: [this.registry],
    collect: () => this.#runProbes(),
  });
  readonly lastDelivery = new Gauge({
    name: 'intake_relay_output_last_delivery_timestamp_seconds',
    aggregator: 'max',
    help: 'Time of the last acknowledged delivery.',
    labelNames: ['intake', 'output'] as const,
    registers: [this.registry],
  });
  readonly sendDuration = new Histogram({
    name: 'intake_relay_batch_send_duration_seconds',
    help: 'Time for one batch write attempt.',
    labelNames: ['intake', 'output'] as const,
    buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [this.registry],
  });
  readonly batchEvents = new Histogram({
    name: 'intake_relay_batch_events',
    help: 'Events per batch handed to the output.',
    labelNames: ['intake', 'output'] as const,
    buckets: [1, 10, 50, 100, 500, 1000, 5000, 10000],
    registers: [this.registry],
  });
  readonly configInfo = new Gauge({
    name: 'intake_relay_intake_info',
    aggregator: 'first',
    help: 'One series per configured intake (value 1), with its output type.',
    labelNames: ['intake', 'output'] as const,
    registers: [this.registry],
  });

  readonly reloadSuccessful = new Gauge({
    name: 'intake_relay_config_last_reload_successful',
    aggregator: 'min',
    help: 'Whether the last configuration reload applied whole (1), or was refused or left something that could not start (0). 1 at start.',
    registers: [this.registry],
  });
  readonly reloadSuccessTime = new Gauge({
    name: 'intake_relay_config_last_reload_success_timestamp_seconds',
    aggregator: 'min',
    help: 'Time of the last configuration that applied whole (the start, or a reload).',
    registers: [this.registry],
  });

  constructor(defaultMetrics = true) {
    if (!defaultMetrics) return;
    // One prefix: intake_relay_process_* and intake_relay_nodejs_*.
    collectDefaultMetrics({ register: this.registry, prefix: 'intake_relay_' });
    // Gauges named like counters (_total), which Prometheus' own linter refuses: the handle and
    // request counts they give are in the event loop and heap metrics anyway.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) this.registry.removeSingleMetric(`intake_relay_${name}`);
  }
}
