// The syslog output type: RFC 5424 over TLS to the intake (the sink is syslog-tls.ts). Its
// configuration, how it is resolved (region defaults, files, the proof distance), and how it is
// built and described.

import type { OutputDefinition, ResolveContext } from '../../core/component.ts';
import type { SyslogEndpoints, SyslogOutputConfig } from './schema.ts';
import { Rfc5424Formatter } from '../../syslog/format.ts';
import { SyslogTlsSink } from './sink.ts';
import { resendWindowBytes } from './options.ts';
import { resendWindowOf } from '../../core/memory-budget.ts';
import { unreadCapacityBytes } from './tcp-buffers.ts';
import { checkTlsFiles } from '../tls-check.ts';

/** The platform's syslog-over-TLS port. */
const SYSLOG_PORT = 10514;

/** `endpoints:` as this type reads it (its schema validated it). */
function endpoints(ctx: ResolveContext): SyslogEndpoints {
  return ctx.endpoints.overrides as SyslogEndpoints;
}

export interface ResolvedSyslogOutput extends SyslogOutputConfig {
  readonly host: string;
  readonly port: number;
  readonly caPem: Buffer | undefined;
  readonly clientCertPem: Buffer | undefined;
  readonly clientKeyPem: Buffer | undefined;
  /** Bytes written after a batch that prove it read: the TCP buffers' capacity (tcp-buffers.ts). */
  readonly proofBytes: number;
  /** resend_window_bytes as set, or derived from memory_bytes. */
  readonly resend_window_bytes: number | 'auto';
  /** resend_window_bytes, with auto resolved from proofBytes. */
  readonly windowBytes: number;
}

export const syslogOutput = {

  resolve(o, ctx) {
    if ((o.client_cert_file === undefined) !== (o.client_key_file === undefined)) ctx.problem([], 'client_cert_file and client_key_file go together');
    const capacity = unreadCapacityBytes(undefined, o.intake_receive_buffer_bytes === 'auto' ? undefined : o.intake_receive_buffer_bytes);
    const window = o.resend_window_bytes ?? resendWindowOf(ctx.memory.perThreadBytes);
    if (o.resend_window_bytes !== undefined && o.resend_window_bytes !== 'auto' && o.intake_receive_buffer_bytes === 'auto' && o.resend_window_bytes > resendWindowBytes('auto', capacity)) {
      // Larger than auto would make it. Until this release resend_window_bytes was the proof
      // distance, raised for intakes (or proxies) that buffer more than this host: that is
      // intake_receive_buffer_bytes now.
      ctx.warn(`resend_window_bytes (${o.resend_window_bytes}) bounds the memory of unconfirmed batches; it no longer sets how many bytes prove a batch read (${capacity}, from this host's TCP buffers). If it was raised for an intake or a proxy that buffers more, set intake_receive_buffer_bytes.`);
    }
    const caPem = o.ca_file ? ctx.readFile(o.ca_file, ['ca_file']) : undefined;
    const clientCertPem = o.client_cert_file ? ctx.readFile(o.client_cert_file, ['client_cert_file']) : undefined;
    const clientKeyPem = o.client_key_file ? ctx.readFile(o.client_key_file, ['client_key_file']) : undefined;
    checkTlsFiles(ctx, caPem, o.ca_file, clientCertPem && clientKeyPem ? { cert: clientCertPem, key: clientKeyPem, certFile: o.client_cert_file ?? '', keyFile: o.client_key_file ?? '' } : undefined);
    return {
      ...o,
      resend_window_bytes: window,
      proofBytes: capacity,
      windowBytes: resendWindowBytes(window, capacity),
      host: o.host ?? endpoints(ctx).syslog_host ?? ctx.endpoints.region.intakeHost,
      port: o.port ?? endpoints(ctx).syslog_port ?? SYSLOG_PORT,
      caPem,
      clientCertPem,
      clientKeyPem,
    };
  },

  create(o, ctx) {
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
      windowBytes: o.windowBytes,
      writeTimeoutMs: o.write_timeout_ms,
      formatter: new Rfc5424Formatter(ctx.intakeKey, o.timestamp),
    });
  },

  describe: (o) =>
    `syslog over TLS to ${o.host}:${o.port}${o.server_name ? ` (certificate name ${o.server_name})` : ''}, CA ${o.ca_file ?? 'system store'}, timestamp ${o.timestamp}, resend window ${o.windowBytes} bytes`,
  where: (o) => `${o.host}:${o.port}`,
  endpoint: (o) => ({ host: o.host, port: o.port, serverName: o.server_name ?? o.host, ca: o.caPem, cert: o.clientCertPem, key: o.clientKeyPem }),
  effective: (o) => o,
  checkNote: () => '',
  maxRetries: () => undefined,
  confirmation: 'close its side of the connection',
  omfwdRecord: (o) => `TCP-${o.host}-${o.port}`,
  handOverMs: (o) => Math.min(5_000, o.resend_window_ms + 1_000),
  backoff: (o) => ({ initialMs: o.backoff.initial_ms, maxMs: o.backoff.max_ms }),
} satisfies OutputDefinition<SyslogOutputConfig, ResolvedSyslogOutput>;

/**
 * The syslog output with every setting at its schema default (`syslogOutputSchema.parse({ type:
 * 'syslog' })`, which test/unit/output-defaults.test.ts checks), for the emulator's output without
 * loading the schema library at run time.
 */
export const SYSLOG_OUTPUT_DEFAULTS: SyslogOutputConfig = {
  type: 'syslog', timestamp: 'received', connect_timeout_ms: 10_000, resend_window_ms: 1_000, intake_receive_buffer_bytes: 'auto', write_timeout_ms: 30_000,
  backoff: { initial_ms: 500, max_ms: 30_000 },
};

/**
 * The output of intakes without a key when emulator.when is no_intake_key: the local emulator,
 * whatever they say, with the resend window the intake's share of memory_bytes gives
 * (`perThreadBytes`, as a syslog output of its own would have).
 */
export function emulatorOutput(port: number, caPem: string, perThreadBytes: number): ResolvedSyslogOutput {
  const o = SYSLOG_OUTPUT_DEFAULTS;
  const window = resendWindowOf(perThreadBytes);
  return { ...o, host: '127.0.0.1', port, server_name: 'localhost', caPem: Buffer.from(caPem), clientCertPem: undefined, clientKeyPem: undefined, resend_window_bytes: window, proofBytes: unreadCapacityBytes(), windowBytes: resendWindowBytes(window, unreadCapacityBytes()) };
}
