// The TCP (and TLS) syslog input type (the server is input.ts): as an intake's input, or as a
// listener shared through routes.

import type { InputDefinition } from '../../core/component.ts';
import type { InputTools } from '../../telemetry/tools.ts';
import { syslogInputTelemetry } from '../syslog-instruments.ts';
import { proxyProtocolSettings } from '../../core/config-values.ts';
import type { ResolvedTcp, TcpConfig } from './schema.ts';
import { readTlsFiles } from '../tls-files.ts';
import { describeSyslog, headerDefaults, syslogFeeds, syslogLabel, syslogRouter } from '../syslog-config.ts';
import { TcpSyslogInput } from './input.ts';

const kindOf = (c: TcpConfig): string => (c.tls ? `tls${c.tls.client_ca_file ? ' (client certificates required)' : ''}` : 'tcp');

export const tcpInput = {
  resolve(c, ctx) {
    return { ...c, label: syslogLabel(c, c.tls ? 'tls' : 'tcp', ctx), tlsFiles: readTlsFiles(c.tls, ctx), proxy: proxyProtocolSettings(c, ctx.problem) };
  },
  listening: (c) => ({ proto: 'tcp', address: c.address, port: c.port }),
  feeds: syslogFeeds,
  router: syslogRouter,
  impstats: (name: string, _address: string, port: number, submitted: number) => ({ name: `${name}(${port})`, origin: 'imtcp', submitted }),
  describe: (c) => describeSyslog(c, kindOf(c)),
  senderKey: 'address',
  offerMode: 'pause',
  create: (c, ctx) =>
    new TcpSyslogInput(
      {
        label: c.label, address: c.address, port: c.port, maxConnections: c.max_connections, idleTimeoutMs: c.idle_timeout_ms,
        maxMessageBytes: c.max_message_bytes, oversize: c.oversize, tls: c.tlsFiles, defaults: headerDefaults(c.defaults), proxy: c.proxy,
      },
      ctx.inlet,
      syslogInputTelemetry(ctx.tools.metrics, ctx.tools.log, ctx.tools.owner, ctx.tools.input, ctx.tools.senders),
    ),
} satisfies InputDefinition<TcpConfig, ResolvedTcp, InputTools>;
