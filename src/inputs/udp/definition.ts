// The UDP syslog input type (the socket is input.ts): as an intake's input, or as a listener shared
// through routes.

import { z } from 'zod';
import type { InputDefinition } from '../../core/component.ts';
import { KiB, MiB, listener } from '../../core/config-parts.ts';
import { routingFields } from '../../routing/schema.ts';
import { describeSyslog, headerDefaults, syslogFeeds, syslogLabel, syslogRouter } from '../syslog-config.ts';
import { UdpSyslogInput } from './input.ts';

export const udpInputSchema = z.strictObject({
  type: z.literal('udp').describe('Syslog over UDP: one datagram, one event.'),
  ...listener,
  receive_buffer_bytes: z.int().min(8 * KiB).max(1024 * MiB).optional()
    .describe('Socket receive buffer (SO_RCVBUF). Capped by the kernel\'s net.core.rmem_max.'),
  receive_threads: z.int().min(0).max(64).default(0)
    .describe('Threads that receive the datagrams, each on its own socket on the port (SO_REUSEPORT: the kernel spreads senders over them), handing them to the main thread to parse and queue. They keep the sockets drained while the main thread is busy, so a burst is not dropped by the kernel; it costs a core each while busy. 0: the main thread receives. See "Performance".'),
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
  router: syslogRouter,
  impstats: (port: number, submitted: number) => ({ name: `imudp(*:${port})`, origin: 'imudp', submitted, disallowed: 0 }),
  describe: (c) => describeSyslog(c, c.receive_threads > 0 ? `udp (${c.receive_threads} receive thread${c.receive_threads > 1 ? 's' : ''})` : 'udp'),
  senderKey: 'address',
  canPause: false,
  alwaysWait: false,
  create: (c, ctx) =>
    new UdpSyslogInput(
      {
        label: c.label, address: c.address, port: c.port, receiveBufferBytes: c.receive_buffer_bytes, maxMessageBytes: c.max_message_bytes, oversize: c.oversize,
        defaults: headerDefaults(c.defaults), receiveThreads: c.receive_threads,
      },
      ctx.sender,
      ctx.instruments.syslog(),
    ),
} satisfies InputDefinition<UdpConfig, ResolvedUdp>;
