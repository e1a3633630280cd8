// How many bytes a TCP connection can hold that the receiving application has not read: this
// host's send buffer plus the peer's receive buffer. Linux sizes both automatically up to
// net.ipv4.tcp_wmem and net.ipv4.tcp_rmem (third field); the intake's own limits cannot be seen
// from here, so this host's receive maximum stands in for them (Linux's default is 6 MiB).

import { readFileSync } from 'node:fs';

const MiB = 1024 * 1024;
/** Where /proc cannot be read (not Linux): Linux's defaults, 4 MiB + 6 MiB. */
const FALLBACK_SEND = 4 * MiB;
const FALLBACK_RECEIVE = 6 * MiB;
/** A segment the kernel lets past a full buffer, and TLS records in flight. */
const SLACK = 1 * MiB;

function sysctlMax(file: string, fallback: number): number {
  try {
    const v = Number(readFileSync(file, 'utf8').trim().split(/\s+/)[2]);
    return Number.isSafeInteger(v) && v > 0 ? v : fallback;
  } catch {
    return fallback;
  }
}

/**
 * Bytes that must be taken by the kernel after a batch before that batch is known to have been read
 * by the peer: more than both buffers together can hold, so some later byte, and therefore the
 * batch before it, has been read.
 */
export function unreadCapacityBytes(procDir = '/proc/sys/net/ipv4', intakeReceive?: number): number {
  return sysctlMax(`${procDir}/tcp_wmem`, FALLBACK_SEND) + (intakeReceive ?? sysctlMax(`${procDir}/tcp_rmem`, FALLBACK_RECEIVE)) + SLACK;
}
