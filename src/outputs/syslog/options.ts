// The syslog sink's options, and the sizing of its resend window (what it holds written and not
// yet confirmed): from the proof distance (tcp-buffers.ts) and the headroom a failing connection needs.

import type { Rfc5424Formatter } from '../../syslog/format.ts';

export interface SyslogTlsOptions {
  readonly host: string;
  readonly port: number;
  /** Name checked against the certificate; defaults to `host`. */
  readonly serverName: string | undefined;
  readonly ca: Buffer | undefined;
  readonly cert: Buffer | undefined;
  readonly key: Buffer | undefined;
  readonly connectTimeoutMs: number;
  /** Longest a batch waits for proof before the connection is closed to get it. */
  readonly confirmAfterMs: number;
  /** Bytes taken by the kernel after a batch that prove the intake read it. */
  readonly proofBytes: number;
  /**
   * Most bytes written and not yet confirmed (all connections): memory. Default: `proofBytes` +
   * HEADROOM_BYTES, where the proof by volume keeps each connection within it. Below that, a
   * connection is closed for confirmation once it holds half of it.
   */
  readonly windowBytes?: number;
  /** A connection that takes nothing, or does not answer a close, for this long has failed. */
  readonly writeTimeoutMs: number;
  readonly formatter: Rfc5424Formatter;
}

/**
 * Bytes left in Node's socket buffer before send() waits for it to drain. Not more: the kernel's
 * send buffer keeps the connection busy, and what waits in Node's buffer costs memory twice over.
 * Batches written while one is in flight are handed to TLS together, which copies them into one new
 * buffer before encrypting, and the encrypted bytes wait in memory too until the kernel takes them.
 * Measured on the TCP path (CHANGELOG.md, 0.2.0; 12 runs each, from dist/): 2 MiB, median peak RSS
 * 137 MiB; 1 MiB, 131 at the same CPU per event; 256 KiB, 125.5 but about 10% more CPU per event
 * in two sets of runs.
 */
export const MAX_BUFFERED_BYTES = 1024 * 1024;
/** The window `auto` sizes beyond the proof distance (a connection that keeps failing fills it). */
export const HEADROOM_BYTES = 8 * 1024 * 1024;
/**
 * What a connection holds beyond the proof distance while the proof by volume keeps up: what Node
 * and the kernel have not taken yet (MAX_BUFFERED_BYTES) and a batch or two.
 */
export const VOLUME_SLACK_BYTES = 4 * 1024 * 1024;

/** resend_window_bytes resolved: `auto` is as much as the proof by volume needs, and the headroom. */
export function resendWindowBytes(setting: number | 'auto', proofBytes: number): number {
  return setting === 'auto' ? proofBytes + HEADROOM_BYTES : setting;
}
