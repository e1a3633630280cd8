// The UDP syslog input type (the socket is input.ts): as an intake's input, or as a listener shared
// through routes.

import { z } from 'zod';
import type { InputDefinition } from '../../core/component.ts';
import { KiB, MiB, listener } from '../../core/config-parts.ts';
import { routingFields } from '../../routing/schema.ts';
import { describeSyslog, syslogFeeds, syslogLabel } from '../syslog-config.ts';

export const udpInputSchema = z.strictObject({
  type: z.literal('udp').describe('Syslog over UDP: one datagram, one event.'),
  ...listener,
  receive_buffer_bytes: z.int().min(8 * KiB).max(1024 * MiB).optional()
    .describe('Socket receive buffer (SO_RCVBUF). Capped by the kernel\'s net.core.rmem_max.'),
});

export const udpListenerSchema = udpInputSchema.extend({ ...routingFields, type: z.literal('udp').describe('Syslog over UDP, shared by several intakes through routes.') });

export type UdpConfig = z.infer<typeof udpInputSchema> | z.infer<typeof udpListenerSchema>;
export type ResolvedUdp = UdpConfig & { readonly label: string; readonly tlsFiles: undefined };

export const udpInput = {
  inputSchema: udpInputSchema,
  listenerSchema: udpListenerSchema,
  resolve: (c, ctx) => ({ ...c, label: syslogLabel(c, 'udp', ctx), tlsFiles: undefined }),
  listening: (c) => ({ proto: 'udp', address: c.address, port: c.port }),
  feeds: syslogFeeds,
  describe: (c) => describeSyslog(c, 'udp'),
} satisfies InputDefinition<UdpConfig, ResolvedUdp>;
