// The TCP (and TLS) syslog input type (the server is input.ts): as an intake's input, or as a
// listener shared through routes.

import { z } from 'zod';
import type { InputDefinition, TlsFiles } from '../../core/component.ts';
import { listener, positive, proxyProtocol, proxyProtocolSettings, tlsServer, type ProxyProtocolSettings } from '../../core/config-parts.ts';
import { routingFields } from '../../routing/schema.ts';
import { readTlsFiles } from '../tls-files.ts';
import { describeSyslog, headerDefaults, syslogFeeds, syslogLabel, syslogRouter } from '../syslog-config.ts';
import { TcpSyslogInput } from './input.ts';

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

const kindOf = (c: TcpConfig): string => (c.tls ? `tls${c.tls.client_ca_file ? ' (client certificates required)' : ''}` : 'tcp');

export const tcpInput = {
  inputSchema: tcpInputSchema,
  listenerSchema: tcpListenerSchema,
  resolve(c, ctx) {
    return { ...c, label: syslogLabel(c, c.tls ? 'tls' : 'tcp', ctx), tlsFiles: readTlsFiles(c.tls, ctx), proxy: proxyProtocolSettings(c, ctx.problem) };
  },
  listening: (c) => ({ proto: 'tcp', address: c.address, port: c.port }),
  feeds: syslogFeeds,
  router: syslogRouter,
  impstats: (port: number, submitted: number) => ({ name: `imtcp(${port})`, origin: 'imtcp', submitted }),
  describe: (c) => describeSyslog(c, kindOf(c)),
  senderKey: 'address',
  canPause: true,
  alwaysWait: false,
  create: (c, ctx) =>
    new TcpSyslogInput(
      {
        label: c.label, address: c.address, port: c.port, maxConnections: c.max_connections, idleTimeoutMs: c.idle_timeout_ms,
        maxMessageBytes: c.max_message_bytes, oversize: c.oversize, tls: c.tlsFiles, defaults: headerDefaults(c.defaults), proxy: c.proxy,
      },
      ctx.sender,
      ctx.instruments.syslog(),
    ),
} satisfies InputDefinition<TcpConfig, ResolvedTcp>;
