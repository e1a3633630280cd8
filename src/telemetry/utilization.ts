// How busy a thread's event loop was: the share of the time since the last reading it spent
// working (Node's event loop utilization), for intake_relay_thread_utilization.

import { performance } from 'node:perf_hooks';

/**
 * A meter of this thread's event loop: each call gives its utilization (0 to 1) since the previous
 * one, or undefined while less than `minMs` have passed (a reading over too short a time says little).
 */
export function loopUtilization(minMs = 0): () => number | undefined {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    if (now.idle + now.active - (last.idle + last.active) < minMs) return undefined;
    const u = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    return u;
  };
}
