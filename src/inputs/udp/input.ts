// Syslog over UDP (RFC 5426): one datagram, one event. UDP cannot be paused, so when the queue is
// full the datagram is dropped and counted (reason queue_full), whatever when_full says.

import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import type { Logger } from 'pino';
import { RelayError } from '../../core/errors.ts';
import type { Oversize } from '../../syslog/framing.ts';
import { EventBuilder, inputCounters, ownerIntake, senderAddress, type InputContext } from '../event-builder.ts';

export interface UdpInputOptions {
  readonly address: string;
  readonly port: number;
  readonly receiveBufferBytes: number | undefined;
  readonly maxMessageBytes: number;
  readonly oversize: Oversize;
}

export class UdpSyslogInput {
  readonly #o: UdpInputOptions;
  readonly #ctx: InputContext;
  readonly #log: Logger;
  #socket: dgram.Socket | undefined;
  #flush: (() => void) | undefined;

  constructor(options: UdpInputOptions, ctx: InputContext, log: Logger) {
    this.#o = options;
    this.#ctx = ctx;
    this.#log = log;
  }

  get port(): number {
    return this.#socket?.address().port ?? this.#o.port;
  }

  async start(): Promise<void> {
    const o = this.#o;
    const builder = new EventBuilder(this.#ctx, inputCounters(this.#ctx), false);
    const socket = dgram.createSocket({ type: isIPv6(o.address) ? 'udp6' : 'udp4', reuseAddr: false });
    // Datagrams arrive back to back within one turn of the event loop: offer them to the queue,
    // and count them, once per turn (or per 512), not once per datagram.
    let scheduled = false;
    const flush = (): void => {
      scheduled = false;
      builder.flush();
    };
    this.#flush = flush;
    socket.on('message', (msg, rinfo) => {
      builder.begin(msg, senderAddress(rinfo.address));
      let end = msg.length;
      while (end > 0 && (msg[end - 1] === 0x0a || msg[end - 1] === 0x0d || msg[end - 1] === 0)) end--;
      if (end === 0) return;
      if (end > o.maxMessageBytes) {
        if (o.oversize === 'truncate') builder.frame(msg, 0, o.maxMessageBytes, true);
        else builder.oversized();
      } else {
        builder.frame(msg, 0, end, false);
      }
      if (builder.pending >= 512) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
    const intake = ownerIntake(this.#ctx);
    const what = intake ? `${intake}/${this.#ctx.input}` : `listener ${this.#ctx.input}`;
    await new Promise<void>((resolve, reject) => {
      socket.once('error', (err: NodeJS.ErrnoException) =>
        reject(new RelayError('ERELAY_LISTEN', `${what}: cannot listen on udp ${o.address}:${o.port}: ${err.code === 'EACCES' ? 'ports below 1024 need CAP_NET_BIND_SERVICE or root' : err.message}.`, { cause: err })),
      );
      socket.bind({ address: o.address, port: o.port }, () => resolve());
    });
    socket.on('error', (err) => this.#log.error({ input: this.#ctx.input, err: err.message }, 'UDP socket error.'));
    if (o.receiveBufferBytes) {
      socket.setRecvBufferSize(o.receiveBufferBytes);
      const got = socket.getRecvBufferSize();
      // Linux reports twice what it grants; less than asked means net.core.rmem_max capped it.
      if (got < o.receiveBufferBytes) {
        this.#log.warn({ input: this.#ctx.input, asked: o.receiveBufferBytes, granted: got }, 'UDP receive buffer capped by the kernel (raise net.core.rmem_max).');
      }
    }
    this.#socket = socket;
  }

  /**
   * Datagrams the kernel dropped for this socket because its receive buffer was full (Linux
   * /proc/net/udp "drops" column); undefined where the kernel does not tell.
   */
  kernelDrops(): number | undefined {
    const s = this.#socket;
    if (!s) return undefined;
    const { port, family } = s.address();
    return udpSocketDrops(family === 'IPv6' ? '/proc/net/udp6' : '/proc/net/udp', port);
  }

  async stop(): Promise<void> {
    const s = this.#socket;
    this.#socket = undefined;
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
    // Datagrams read but still waiting for their turn's flush go to the queue before it closes.
    this.#flush?.();
  }
}

/** The drops column of the /proc/net/udp line bound to `port`, summed over matching sockets. */
export function udpSocketDrops(file: string, port: number): number | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'latin1');
  } catch {
    return undefined;
  }
  const hexPort = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let drops: number | undefined;
  for (const line of text.split('\n').slice(1)) {
    const cols = line.trim().split(/\s+/);
    if (cols.length < 13 || !(cols[1] as string).endsWith(hexPort)) continue;
    drops = (drops ?? 0) + Number(cols[cols.length - 1]);
  }
  return drops;
}
