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
  respond_when: z.enum(['auto', 'queued']).default('auto')
    .describe('auto: answer 200 once the event is safe: written and fsynced by a disk queue or, with a memory queue, delivered to the intake (or dropped by a filter, counted). queued: as soon as it is in the queue (faster; a crash loses what a memory queue held).'),
  ...proxyProtocol,
});

export const relpListenerSchema = relpInputSchema.extend({ ...routingFields, type: z.literal('relp').describe('RELP, shared by several intakes through routes.') });

export type RelpConfig = z.infer<typeof relpInputSchema> | z.infer<typeof relpListenerSchema>;
export type ResolvedRelp = RelpConfig & { readonly label: string; readonly tlsFiles: TlsFiles | undefined; readonly proxy: ProxyProtocolSettings | undefined };
