// The UDP syslog input's configuration schema (config time only: the daemon does not load zod).

import { z } from 'zod';
import { KiB, MiB, listener } from '../../core/config-parts.ts';
import { routingFields } from '../../routing/schema.ts';

export const udpInputSchema = z.strictObject({
  type: z.literal('udp').describe('Syslog over UDP: one datagram, one event.'),
  ...listener,
  receive_buffer_bytes: z.int().min(8 * KiB).max(1024 * MiB).optional()
    .describe('Socket receive buffer. Beyond the kernel\'s net.core.rmem_max where the relay has CAP_NET_ADMIN (SO_RCVBUFFORCE, as rsyslog\'s imudp; root has it), else capped by it (and always with Node\'s dgram receive).'),
  receive_threads: z.int().min(0).max(64).default(0)
    .describe('Threads that receive the datagrams, each on its own socket on the port (SO_REUSEPORT: the kernel spreads senders over them), handing them to the main thread to parse and queue. They keep the sockets drained while the main thread is busy, as the reader thread of the native receive does; they are for hosts where the native addon cannot load (with Node\'s dgram the main thread reads), or to spread reading over cores; each costs a core while busy. 0: the reader thread of the native receive (or, with dgram, the input\'s own thread) receives. See "Performance".'),
});

export const udpListenerSchema = udpInputSchema.extend({ ...routingFields, type: z.literal('udp').describe('Syslog over UDP, shared by several intakes through routes.') });

export type UdpConfig = z.infer<typeof udpInputSchema> | z.infer<typeof udpListenerSchema>;
/** `backlogBytes`: what the reader may hold ahead of the relay's thread, from memory_bytes (memory-budget.ts). */
export type ResolvedUdp = UdpConfig & { readonly label: string; readonly tlsFiles: undefined; readonly backlogBytes: number };
