// The relp output's configuration schema (config time only: the daemon does not load zod).

import { z } from 'zod';
import { backoff, port, positive } from '../../core/config-parts.ts';

/** The `endpoints:` keys this output type reads (config/schema.ts merges every type's). */
export const relpEndpointKeys = {
  relp_host: z.string().min(1).optional().describe('Overrides the RELP intake host. Default: syslog_host, or the region\'s intake host (the platform documents intake.<region>; the official forwarder uses relp.intake.<region>).'),
  relp_port: port.optional().describe('Overrides the RELP intake port (11514).'),
};

/** Its keys, and syslog_host: the RELP host's default when set. */
export interface RelpEndpoints {
  readonly relp_host?: string | undefined;
  readonly relp_port?: number | undefined;
  readonly syslog_host?: string | undefined;
}

export const relpOutputSchema = z.strictObject({
  type: z.literal('relp').describe('RFC 5424 syslog as RELP transactions (Reliable Event Logging Protocol), each acknowledged by the intake, over TLS to port 11514.'),
  host: z.string().min(1).optional()
    .describe('RELP intake host. Default: endpoints.relp_host, else the region\'s intake host (intake.sekoia.io for fra1, as the platform documents; the official forwarder uses relp.intake.<region>: `check` tries both).'),
  port: port.optional().describe('RELP intake port. Default: 11514 (or endpoints.relp_port).'),
  tls: z.boolean().default(true).describe('RELP over TLS (the intake only takes TLS). false: plain TCP, for a RELP server of your own on a trusted network.'),
  server_name: z.string().min(1).optional().describe('Name the certificate must carry. Default: host.'),
  ca_file: z.string().min(1).optional().describe('PEM CA bundle to verify the intake with. Default: the system CAs.'),
  client_cert_file: z.string().min(1).optional().describe('PEM client certificate, if the peer asks for one.'),
  client_key_file: z.string().min(1).optional().describe('PEM private key of client_cert_file.'),
  timestamp: z.enum(['received', 'source']).default('received').describe('TIMESTAMP written: reception time, or the source\'s own when it has one.'),
  window: z.int().min(1).max(65_536).default(128)
    .describe('Transactions written and not yet answered, at most (omrelp\'s windowSize; librelp\'s default is 128). After a lost session at most this many messages are written twice.'),
  ack_timeout_ms: positive.default(30_000)
    .describe('A session whose intake answers nothing for this long while messages wait for an answer has failed: it is dropped and they are written again on a new one.'),
  connect_timeout_ms: positive.default(10_000).describe('Time allowed for TCP connect, TLS handshake and the RELP open.'),
  backoff: backoff.prefault({}),
});

export type RelpOutputConfig = z.infer<typeof relpOutputSchema>;
