// The PROXY protocol on a listener: before a connection is handed to its input (and before TLS,
// which the balancer passes through), its first bytes are read. From a trusted proxy they must be
// a header (proxy-protocol.ts), which names the original sender; from anyone else they must
// not start like one. A header from an untrusted address, a malformed, truncated or late one is
// refused (the connection is closed, counted by reason, logged) and never parsed as syslog. What
// follows the header is put back on the socket, and the connection handed on with its sender
// recorded: origin() answers for it and for a TLS socket made over it. A balancer's health check
// (a LOCAL header, or a whole header and then the end or a reset) is counted as one, at debug.

import type net from 'node:net';
import { addressList, type AddressList } from '../core/address-list.ts';
import type { ProxyProtocolSettings } from '../core/config-values.ts';
import { mayBeProxyHeader, looksLikeProxyHeader, parseProxyHeader } from './proxy-protocol.ts';
import type { ComponentLog } from '../core/telemetry.ts';
import { senderAddress } from './frame-builder.ts';

export type ProxyRefusal = 'proxy_untrusted' | 'proxy_malformed' | 'proxy_timeout' | 'idle_timeout';

export interface ProxyTelemetry {
  readonly log: ComponentLog;
  rejected(reason: ProxyRefusal): void;
  /** A load balancer's health check: a LOCAL header, or a whole header and then the end or a reset. */
  healthCheck(): void;
}

/** How long a trusted proxy has to send its header once connected (HAProxy sends it at once). */
export const PROXY_HEADER_TIMEOUT_MS = 10_000;

/** The longest a v2 header can be (16 bytes and a 16-bit length). */
const MAX_HEADER = 16 + 65_535;

/** Either version: from an address not trusted, whether the bytes are a whole header is all that matters. */
const ANY_VERSION = ['v1', 'v2'] as const;

/**
 * The most of a header awaited from an address not trusted (to tell a health check from a forgery):
 * a check's is short (HAProxy's: a v1 line or a 16-byte LOCAL), and headers are meant to fit in the
 * smallest TCP segment every host takes, 536 bytes (proxy-protocol.txt).
 */
const MAX_UNTRUSTED_HEADER = 536;

export class ProxyAcceptor {
  readonly #versions: ProxyProtocolSettings['versions'];
  readonly #trusted: AddressList;
  readonly #t: ProxyTelemetry;
  readonly #timeoutMs: number;
  readonly #idleMs: number;
  /** Original sender by the connection's four addresses and ports (the same for a TLS socket over it). */
  readonly #origins = new Map<string, string>();
  /** Connections whose first bytes are still being read, and how to let go of each (its timers, its listeners). */
  readonly #reading = new Map<net.Socket, () => void>();

  /**
   * `idleMs`: a connection that sends nothing at all for this long is closed (counted as
   * idle_timeout), as the input would once it has it (0: never); `timeoutMs`: a trusted proxy's
   * header must be complete this soon.
   */
  constructor(settings: ProxyProtocolSettings, telemetry: ProxyTelemetry, idleMs: number, timeoutMs = PROXY_HEADER_TIMEOUT_MS) {
    this.#versions = settings.versions;
    this.#trusted = addressList(settings.trusted).list;
    this.#t = telemetry;
    this.#idleMs = idleMs;
    this.#timeoutMs = timeoutMs;
  }

  /**
   * Reads the first bytes of `raw`; once they are known good, puts back what follows the header
   * and calls `then` with the socket paused (the caller resumes it, or wraps it in TLS).
   * One function of ~120 lines on purpose: it is one connection's state machine (the bytes so far,
   * the header, two timers) held in its closures, every way out going through done(); split up,
   * each part would take all of that state as arguments.
   */
  accept(raw: net.Socket, then: (raw: net.Socket) => void): void {
    // Empty when the connection was reset before it was accepted: haproxy's checks
    // (check-send-proxy) send their header and reset at once. Such a peer is trusted with nothing.
    const peer = senderAddress(raw.remoteAddress);
    const trusted = peer !== '' && this.#trusted.has(peer);
    let buf: Buffer = Buffer.alloc(0);
    let timer: NodeJS.Timeout | undefined;
    /** A whole header has been read, and nothing after it yet: the sender it names (the peer's own from anyone else), and whether it was LOCAL. */
    let header: { readonly from: string; readonly local: boolean } | undefined;
    const arm = (): void => {
      timer ??= setTimeout(() => {
        if (trusted) return refuse('proxy_timeout', `no complete PROXY header within ${this.#timeoutMs} ms`);
        // A direct sender whose first bytes are empty lines (a prefix of the v2 signature), then
        // silence: they are its own. Anything more of a signature is refused, never read as syslog.
        if (header === undefined && onlyLineEnds(buf)) return handOn(peer, buf);
        refuse('proxy_untrusted', header ? 'PROXY header from an untrusted address, and the connection left open' : 'the start of a PROXY header from an untrusted address');
      }, this.#timeoutMs);
    };
    // Nothing at all from a direct sender for idleMs (or after a proxy's header): idle, as the input would say.
    const idleTimer = (): NodeJS.Timeout | undefined =>
      this.#idleMs > 0 ? setTimeout(() => refuse('idle_timeout', `nothing received for ${this.#idleMs} ms`), this.#idleMs) : undefined;
    let idle = trusted ? undefined : idleTimer();
    const done = (): void => {
      clearTimeout(timer);
      clearTimeout(idle);
      raw.off('data', onData);
      raw.off('end', onEnd);
      raw.off('error', onError);
      this.#reading.delete(raw);
    };
    const refuse = (reason: ProxyRefusal, why: string): void => {
      done();
      raw.destroy();
      this.#t.rejected(reason);
      this.#t.log.warn(reason, { peer, reason: why }, reason === 'proxy_untrusted'
        ? 'Connection refused: it starts with a PROXY protocol header but its address is not in trusted_proxies.'
        : reason === 'idle_timeout' ? 'Idle connection closed: idle timeout.' : 'Connection from a trusted proxy refused: no valid PROXY protocol header.');
    };
    // Not a refusal, nor worth more than debug: a balancer checks every backend every few seconds.
    const healthCheck = (check: string): void => {
      this.#t.healthCheck();
      this.#t.log.logger.debug({ peer, check }, 'PROXY protocol health check from a load balancer.');
    };
    /** The connection ended (or was reset) right after a whole header: a health check, never handed on (its TLS handshake would fail). */
    const checked = (): void => {
      done();
      raw.destroy();
      healthCheck('a PROXY protocol header, then the end');
    };
    const handOn = (from: string, rest: Buffer, local = false): void => {
      done();
      raw.pause();
      if (local) healthCheck('a LOCAL header');
      if (rest.length > 0) raw.unshift(rest);
      const key = connectionKey(raw);
      this.#origins.set(key, from);
      raw.once('close', () => this.#origins.delete(key));
      then(raw);
    };
    const read = (versions: readonly ('v1' | 'v2')[]): ReturnType<typeof parseProxyHeader> => {
      try {
        return parseProxyHeader(buf, versions);
      } catch (err) {
        // A header the parser did not foresee refuses its connection; it never ends the daemon.
        return { kind: 'invalid', reason: `unreadable PROXY header (${(err as Error).message})` };
      }
    };
    const onData = (chunk: Buffer): void => {
      clearTimeout(idle);
      if (header !== undefined) {
        // Bytes after a whole header: the proxied connection's own, or a forgery going on.
        if (trusted) return handOn(header.from, chunk, header.local);
        return refuse('proxy_untrusted', 'PROXY header from an untrusted address');
      }
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      if (!trusted) {
        // A sender connecting directly: its bytes are its own, unless they pose as a header.
        if (mayBeProxyHeader(buf)) return arm();
        if (!looksLikeProxyHeader(buf)) return handOn(peer, buf);
        // Refused, unless it is a whole header and the connection ends right after it: a balancer's
        // health check, from an address not in trusted_proxies or from one reset before it was read.
        const h = read(ANY_VERSION);
        if (h.kind === 'partial' && buf.length < MAX_UNTRUSTED_HEADER) return arm();
        if (h.kind !== 'header' || buf.length > h.length) return refuse('proxy_untrusted', 'PROXY header from an untrusted address');
        header = { from: peer, local: h.local };
        return arm();
      }
      const h = read(this.#versions);
      if (h.kind === 'invalid') return refuse('proxy_malformed', h.reason);
      if (h.kind === 'partial') {
        if (buf.length > MAX_HEADER) return refuse('proxy_malformed', 'PROXY header too long');
        return;
      }
      const from = h.source ? senderAddress(h.source.address) : peer;
      if (buf.length > h.length) return handOn(from, buf.subarray(h.length), h.local);
      // Only the header so far: handed on with its first bytes, or a health check if it ends.
      header = { from, local: h.local };
      clearTimeout(timer);
      idle = idleTimer();
    };
    const onEnd = (): void => {
      if (header !== undefined) return checked();
      // A connection that sends nothing is not counted; nor a direct sender's empty lines (no event in them).
      if (buf.length === 0 || (!trusted && onlyLineEnds(buf))) {
        done();
        raw.destroy();
        return;
      }
      refuse(trusted ? 'proxy_malformed' : 'proxy_untrusted', 'the connection ended inside a PROXY header');
    };
    const onError = (): void => {
      if (header !== undefined) return checked();
      // A reset inside what is more than a header's first bytes, from anyone else: a forgery cut short.
      if (!trusted && looksLikeProxyHeader(buf) && !mayBeProxyHeader(buf)) return refuse('proxy_untrusted', 'the connection was reset inside a PROXY header');
      done();
      raw.destroy();
    };
    this.#reading.set(raw, done);
    raw.on('data', onData);
    raw.on('end', onEnd);
    raw.on('error', onError);
    if (trusted) arm();
  }

  /** The original sender of a connection handed on by accept() (or of a TLS socket made over it). */
  origin(socket: net.Socket): string {
    return this.#origins.get(connectionKey(socket)) ?? senderAddress(socket.remoteAddress);
  }

  /** Closes the connections whose header is still awaited (the listener stops): nothing more is counted for them. */
  close(): void {
    for (const [s, done] of [...this.#reading]) {
      done();
      s.destroy();
    }
  }
}

/** Only CR and LF: empty lines, no event in them. */
function onlyLineEnds(buf: Buffer): boolean {
  return buf.every((b) => b === 0x0d || b === 0x0a);
}

/** Both ends of a connection: unique among open connections (a balancer's port may serve two of our addresses). */
function connectionKey(s: net.Socket): string {
  return `${s.remoteAddress}|${s.remotePort}|${s.localAddress}|${s.localPort}`;
}
