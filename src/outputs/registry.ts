// Builds an intake's output from its resolved configuration (the daemon, and `intake-relay send`).

import type { ResolvedIntake } from '../config/load.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { VERSION } from '../version.ts';
import { HttpJsonSink } from './http-json.ts';
import { Rfc5424Formatter } from '../syslog/format.ts';
import type { Sink } from '../core/contracts.ts';
import { SyslogTlsSink } from './syslog-tls.ts';
import { unreadCapacityBytes } from './tcp-buffers.ts';

/** Key used towards the emulator for intakes that have none (emulator.when: no_intake_key). */
export const EMULATOR_DEMO_KEY = 'emulatorDemoKey0000000000000000';

export function buildSink(intake: ResolvedIntake, metrics: Metrics, emulator?: { port: number; ca: string }): Sink {
  const o = intake.output;
  if (emulator) {
    return new SyslogTlsSink({
      host: '127.0.0.1', port: emulator.port, serverName: 'localhost', ca: Buffer.from(emulator.ca), cert: undefined, key: undefined,
      connectTimeoutMs: 10_000, confirmAfterMs: 2_000, proofBytes: unreadCapacityBytes(), writeTimeoutMs: 30_000,
      formatter: new Rfc5424Formatter(EMULATOR_DEMO_KEY, 'received'),
    });
  }
  if (o.type === 'http') {
    return new HttpJsonSink({
      intake: intake.name,
      url: new URL(o.endpoint),
      intakeKey: intake.intakeKey,
      event: o.event,
      gzip: o.gzip,
      maxBodyBytes: o.max_body_bytes,
      concurrency: o.concurrency === 'adaptive' ? { adaptive: { min: 1, max: o.max_concurrency } } : { fixed: o.concurrency },
      connectTimeoutMs: o.connect_timeout_ms,
      headersTimeoutMs: o.headers_timeout_ms,
      bodyTimeoutMs: o.body_timeout_ms,
      requestTimeoutMs: o.request_timeout_ms,
      keyRetryMs: o.key_retry_ms,
      ca: o.caPem,
      proxy: o.proxy,
      userAgent: `intake-relay/${VERSION}`,
      metrics,
    });
  }
  return new SyslogTlsSink({
    host: o.host,
    port: o.port,
    serverName: o.server_name,
    ca: o.caPem,
    cert: o.clientCertPem,
    key: o.clientKeyPem,
    connectTimeoutMs: o.connect_timeout_ms,
    confirmAfterMs: Math.max(100, o.resend_window_ms),
    proofBytes: o.proofBytes,
    writeTimeoutMs: o.write_timeout_ms,
    formatter: new Rfc5424Formatter(intake.intakeKey, o.timestamp),
  });
}
