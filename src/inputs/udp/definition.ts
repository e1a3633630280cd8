// The UDP syslog input type (the socket is input.ts): as an intake's input, or as a listener shared
// through routes.

import type { InputDefinition } from '../../core/component.ts';
import type { InputTools } from '../../telemetry/tools.ts';
import { syslogInputTelemetry } from '../syslog-instruments.ts';
import type { ResolvedUdp, UdpConfig } from './schema.ts';
import { describeSyslog, headerDefaults, syslogFeeds, syslogLabel, syslogRouter } from '../syslog-config.ts';
import { UdpSyslogInput } from './input.ts';
import { isIPv6 } from 'node:net';
import { udpBacklogOf } from '../../core/memory-budget.ts';

/** How imudp names the address it binds: * for every address, else the address itself. */
function udpBind(address: string): string {
  return address === '0.0.0.0' || address === '::' ? '*' : address;
}

export const udpInput = {
  resolve: (c, ctx) => ({ ...c, label: syslogLabel(c, 'udp', ctx), tlsFiles: undefined, backlogBytes: udpBacklogOf(ctx.memory.perThreadBytes) }),
  listening: (c) => ({ proto: 'udp', address: c.address, port: c.port }),
  feeds: syslogFeeds,
  router: syslogRouter,
  impstats: (name: string, address: string, port: number, submitted: number) => ({ name: `${name}(${udpBind(address)}/${port}/${isIPv6(address) ? 'IPv6' : 'IPv4'})`, origin: 'imudp', submitted, disallowed: 0 }),
  describe: (c) => describeSyslog(c, c.receive_threads > 0 ? `udp (${c.receive_threads} receive thread${c.receive_threads > 1 ? 's' : ''})` : 'udp'),
  senderKey: 'address',
  offerMode: 'drop',
  create: (c, ctx) =>
    new UdpSyslogInput(
      {
        label: c.label, address: c.address, port: c.port, receiveBufferBytes: c.receive_buffer_bytes, maxMessageBytes: c.max_message_bytes, oversize: c.oversize,
        defaults: headerDefaults(c.defaults), receiveThreads: c.receive_threads, backlogBytes: c.backlogBytes,
      },
      ctx.inlet,
      syslogInputTelemetry(ctx.tools.metrics, ctx.tools.log, ctx.tools.owner, ctx.tools.input, ctx.tools.senders),
    ),
} satisfies InputDefinition<UdpConfig, ResolvedUdp, InputTools>;
