// The TCP (and TLS) syslog input's configuration schema (config time only: the daemon does not load zod).

import { z } from 'zod';
import type { TlsFiles } from '../../core/component.ts';
import { listener, positive, proxyProtocol, tlsServer } from '../../core/config-parts.ts';
import type { ProxyProtocolSettings } from '../../core/config-values.ts';
import { routingFields } from '../../routing/schema.ts';

export const tcpInputSchema = z.strictObject({
  type: z.literal('tcp').describe('Syslog over TCP, octet-counted or newline-delimited (detected per frame).'),
  ...listener,
  tls: tlsServer.optional().describe('Serve TLS (RFC 5425) instead of plain TCP.'),
  max_connections: positive.default(1024).describe('Connections accepted at once; more are refused and counted.'),
  idle_timeout_ms: z.int().min(0).default(0).describe('Close a connection that sent nothing for this long (0 = never).'),
  ...proxyProtocol,
});

export const tcpListenerSchema = tcpInputSchema.extend({ ...routingFields, type: z.literal('tcp').describe('Syslog over TCP (or TLS), shared by several intakes through routes.') });

export type TcpConfig = z.infer<typeof tcpInputSchema> | z.infer<typeof tcpListenerSchema>;
export type ResolvedTcp = TcpConfig & { readonly label: string; readonly tlsFiles: TlsFiles | undefined; readonly proxy: ProxyProtocolSettings | undefined };
