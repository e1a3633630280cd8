// The syslog output type: RFC 5424 over TLS to the intake (the sink is syslog-tls.ts). Its
// configuration, how it is resolved (region defaults, files, the proof distance), and how it is
// built and described.

import { z } from 'zod';
import type { OutputDefinition } from '../../core/component.ts';
import { backoff, port, positive } from '../../core/config-parts.ts';
import { Rfc5424Formatter } from '../../syslog/format.ts';
import { SyslogTlsSink } from './sink.ts';
import { unreadCapacityBytes } from './tcp-buffers.ts';
import { checkTlsFiles } from '../tls-check.ts';

export const syslogOutputSchema = z.strictObject({
  type: z.literal('syslog').describe('RFC 5424 syslog, octet-counted, over TLS to the intake.'),
  host: z.string().min(1).optional().describe('Intake host. Default: the region\'s (or endpoints.syslog_host).'),
  port: port.optional().describe('Intake port. Default: 10514 (or endpoints.syslog_port).'),
  server_name: z.string().min(1).optional().describe('Name the certificate must carry. Default: host.'),
  ca_file: z.string().min(1).optional().describe('PEM CA bundle to verify the intake with. Default: the system CAs.'),
  client_cert_file: z.string().min(1).optional().describe('PEM client certificate, if the peer asks for one.'),
  client_key_file: z.string().min(1).optional().describe('PEM private key of client_cert_file.'),
  timestamp: z.enum(['received', 'source']).default('received').describe('TIMESTAMP written: reception time, or the source\'s own when it has one.'),
  connect_timeout_ms: positive.default(10_000).describe('Time allowed for TCP connect plus TLS handshake.'),
  resend_window_ms: z.int().min(0).default(1_000)
    .describe('Longest a batch waits for the intake to confirm it. Syslog has no acknowledgement, so the intake confirms by reading on (see resend_window_bytes) or by closing its side after the relay closes its own: a batch not confirmed within this time gets such a close, and the next batch opens a new connection at once. Values under 100 count as 100.'),
  resend_window_bytes: z.union([positive, z.literal('auto')]).default('auto')
    .describe('A batch counts as delivered once this many bytes written after it have been taken by the kernel on the same connection: more than this host\'s TCP send buffer and the intake\'s receive buffer can hold unread, so the intake has read the batch. auto: net.ipv4.tcp_wmem max + net.ipv4.tcp_rmem max (this host\'s, standing in for the intake\'s) + 1 MiB. Smaller values hold less memory but may count as delivered what a stalled intake never read.'),
  write_timeout_ms: positive.default(30_000)
    .describe('A connection that takes no data for this long while the relay has data for it, or does not answer a close, has failed: it is dropped and what it held is written again.'),
  backoff: backoff.prefault({}),
});

export type SyslogOutputConfig = z.infer<typeof syslogOutputSchema>;

export interface ResolvedSyslogOutput extends SyslogOutputConfig {
  readonly host: string;
  readonly port: number;
  readonly caPem: Buffer | undefined;
  readonly clientCertPem: Buffer | undefined;
  readonly clientKeyPem: Buffer | undefined;
  /** resend_window_bytes, with auto resolved from this host's TCP buffer limits. */
  readonly proofBytes: number;
}

export const syslogOutput = {
  schema: syslogOutputSchema,

  resolve(o, ctx) {
    if ((o.client_cert_file === undefined) !== (o.client_key_file === undefined)) ctx.problem([], 'client_cert_file and client_key_file go together');
    const capacity = unreadCapacityBytes();
    if (o.resend_window_bytes !== 'auto' && o.resend_window_bytes < capacity) {
      ctx.warn(`resend_window_bytes (${o.resend_window_bytes}) is below what this host's TCP buffers and the intake's can hold unread (${capacity}): events an intake that stops reading never read may count as delivered. Use auto unless memory matters more.`);
    }
    const caPem = o.ca_file ? ctx.readFile(o.ca_file, ['ca_file']) : undefined;
    const clientCertPem = o.client_cert_file ? ctx.readFile(o.client_cert_file, ['client_cert_file']) : undefined;
    const clientKeyPem = o.client_key_file ? ctx.readFile(o.client_key_file, ['client_key_file']) : undefined;
    checkTlsFiles(ctx, caPem, o.ca_file, clientCertPem && clientKeyPem ? { cert: clientCertPem, key: clientKeyPem, certFile: o.client_cert_file ?? '', keyFile: o.client_key_file ?? '' } : undefined);
    return {
      ...o,
      proofBytes: o.resend_window_bytes === 'auto' ? capacity : o.resend_window_bytes,
      host: o.host ?? ctx.endpoints.syslogHost,
      port: o.port ?? ctx.endpoints.syslogPort,
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
      writeTimeoutMs: o.write_timeout_ms,
      formatter: new Rfc5424Formatter(ctx.intakeKey, o.timestamp),
    });
  },

  describe: (o) =>
    `syslog over TLS to ${o.host}:${o.port}${o.server_name ? ` (certificate name ${o.server_name})` : ''}, CA ${o.ca_file ?? 'system store'}, timestamp ${o.timestamp}`,
  where: (o) => `${o.host}:${o.port}`,
  endpoint: (o) => ({ host: o.host, port: o.port, serverName: o.server_name ?? o.host, ca: o.caPem, cert: o.clientCertPem, key: o.clientKeyPem }),
  effective: (o) => o,
  checkNote: () => '',
  maxRetries: () => undefined,
  handOverMs: (o) => Math.min(5_000, o.resend_window_ms + 1_000),
  backoff: (o) => ({ initialMs: o.backoff.initial_ms, maxMs: o.backoff.max_ms }),
} satisfies OutputDefinition<SyslogOutputConfig, ResolvedSyslogOutput>;

/** The output of intakes without a key when emulator.when is no_intake_key: the local emulator, whatever they say. */
export function emulatorOutput(port: number, caPem: string): ResolvedSyslogOutput {
  const o = syslogOutputSchema.parse({ type: 'syslog' });
  return { ...o, host: '127.0.0.1', port, server_name: 'localhost', caPem: Buffer.from(caPem), clientCertPem: undefined, clientKeyPem: undefined, proofBytes: unreadCapacityBytes() };
}
