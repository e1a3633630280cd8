// The RELP input type (Reliable Event Logging Protocol, as rsyslog's omrelp sends it): as an
// intake's input, or as a listener shared through routes. Each message is answered only once it is
// safe (the server is input.ts, one session per connection in session.ts).

import { z } from 'zod';
import type { InputDefinition, TlsFiles } from '../../core/component.ts';
import { listener, positive, proxyProtocol, proxyProtocolSettings, tlsServer, type ProxyProtocolSettings } from '../../core/config-parts.ts';
import { routingFields } from '../../routing/schema.ts';
import { readTlsFiles } from '../tls-files.ts';
import { describeSyslog, headerDefaults, syslogFeeds, syslogLabel, syslogRouter } from '../syslog-config.ts';
import { RelpInput } from './input.ts';

// A message over max_message_bytes is answered 500 and counted (too_large): RELP cannot forward part of one.
const { oversize: _oversize, ...relpListener } = listener;

export const relpInputSchema = z.strictObject({
  type: z.literal('relp').describe('RELP (Reliable Event Logging Protocol, rsyslog omrelp): each message is answered once it is safe, so the sender resends what was not.'),
  ...relpListener,
  tls: tlsServer.optional().describe('Serve RELP over TLS (client_ca_file: mutual TLS).'),
  max_connections: positive.default(1024).describe('Sessions accepted at once; more are refused and counted.'),
  idle_timeout_ms: z.int().min(0).default(0).describe('Close a session that sent nothing and waits for no answer for this long (0 = never).'),
  respond_when: z.enum(['auto', 'queued']).default('auto')
    .describe('auto: answer 200 once the event is safe: written and fsynced by a disk queue or, with a memory queue, delivered to the intake (or dropped by a filter, counted). queued: as soon as it is in the queue (faster; a crash loses what a memory queue held).'),
  ...proxyProtocol,
});

export const relpListenerSchema = relpInputSchema.extend({ ...routingFields, type: z.literal('relp').describe('RELP, shared by several intakes through routes.') });

export type RelpConfig = z.infer<typeof relpInputSchema> | z.infer<typeof relpListenerSchema>;
export type ResolvedRelp = RelpConfig & { readonly label: string; readonly tlsFiles: TlsFiles | undefined; readonly proxy: ProxyProtocolSettings | undefined };

const kindOf = (c: RelpConfig): string =>
  `relp${c.tls ? ` over TLS${c.tls.client_ca_file ? ' with client certificates' : ''}` : ''} (answered once ${c.respond_when === 'auto' ? 'safe' : 'queued'})`;

export const relpInput = {
  inputSchema: relpInputSchema,
  listenerSchema: relpListenerSchema,
  resolve(c, ctx) {
    return { ...c, label: syslogLabel(c, 'relp', ctx), tlsFiles: readTlsFiles(c.tls, ctx), proxy: proxyProtocolSettings(c, ctx.problem) };
  },
  listening: (c) => ({ proto: 'tcp', address: c.address, port: c.port }),
  feeds: syslogFeeds,
  router: syslogRouter,
  impstats: (port: number, submitted: number) => ({ name: `imrelp(${port})`, origin: 'imrelp', submitted }),
  describe: (c) => describeSyslog(c, kindOf(c)),
  senderKey: 'address',
  canPause: true,
  // What a sender's window holds is never dropped: a full queue delays the answers instead.
  alwaysWait: true,
  create: (c, ctx) =>
    new RelpInput(
      {
        label: c.label, address: c.address, port: c.port, maxConnections: c.max_connections, idleTimeoutMs: c.idle_timeout_ms,
        maxMessageBytes: c.max_message_bytes, respondWhen: c.respond_when, tls: c.tlsFiles, defaults: headerDefaults(c.defaults), proxy: c.proxy,
      },
      ctx.sender,
      ctx.instruments.relp(),
    ),
} satisfies InputDefinition<RelpConfig, ResolvedRelp>;
