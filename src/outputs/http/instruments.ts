// The HTTP output's own telemetry (core/telemetry.ts) from the metrics registry: requests by status
// class, body sizes, request durations, per intake.

import type { HttpOutputTelemetry } from '../../core/telemetry.ts';
import type { Metrics } from '../../telemetry/metrics.ts';

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
