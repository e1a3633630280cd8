// The syslog output's configuration schema (config time only: the daemon does not load zod).

import { z } from 'zod';
import { backoff, port, positive } from '../../core/config-parts.ts';

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
