// The syslog output's configuration schema (config time only: the daemon does not load zod).

import { z } from 'zod';
import { backoff, port, positive } from '../../core/config-parts.ts';

/** The `endpoints:` keys this output type reads (config/schema.ts merges every type's). */
export const syslogEndpointKeys = {
  syslog_host: z.string().min(1).optional().describe('Overrides the region\'s syslog intake host.'),
  syslog_port: port.optional().describe('Overrides the syslog intake port (10514).'),
};

export interface SyslogEndpoints {
  readonly syslog_host?: string | undefined;
  readonly syslog_port?: number | undefined;
}

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
    .describe('Longest a batch waits for the intake to confirm it. Syslog has no acknowledgement, so the intake confirms by reading on (see intake_receive_buffer_bytes) or by closing its side after the relay closes its own: a batch not confirmed within this time gets such a close, and the next batch opens a new connection at once. Values under 100 count as 100.'),
  resend_window_bytes: z.union([positive, z.literal('auto')]).optional()
    .describe('Most bytes written to the intake and not yet confirmed, kept in memory to be written again if the connection fails. Default: a sixth of the intake\'s share of memory_bytes in each thread, from 1 MiB to 8 MiB (8 MiB with one intake and the default memory_bytes). At the bound, writing waits for a confirmation. When the intake cannot confirm by reading on within it (this host\'s TCP send buffer and the intake\'s receive buffer hold more than half of it), a connection holding half of it is closed for confirmation and a new one takes the next batches: less memory, more connections. 16 MiB is the least in which reading on proves with Linux\'s default TCP buffers; under a TCP flood, 8 MiB peaked 8-9 MiB lower than 16, with 43 connections per million events instead of 26. auto: as much as the proof by reading on needs (tcp_wmem max + intake_receive_buffer_bytes + 1 MiB, plus 8 MiB), so that connections are replaced only every resend_window_ms.'),
  intake_receive_buffer_bytes: z.union([positive, z.literal('auto')]).default('auto')
    .describe('Most bytes the intake\'s TCP receive buffer can hold unread. A batch counts as read once this host\'s send buffer (net.ipv4.tcp_wmem max), this and 1 MiB more have been written after it on the same connection. auto: this host\'s net.ipv4.tcp_rmem max, standing in for the intake\'s (Linux\'s default is 6 MiB). Raise it if the intake, or a proxy in front of it, buffers more.'),
  write_timeout_ms: positive.default(30_000)
    .describe('A connection that takes no data for this long while the relay has data for it, or does not answer a close, has failed: it is dropped and what it held is written again.'),
  backoff: backoff.prefault({}),
});

export type SyslogOutputConfig = z.infer<typeof syslogOutputSchema>;
