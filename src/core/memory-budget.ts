// The memory budget (memory_bytes): one number from which the defaults of every bound that holds
// events in memory derive, so that a relay under a limit (a sidecar's) says so once, or not at all
// (defaultMemoryBytes takes it from the limit), instead of sizing each queue and output. A bound
// set by hand wins over its derived default.
//
// What the runtime takes before any event (Node.js, the code, V8's young generation under load) is
// set aside; the rest is shared equally by the intakes, and each intake's share is split:
//
//   memory queue (max_bytes)         1/4   events in memory take 2-3 times their bytes as objects
//   disk queue, memory part          1/6   (memory_bytes: events read ahead of the output)
//   syslog resend window             1/6   (resend_window_bytes; per thread with workers), 8 MiB at most
//   HTTP requests in flight          1/3   (max_concurrency x 2 x max_body_bytes: text and bytes)
//   UDP input's read backlog         1/6   (per input and thread), 16 MiB at most
//
// At the default 128 MiB and one intake: a 24 MiB memory queue, an 8 MiB resend window, a disk
// queue's 16 MiB in memory, up to 3 HTTP requests of 5 MiB in flight, and 16 MiB of datagrams read
// ahead of a busy thread.

import { MiB } from './config-values.ts';

/** memory_bytes when the file does not say. */
export const DEFAULT_MEMORY_BYTES = 128 * MiB;
/** The least memory_bytes accepted: the runtime's part and a little for events. */
export const MIN_MEMORY_BYTES = 48 * MiB;
/**
 * Where the process has a memory limit (a container's, a systemd unit's MemoryMax: its cgroup)
 * and the file does not set memory_bytes, the default is this share of the limit. Measured at full
 * speed (TCP and HTTPS floods): with memory_bytes 64 MiB, a 64 MiB cgroup was killed by the kernel,
 * a 96 MiB one ran through with 75-77 MiB at its peak (anonymous memory, page cache and the
 * kernel's own): the budget is what the relay aims at, not a ceiling its peaks never pass. Since
 * the shorter reader queue and smaller young generation (queue.ts), at 64 MiB (a 48 MiB budget)
 * TCP, UDP and file floods ran through and 1 HTTPS flood of 3 was still killed.
 */
export const LIMIT_SHARE = 2 / 3;

/**
 * memory_bytes when the file does not say, from the process's memory limit (`constrained`, in
 * bytes: Node's process.constrainedMemory(); 0, or more than the machine has, when there is none):
 * DEFAULT_MEMORY_BYTES, or LIMIT_SHARE of a lower limit (whole MiB, MIN_MEMORY_BYTES at least).
 * `limitBytes`: the limit, where it set the value.
 */
export function defaultMemoryBytes(constrained: number, machine: number): { readonly bytes: number; readonly limitBytes?: number } {
  if (!(constrained > 0) || constrained >= machine || constrained * LIMIT_SHARE >= DEFAULT_MEMORY_BYTES) return { bytes: DEFAULT_MEMORY_BYTES };
  const share = Math.floor((constrained * LIMIT_SHARE) / MiB) * MiB;
  return { bytes: Math.max(MIN_MEMORY_BYTES, share), limitBytes: constrained };
}

/**
 * Set aside for the runtime: measured at rest with one intake, 31 MiB of anonymous memory (the
 * heap after start with its young generation, then 16 MiB, 8 and now 4 under load, Node.js's own).
 * What is not given to a bound (a quarter of each share at least: batches being formatted, socket
 * buffers, the old generation's garbage between collections) is the slack the rest of the work
 * takes.
 */
export const RUNTIME_BYTES = 32 * MiB;
/** Each worker thread beyond the first: its own V8 isolate and young generation. */
export const WORKER_THREAD_BYTES = 16 * MiB;
/** The least share an intake gets, however many there are. */
const MIN_SHARE_BYTES = 4 * MiB;

export interface MemoryShares {
  /** Each intake's share, all threads together (queues are split between threads later). */
  readonly intakeBytes: number;
  /** Each intake's share in one thread (an output runs in each thread that receives for it). */
  readonly perThreadBytes: number;
}

/** How `memoryBytes` is shared by `intakes` intakes running in `threads` threads. */
export function memoryShares(memoryBytes: number, intakes: number, threads: number): MemoryShares {
  const free = memoryBytes - RUNTIME_BYTES - (threads - 1) * WORKER_THREAD_BYTES;
  const intakeBytes = Math.max(MIN_SHARE_BYTES, Math.floor(free / Math.max(1, intakes)));
  return { intakeBytes, perThreadBytes: Math.max(MIN_SHARE_BYTES, Math.floor(intakeBytes / Math.max(1, threads))) };
}

/** Bytes as MiB with one decimal at most ("64 MiB", "10.7 MiB"), for messages. */
export function mibText(n: number): string {
  return `${Math.round((n / MiB) * 10) / 10} MiB`;
}

/** A memory queue's max_bytes from the intake's share. */
export const queueBytesOf = (intakeBytes: number): number => Math.floor(intakeBytes / 4);
/** A disk queue's memory_bytes from the intake's share. */
export const diskMemoryBytesOf = (intakeBytes: number): number => Math.floor(intakeBytes / 6);
/** A sixth of a thread's share, from 1 MiB to `most`: the bounds a thread keeps per output or input. */
const sixthOf = (perThreadBytes: number, most: number): number => Math.min(most, Math.max(MiB, Math.floor(perThreadBytes / 6)));
/**
 * The most a derived resend window takes. A larger one only saves connections in a flood: with
 * Linux's default TCP buffers, 16 MiB confirms by reading on, where 8 MiB closes a connection for
 * confirmation every 4 MiB. Measured on the TCP flood (docs/performance.md): 16 MiB peaked 8-9 MiB
 * higher, for 26 connections per million events against 43. `resend_window_bytes: auto` (or a
 * number) takes the larger window.
 */
export const MAX_DERIVED_WINDOW_BYTES = 8 * MiB;
/** The syslog output's resend window from the intake's share in one thread (1 to 8 MiB). */
export const resendWindowOf = (perThreadBytes: number): number => sixthOf(perThreadBytes, MAX_DERIVED_WINDOW_BYTES);
/**
 * The most a UDP input's reader thread (or its receive_threads together) holds of what it read and
 * the relay's thread has not taken yet, before it drops datagrams (counted): ~0.6 s of 200-byte
 * datagrams at 100,000 a second, over a collection or a burst of output.
 */
export const MAX_UDP_BACKLOG_BYTES = 16 * MiB;
/**
 * A UDP input's read backlog from the intake's share in one thread (1 to 16 MiB). It was 16 MiB
 * whatever the budget: under a 64 MiB limit (a 48 MiB budget) a relay starved of CPU (a quarter of
 * a core for 100,000 datagrams a second) filled it, and the kernel killed it in 3 floods of 3; with
 * this bound (2.67 MiB there), 3 floods of 3 ran through at 60-62 MiB, each datagram lost counted.
 */
export const udpBacklogOf = (perThreadBytes: number): number => sixthOf(perThreadBytes, MAX_UDP_BACKLOG_BYTES);
/** The HTTP output's most requests in flight: each holds its JSON text and its bytes (2 to 32). */
export const httpConcurrencyOf = (perThreadBytes: number, maxBodyBytes: number): number =>
  Math.min(32, Math.max(2, Math.floor(perThreadBytes / 3 / (2 * maxBodyBytes))));
