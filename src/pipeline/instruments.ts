// The telemetry components report through (core/telemetry.ts), bound to their labels: counters and
// gauges from the one metrics registry, and rate-limited logs from a child logger.

import type { Logger } from 'pino';
import { RateLimiter } from '../core/rate-limiter.ts';
import type { ComponentLog, HttpOutputTelemetry, Instruments, OutputTelemetry } from '../core/telemetry.ts';
import type { Metrics } from '../telemetry/metrics.ts';

/** A child logger with `fields` bound, and one line per key every 10 s for lines that could fire per event. */
export function componentLog(log: Logger, fields: Record<string, unknown>): ComponentLog {
  const logger = log.child(fields);
  const limiter = new RateLimiter(10_000);
  const emit = (level: 'info' | 'warn' | 'error', key: string, extra: object, msg: string): void => {
    const suppressed = limiter.allow(key);
    if (suppressed !== undefined) logger[level]({ ...extra, suppressed }, msg);
  };
  return {
    logger,
    info: (key, extra, msg) => emit('info', key, extra, msg),
    warn: (key, extra, msg) => emit('warn', key, extra, msg),
    error: (key, err, extra, msg) => emit('error', key, { ...extra, err }, msg),
  };
}

export function outputTelemetry(m: Metrics, log: Logger, intake: string, output: string): OutputTelemetry {
  const labels = { intake, output };
  const sent = m.eventsSent.labels(labels);
  const bytes = m.bytesSent.labels(labels);
  const resent = m.eventsResent.labels(labels);
  const retries = m.outputRetries.labels(labels);
  const connected = m.outputConnected.labels(labels);
  const connects = m.outputReconnects.labels(labels);
  const keyRejected = m.outputKeyRejected.labels(labels);
  const lastDelivery = m.lastDelivery.labels(labels);
  const duration = m.sendDuration.labels(labels);
  const batchEvents = m.batchEvents.labels(labels);
  const limit = m.concurrencyLimit.labels(labels);
  const inFlight = m.inFlight.labels(labels);
  return {
    log: componentLog(log, labels),
    acknowledged(events, at) {
      sent.inc(events);
      lastDelivery.set(at / 1000);
    },
    wrote: (n) => bytes.inc(n),
    resent: (n) => resent.inc(n),
    error: (code) => m.outputErrors.inc({ intake, output, code }),
    retried: () => retries.inc(),
    dropped: (reason, events) => m.eventsDropped.inc({ intake, stage: 'output', reason }, events),
    connected: (up) => connected.set(up ? 1 : 0),
    reconnected: () => connects.inc(),
    keyRejected: (on) => keyRejected.set(on ? 1 : 0),
    sendSeconds: (s) => duration.observe(s),
    batchEvents: (n) => batchEvents.observe(n),
    concurrency: (n) => limit.set(n),
    inFlight: (n) => inFlight.set(n),
  };
}

export function httpOutputTelemetry(m: Metrics, intake: string): HttpOutputTelemetry {
  const classes = {
    '2xx': m.httpRequests.labels({ intake, status_class: '2xx' }),
    '4xx': m.httpRequests.labels({ intake, status_class: '4xx' }),
    '5xx': m.httpRequests.labels({ intake, status_class: '5xx' }),
    other: m.httpRequests.labels({ intake, status_class: 'other' }),
    error: m.httpRequests.labels({ intake, status_class: 'error' }),
  };
  const body = m.httpBodyBytes.labels({ intake });
  const duration = m.httpRequestDuration.labels({ intake });
  return {
    request: (c) => classes[c].inc(),
    bodyBytes: (n) => body.inc(n),
    requestSeconds: (s) => duration.observe(s),
  };
}

/** The instruments of the components of intake `intake` (its output, its inputs). */
export function intakeInstruments(m: Metrics, intake: string): Instruments {
  return {
    httpOutput: () => httpOutputTelemetry(m, intake),
  };
}
