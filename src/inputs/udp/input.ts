// Syslog over UDP (RFC 5426): one datagram, one event. UDP cannot be paused, so when a queue is
// full the datagram is dropped and counted (reason queue_full), whatever when_full says.

import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import type { Sender } from '../../core/component.ts';
import type { Source } from '../../core/contracts.ts';
import { RelayError } from '../../core/errors.ts';
import type { SyslogInputTelemetry } from '../../core/telemetry.ts';
import type { Oversize } from '../../syslog/framing.ts';
import type { HeaderDefaults } from '../../syslog/parse.ts';
import { FrameBuilder, senderAddress } from '../frame-builder.ts';

export interface UdpInputOptions {
  readonly label: string;
  readonly address: string;
  readonly port: number;
  readonly receiveBufferBytes: number | undefined;
  readonly maxMessageBytes: number;
  readonly oversize: Oversize;
  readonly defaults: HeaderDefaults;
}

export class UdpSyslogInput implements Source {
  readonly #o: UdpInputOptions;
  readonly #sender: Sender;
  readonly #t: SyslogInputTelemetry;
  #socket: dgram.Socket | undefined;
  #flush: (() => void) | undefined;

  constructor(options: UdpInputOptions, sender: Sender, telemetry: SyslogInputTelemetry) {
    this.#o = options;
    this.#sender = sender;
    this.#t = telemetry;
  }

  get label(): string {
    return this.#o.label;
  }

  get port(): number {
    return this.#socket?.address().port ?? this.#o.port;
  }

  get where(): string {
    return `on port ${this.port}`;
  }

  async start(): Promise<void> {
    if (this.#socket) return;
    const o = this.#o;
    const t = this.#t;
    const builder = new FrameBuilder(this.#sender, t, o.defaults);
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
    const owner = this.#sender.owner;
    const what = owner ? `${owner}/${o.label}` : `listener ${o.label}`;
    await new Promise<void>((resolve, reject) => {
      socket.once('error', (err: NodeJS.ErrnoException) =>
        reject(new RelayError('ERELAY_LISTEN', `${what}: cannot listen on udp ${o.address}:${o.port}: ${err.code === 'EACCES' ? 'ports below 1024 need CAP_NET_BIND_SERVICE or root' : err.message}.`, { cause: err })),
      );
      socket.bind({ address: o.address, port: o.port }, () => resolve());
    });
    socket.on('error', (err) => t.log.error('socket', err, {}, 'UDP socket error.'));
    if (o.receiveBufferBytes) {
      socket.setRecvBufferSize(o.receiveBufferBytes);
      const got = socket.getRecvBufferSize();
      // Linux reports twice what it grants; less than asked means net.core.rmem_max capped it.
      if (got < o.receiveBufferBytes) {
        t.log.logger.warn({ asked: o.receiveBufferBytes, granted: got }, 'UDP receive buffer capped by the kernel (raise net.core.rmem_max).');
      }
    }
    this.#socket = socket;
    t.watchKernelDrops(() => this.#kernelDrops());
  }

  /**
   * Datagrams the kernel dropped for this socket because its receive buffer was full (Linux
   * /proc/net/udp "drops" column); undefined where the kernel does not tell.
   */
  #kernelDrops(): number | undefined {
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

  dispose(): void {
    this.#t.dispose();
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
