// The RELP input's configuration schema (config time only: the daemon does not load zod).

import { z } from 'zod';
import type { TlsFiles } from '../../core/component.ts';
import { listener, positive, proxyProtocol, tlsServer } from '../../core/config-parts.ts';
import type { ProxyProtocolSettings } from '../../core/config-values.ts';
import { routingFields } from '../../routing/schema.ts';

// A message over max_message_bytes is answered 500 and counted (too_large): RELP cannot forward part of one.
const { oversize: _oversize, ...relpListener } = listener;

export const relpInputSchema = z.strictObject({
  type: z.literal('relp').describe('RELP (Reliable Event Logging Protocol, rsyslog omrelp): each message is answered once it is safe, so the sender resends what was not.'),
  ...relpListener,
  tls: tlsServer.optional().describe('Serve RELP over TLS (client_ca_file: mutual TLS).'),
  max_connections: positive.default(1024).describe('Sessions accepted at once; more are refused and counted.'),
  idle_timeout_ms: z.int().min(0).default(0).describe('Close a session that sent nothing and waits for no answer for this long (0 = never).'),
  respond_when: z.enum(['auto', 'queued', 'delivered']).default('auto')
    .describe('When each message is answered 200. auto: once the relay holds it as safely as its queue can: written and fsynced by a disk queue, in a memory queue (as rsyslog imrelp answers; a crash loses what a memory queue holds). queued: once queued, without waiting for a disk queue\'s fsync. delivered: once the intake confirmed it (or a filter dropped it, counted); fast with a RELP output, which confirms each message, slow with the syslog output at low rates, which confirms within resend_window_ms.'),
  ...proxyProtocol,
});

export const relpListenerSchema = relpInputSchema.extend({ ...routingFields, type: z.literal('relp').describe('RELP, shared by several intakes through routes.') });

export type RelpConfig = z.infer<typeof relpInputSchema> | z.infer<typeof relpListenerSchema>;
export type ResolvedRelp = RelpConfig & { readonly label: string; readonly tlsFiles: TlsFiles | undefined; readonly proxy: ProxyProtocolSettings | undefined };
