// Every metric intake-relay exports, in one place. Labels are bounded: intake name, input name,
// output type, reason, error code. Never a key, never event content. With workers, /metrics adds
// up every thread's metrics: counters and amounts summed, states by their `aggregator` (a stall
// or a refused key in any thread shows; the latest delivery of any thread counts).

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** How a metric's values across threads add up (default: summed), and whether it is read from live state when collected. */
interface Extra {
  readonly aggregator?: 'sum' | 'first' | 'min' | 'max' | 'average' | 'omit';
  readonly probed?: boolean;
}

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

  #counter<const L extends string>(name: string, labelNames: readonly L[], help: string, o: Extra = {}): Counter<L> {
    return new Counter({ name, help, labelNames, registers: [this.registry], ...(o.aggregator ? { aggregator: o.aggregator } : {}), ...(o.probed ? { collect: () => this.#runProbes() } : {}) });
  }

  #gauge<const L extends string>(name: string, labelNames: readonly L[], help: string, o: Extra = {}): Gauge<L> {
    return new Gauge({ name, help, labelNames, registers: [this.registry], ...(o.aggregator ? { aggregator: o.aggregator } : {}), ...(o.probed ? { collect: () => this.#runProbes() } : {}) });
  }

  readonly eventsReceived = this.#counter('intake_relay_events_received_total', ['intake', 'input'],
    'Events received by an input and handed to the intake\'s queue or dropped.');
  readonly bytesReceived = this.#counter('intake_relay_bytes_received_total', ['intake', 'input'],
    'Bytes of framed events received by an input.');
  readonly eventsModified = this.#counter('intake_relay_events_modified_total', ['intake', 'input', 'reason'],
    'Events forwarded after a repair: invalid UTF-8 replaced, truncated to max_message_bytes, split (a file line longer than max_line_bytes, counted once per line), or invalid_header (a header field outside RFC 5424 cleaned or cut, a BSD tag or malformed STRUCTURED-DATA left in MSG).');
  readonly framingErrors = this.#counter('intake_relay_framing_errors_total', ['intake', 'input', 'reason'],
    'Malformed frames on stream inputs: too_large (over max_message_bytes), relp_protocol (a RELP session that was not RELP, closed).');
  readonly eventsDropped = this.#counter('intake_relay_events_dropped_total', ['intake', 'stage', 'reason'],
    'Events that will never be delivered, by reason.');
  readonly udpKernelDrops = this.#counter('intake_relay_udp_kernel_drops_total', ['intake', 'input'],
    'Datagrams the kernel dropped before intake-relay could read them (socket receive buffer full; Linux only). Raise receive_buffer_bytes.', { probed: true });
  readonly udpReceiveDrops = this.#counter('intake_relay_udp_receive_drops_total', ['intake', 'input'],
    'Datagrams read from a UDP socket and dropped because the main thread had not taken what was read before them (by the native reader thread, or by receive_threads; a sixth of the intake\'s share of memory_bytes, 16 MiB at most): the relay cannot keep up; see CPU.');
  readonly routeDropped = this.#counter('intake_relay_route_dropped_total', ['listener', 'reason'],
    'Events a shared listener did not hand to any intake: route_drop (a route said drop), no_route (nothing matched and the default is drop), too_large.');
  readonly eventsFiltered = this.#counter('intake_relay_events_filtered_total', ['intake', 'rule'],
    'Events dropped by an intake\'s filters, by rule (its description).');
  readonly connections = this.#gauge('intake_relay_input_connections', ['intake', 'input'],
    'Open connections on a stream input.');
  readonly connectionsRejected = this.#counter('intake_relay_input_connections_rejected_total', ['intake', 'input', 'reason'],
    'Connections refused or cut by an input (max_connections, TLS handshake failure, idle timeout, a PROXY protocol header from an untrusted address, malformed or late).');
  readonly proxyHealthChecks = this.#counter('intake_relay_input_proxy_health_checks_total', ['intake', 'input'],
    'Load balancer health checks on a listener with the PROXY protocol: a LOCAL header, or a header and then the end or a reset, from any address. Not counted as refused.');
  readonly relpAnswers = this.#counter('intake_relay_relp_answers_total', ['intake', 'input', 'code'],
    'RELP messages (syslog transactions) a RELP input answered, by code: 200 accepted (as respond_when says: in the queue, fsynced by a disk queue, or delivered), 500 refused (over the size limit, session not open). Opens are counted apart.');
  readonly relpOpens = this.#counter('intake_relay_relp_sessions_opened_total', ['intake', 'input'],
    'RELP sessions a RELP input opened (their open command answered 200).');
  readonly inputPaused = this.#counter('intake_relay_input_pauses_total', ['intake', 'input'],
    'Times a stream input stopped reading (backpressure): its queue was full, or held two batches (2% of its limits if more) while the output was taking batches; for RELP also a sender that does not read its answers, or too many answers waiting for an earlier one.');
  readonly sendersTracked = this.#gauge('intake_relay_senders', ['intake', 'input'],
    'Senders an input has seen and still tracks (seen within senders.known_within_ms, at most senders.max_tracked).');
  readonly sendersSilent = this.#gauge('intake_relay_senders_silent', ['intake', 'input'],
    'Known senders of an input that have sent nothing for senders.silent_after_ms: /status and the log name them.');
  readonly sendersEvicted = this.#counter('intake_relay_senders_evicted_total', ['intake', 'input'],
    'Senders forgotten to make room in a full table of senders (senders.max_tracked): active ones seen longest ago first, silent ones last.');
  readonly senderEvents = this.#counter('intake_relay_sender_events_total', ['intake', 'input', 'sender'],
    'Events an input received per sender (address, or hostname for file and HTTP inputs); only with senders.metrics: true, at most senders.max_series series per input.');
  readonly senderSeriesOverflow = this.#counter('intake_relay_sender_series_overflow_total', ['intake', 'input'],
    'Events of senders that got no intake_relay_sender_events_total series (senders.max_series reached).');
  readonly memoryCollections = this.#counter('intake_relay_memory_collections_total', [],
    'Times the process\'s anonymous memory came near memory_bytes and every thread was asked to collect its heap (the C library then giving its free memory back). Many mean the budget is tight for the load; each costs CPU.');
  readonly memoryAnonymous = this.#gauge('intake_relay_memory_anonymous_bytes', [],
    'The process\'s anonymous memory now (RssAnon: what the kernel cannot take back, what a container\'s limit counts), to compare with intake_relay_memory_budget_bytes. Linux only.', { probed: true, aggregator: 'max' });
  readonly memoryBudget = this.#gauge('intake_relay_memory_budget_bytes', [],
    'memory_bytes: the memory the relay aims to stay under, from which its bounds derive and near which it collects.', { probed: true, aggregator: 'max' });
  readonly threadUtilization = this.#gauge('intake_relay_thread_utilization', ['thread'],
    'Share of the last second each thread of the relay was busy (event loop utilization, 0 to 1): near 1, that thread is at its limit. thread: main, or a worker\'s number (workers: N).', { probed: true });
  readonly tapViewers = this.#gauge('intake_relay_tap_viewers', [],
    'Viewers of the live tap (intake-relay tap) connected now.', { aggregator: 'max' });
  readonly tapDropped = this.#counter('intake_relay_tap_dropped_total', [],
    'Events a tap viewer did not get because it was not reading fast enough (the pipeline never waits for a viewer).');
  readonly filesTracked = this.#gauge('intake_relay_files_tracked', ['intake', 'input'],
    'Files a file input follows (matched by its paths, or rotated away and read to their end).', { probed: true });
  readonly filesOpen = this.#gauge('intake_relay_files_open', ['intake', 'input'],
    'Files a file input holds open (at most max_open_files).', { probed: true });
  readonly fileUnreadBytes = this.#gauge('intake_relay_file_unread_bytes', ['intake', 'input'],
    'Bytes appended to followed files and not read yet (a reader falling behind, or paused by a full queue).', { probed: true });
  readonly fileRotations = this.#counter('intake_relay_file_rotations_total', ['intake', 'input', 'kind'],
    'Rotations seen by a file input: rename (read to its end, then closed), truncate (copytruncate: read again from the start), delete, copy (a copy of a file already read starts where that file was).');
  readonly fileErrors = this.#counter('intake_relay_file_errors_total', ['intake', 'input', 'reason'],
    'Errors of a file input: reason is the system error code (EACCES, EMFILE, ...), checkpoint (the checkpoint file could not be written), or, for a file copytruncated while the relay was stopped, copy_compressed (its rotated copy, holding unread lines, was already compressed) or copy_missing (no rotated copy found), or deleted_unread (a file closed at max_open_files with unread bytes was deleted or replaced before it could be reopened: those bytes are lost).');
  readonly diskQueueBytes = this.#gauge('intake_relay_disk_queue_bytes', ['intake'],
    'Bytes of a disk queue\'s segment files.', { probed: true });
  readonly diskQueueEvents = this.#gauge('intake_relay_disk_queue_events', ['intake'],
    'Events in a disk queue not delivered yet.', { probed: true });
  readonly diskQueueOldestAge = this.#gauge('intake_relay_disk_queue_oldest_event_age_seconds', ['intake'],
    'Age of the oldest event in a disk queue not delivered yet (0 when empty).', { probed: true });
  readonly diskQueueWritten = this.#counter('intake_relay_disk_queue_written_bytes_total', ['intake'],
    'Bytes appended to a disk queue.');
  readonly diskQueueSynced = this.#counter('intake_relay_disk_queue_fsynced_bytes_total', ['intake'],
    'Bytes of a disk queue made durable by fsync.');
  readonly diskQueueErrors = this.#counter('intake_relay_disk_queue_errors_total', ['intake', 'code'],
    'Failed writes to a disk queue, by system error code (ENOSPC: disk full); the queue counts as full meanwhile.');
  readonly diskQueueRecovered = this.#counter('intake_relay_disk_queue_recovered_events_total', ['intake'],
    'Events found in a disk queue at start (not delivered before the last stop), to be delivered now.');
  readonly queueEvents = this.#gauge('intake_relay_queue_events', ['intake'],
    'Events waiting for delivery: in the intake\'s queue or being retried.', { probed: true });
  readonly queueOldestAge = this.#gauge('intake_relay_queue_oldest_event_age_seconds', ['intake'],
    'Age of the oldest event waiting for delivery in the intake\'s queue (a memory queue: waiting to be taken, not counting a batch being sent; a disk queue: not delivered yet); 0 when empty.', { aggregator: 'max', probed: true });
  readonly queueMaxEvents = this.#gauge('intake_relay_queue_max_events', ['intake'],
    'A memory queue\'s max_events: intake_relay_queue_events / this is how full it is.');
  readonly queueMaxBytes = this.#gauge('intake_relay_queue_max_bytes', ['intake'],
    'The queue\'s max_bytes: for a memory queue, intake_relay_queue_bytes / this is how full it is; for a disk queue, intake_relay_disk_queue_bytes / this.');
  readonly buildInfo = this.#gauge('intake_relay_build_info', ['version', 'commit', 'node'],
    'Always 1: the version, commit and Node.js version of the running relay.', { aggregator: 'first' });
  readonly queueBytes = this.#gauge('intake_relay_queue_bytes', ['intake'],
    'Bytes of events waiting for delivery: in the intake\'s queue or being retried.', { probed: true });
  readonly unackedEvents = this.#gauge('intake_relay_output_unacked_events', ['intake'],
    'Events written to the output but not yet acknowledged (syslog: inside the resend window).', { probed: true });
  readonly eventsSent = this.#counter('intake_relay_events_sent_total', ['intake', 'output'],
    'Events delivered to the intake and acknowledged.');
  readonly bytesSent = this.#counter('intake_relay_bytes_sent_total', ['intake', 'output'],
    'Bytes written to the intake (framed, before TLS).');
  readonly eventsResent = this.#counter('intake_relay_events_resent_total', ['intake', 'output'],
    'Events written again after the output connection was lost before they were acknowledged (possible duplicates).');
  readonly outputConnected = this.#gauge('intake_relay_output_connected', ['intake', 'output'],
    '1 while the output has an open connection to the intake.', { aggregator: 'min' });
  readonly outputReconnects = this.#counter('intake_relay_output_connects_total', ['intake', 'output'],
    'Output connections established.');
  readonly outputTlsResumed = this.#counter('intake_relay_output_tls_resumed_total', ['intake', 'output'],
    'Output connections whose TLS handshake resumed an earlier session (of intake_relay_output_connects_total).');
  readonly outputSuspended = this.#counter('intake_relay_output_suspended_total', ['intake', 'output'],
    'Times the output stopped delivering: its first failed attempt after a success (or the start).');
  readonly outputResumed = this.#counter('intake_relay_output_resumed_total', ['intake', 'output'],
    'Times the output delivered again after it had stopped.');
  readonly outputSuspendedSeconds = this.#counter('intake_relay_output_suspended_seconds_total', ['intake', 'output'],
    'Time the output spent stopped (failing), added as it passes.');
  readonly outputErrors = this.#counter('intake_relay_output_errors_total', ['intake', 'output', 'code'],
    'Failed delivery attempts, by error code.');
  readonly outputRetries = this.#counter('intake_relay_output_retries_total', ['intake', 'output'],
    'Delivery attempts that failed and will be retried.');
  readonly outputKeyRejected = this.#gauge('intake_relay_output_key_rejected', ['intake', 'output'],
    '1 while the intake refuses this intake\'s key (HTTP 401/403): events are kept, the output is not ready.', { aggregator: 'max' });
  readonly concurrencyLimit = this.#gauge('intake_relay_output_concurrency_limit', ['intake', 'output'],
    'Sends the output may have in flight now (adaptive for HTTP unless fixed).');
  readonly inFlight = this.#gauge('intake_relay_output_in_flight', ['intake', 'output'],
    'Sends (requests, for the HTTP output) in flight now: each attempt from its start to its end.');
  readonly httpRequests = this.#counter('intake_relay_http_requests_total', ['intake', 'status_class'],
    'HTTP requests to the intake by status class (2xx, 4xx, 5xx, or error when no answer came).');
  readonly httpBodyBytes = this.#counter('intake_relay_http_body_bytes_total', ['intake'],
    'Bytes of JSON request bodies before compression (bytes_sent_total counts what went on the wire).');
  readonly httpRequestDuration = new Histogram({
    name: 'intake_relay_http_request_duration_seconds',
    help: 'Time from sending an HTTP request to its complete answer.',
    labelNames: ['intake'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly httpInputRequests = this.#counter('intake_relay_http_input_requests_total', ['listener', 'status'],
    'Requests the HTTP input accepted, by the success status it answered.');
  readonly httpInputRefused = this.#counter('intake_relay_http_input_refused_total', ['listener', 'reason'],
    'Requests the HTTP input refused or could not finish, by reason (throttled, over_budget, unauthorized, invalid_json, too_deep, body_too_large, client_closed, ...).');
  readonly httpInputInflightBytes = this.#gauge('intake_relay_http_input_inflight_bytes', ['listener'],
    'Bytes of the HTTP input\'s memory budget (max_inflight_bytes) held by requests in flight: bodies as received, inflated, and being parsed.', { probed: true });
  readonly outputStalled = this.#gauge('intake_relay_output_stalled', ['intake'],
    'Whether an intake is stalled (1): events waiting and no delivery for metrics.stall_timeout_ms, or its key refused. Alert on it; /readyz ignores it unless readiness is delivering.', { aggregator: 'max', probed: true });
  readonly outputSinceDelivery = this.#gauge('intake_relay_output_seconds_since_delivery', ['intake'],
    'Seconds since the intake last acknowledged a delivery (since the start when none yet).', { aggregator: 'min', probed: true });
  readonly lastDelivery = this.#gauge('intake_relay_output_last_delivery_timestamp_seconds', ['intake', 'output'],
    'Time of the last acknowledged delivery.', { aggregator: 'max' });
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
  readonly configInfo = this.#gauge('intake_relay_intake_info', ['intake', 'output'],
    'One series per configured intake (value 1), with its output type.', { aggregator: 'first' });

  readonly reloadSuccessful = this.#gauge('intake_relay_config_last_reload_successful', [],
    'Whether the last configuration reload applied whole (1), or was refused or left something that could not start (0). 1 at start.', { aggregator: 'min' });
  readonly reloadSuccessTime = this.#gauge('intake_relay_config_last_reload_success_timestamp_seconds', [],
    'Time of the last configuration that applied whole (the start, or a reload).', { aggregator: 'min' });

  constructor(defaultMetrics = true) {
    if (!defaultMetrics) return;
    // One prefix: intake_relay_process_* and intake_relay_nodejs_*.
    collectDefaultMetrics({ register: this.registry, prefix: 'intake_relay_' });
    // Gauges named like counters (_total), which Prometheus' own linter refuses: the handle and
    // request counts they give are in the event loop and heap metrics anyway.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) this.registry.removeSingleMetric(`intake_relay_${name}`);
  }
}
