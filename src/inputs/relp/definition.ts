// The RELP input type (Reliable Event Logging Protocol, as rsyslog's omrelp sends it): as an
// intake's input, or as a listener shared through routes. Each message is answered once it is safe
// as respond_when says (the server is input.ts, one session per connection in session.ts).

import type { InputDefinition } from '../../core/component.ts';
import type { InputTools } from '../../telemetry/tools.ts';
import { relpInputTelemetry } from '../syslog-instruments.ts';
import { proxyProtocolSettings } from '../../core/config-values.ts';
import type { RelpConfig, ResolvedRelp } from './schema.ts';
import { readTlsFiles } from '../tls-files.ts';
import { describeSyslog, headerDefaults, syslogFeeds, syslogLabel, syslogRouter } from '../syslog-config.ts';
import { RelpInput } from './input.ts';

const kindOf = (c: RelpConfig): string =>
  `relp${c.tls ? ` over TLS${c.tls.client_ca_file ? ' with client certificates' : ''}` : ''} (answered once ${ANSWERED[c.respond_when]})`;

const ANSWERED = { auto: 'queued, and fsynced with a disk queue', queued: 'queued', delivered: 'delivered' } as const;

export const relpInput = {
  resolve(c, ctx) {
    return { ...c, label: syslogLabel(c, 'relp', ctx), tlsFiles: readTlsFiles(c.tls, ctx), proxy: proxyProtocolSettings(c, ctx.problem) };
  },
  listening: (c) => ({ proto: 'tcp', address: c.address, port: c.port }),
  feeds: syslogFeeds,
  router: syslogRouter,
  impstats: (name: string, _address: string, port: number, submitted: number) => ({ name: `${name}(${port})`, origin: 'imrelp', submitted }),
  describe: (c) => describeSyslog(c, kindOf(c)),
  senderKey: 'address',
  // What a sender's window holds is never dropped: a full queue delays the answers instead.
  offerMode: 'wait',
  create: (c, ctx) =>
    new RelpInput(
      {
        label: c.label, address: c.address, port: c.port, maxConnections: c.max_connections, idleTimeoutMs: c.idle_timeout_ms,
        maxMessageBytes: c.max_message_bytes, respondWhen: c.respond_when, tls: c.tlsFiles, defaults: headerDefaults(c.defaults), proxy: c.proxy,
      },
      ctx.inlet,
      relpInputTelemetry(ctx.tools.metrics, ctx.tools.log, ctx.tools.owner, ctx.tools.input, ctx.tools.senders),
    ),
} satisfies InputDefinition<RelpConfig, ResolvedRelp, InputTools>;
