// Adaptive concurrency of the HTTP output against stand-ins for an intake: one of fixed capacity (3
// workers x 20 ms, a FIFO queue in front: latency rises a little with every request too many), and
// one that throttles (429 Retry-After: 1) for seconds. The limit settles near the capacity with
// latency near the service time; during the throttling no more requests are in flight at once than
// the limit allows, and fewer after each pause; the in-flight gauge is 0 at rest; every event
// arrives once.
import { describe, expect, it, vi } from 'vitest';
import { books, startRelay, TEST_KEY, TLS } from '../helpers/relay.ts';
import { sendTcp } from '../helpers/peers.ts';
import { startHttpIntake, type Answer } from '../helpers/http-intake.ts';
import { track } from '../helpers/cleanup.ts';
import { syslogLines } from '../helpers/lines.ts';

function yaml(url: string): string {
  return `log_level: info
metrics: { enabled: false }
shutdown_timeout_ms: 2000
intakes:
  - name: h
    intake_key: ${TEST_KEY}
    inputs:
      - { type: tcp, address: 127.0.0.1, port: 0 }
    output:
      type: http
      url: ${url}
      ca_file: ${TLS}ca.crt
      proxy: none
      concurrency: adaptive
      max_concurrency: 32
      backoff: { initial_ms: 50, max_ms: 200 }
    batch: { max_events: 50, linger_ms: 5 }
`;
}

const lines = (n: number): string => syslogLines(0, n, (i) => `ev ${i}`, '<14>Nov 22 10:00:00 host app[7]: ');
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

describe('HTTP output: adaptive concurrency', () => {
  it('an intake of fixed capacity (3 workers x 20 ms): the limit settles near 3, latency near 20 ms; every event once', async () => {
    const WORKERS = 3;
    const SERVICE_MS = 20;
    const free = Array.from({ length: WORKERS }, () => 0);
    const latencies: { at: number; ms: number }[] = [];
    const intake = track(await startHttpIntake((): Answer => {
      // FIFO: this request takes the worker free first, after the ones queued before it.
      const now = Date.now();
      const w = free.indexOf(Math.min(...free));
      const done = Math.max(now, free[w] as number) + SERVICE_MS;
      free[w] = done;
      latencies.push({ at: now, ms: done - now });
      return { status: 200, delayMs: done - now };
    }));
    const relay = track(await startRelay(yaml(intake.url)));
    const N = 40_000;
    const limits: number[] = [];
    const sampler = setInterval(() => void relay.metric('intake_relay_output_concurrency_limit').then((l) => limits.push(l)), 100);
    try {
      await sendTcp(relay.port('h', 'tcp/0'), lines(N));
      await vi.waitFor(() => expect(intake.accepted).toHaveLength(N), { timeout: 60_000, interval: 100 });
    } finally {
      clearInterval(sampler);
    }
    expect(new Set(intake.accepted).size).toBe(N);
    // The second half: settled.
    const late = limits.slice(Math.floor(limits.length / 2));
    const lateLatency = latencies.slice(Math.floor(latencies.length / 2)).map((l) => l.ms);
    console.log(`fixed capacity 3 x 20 ms: limit median ${median(late)} (min ${Math.min(...late)}, max ${Math.max(...late)}), latency median ${median(lateLatency)} ms, mean ${Math.round(lateLatency.reduce((a, b) => a + b, 0) / lateLatency.length)} ms, ${intake.requests.length} requests`);
    expect(median(late)).toBeGreaterThanOrEqual(2);
    expect(median(late)).toBeLessThanOrEqual(7);
    // Before: the limit at 15 to 32, latency 141 ms.
    expect(median(lateLatency)).toBeLessThan(SERVICE_MS * 2.5);
    await vi.waitFor(async () => expect(await books(relay, 'h')).toMatchObject({ received: N, sent: N, dropped: 0, balanced: true }));
    expect(await relay.metric('intake_relay_output_in_flight')).toBe(0);
  }, 90_000);

  it('a 429 storm with Retry-After: 1: never more requests at once than the limit, fewer after each pause; all delivered once', async () => {
    let phase: 'fast' | 'storm' | 'ok' = 'fast';
    let active = 0;
    const arrivals: { at: number; active: number }[] = [];
    const intake = track(await startHttpIntake((): Answer => {
      active++;
      arrivals.push({ at: Date.now(), active });
      const delayMs = 20;
      setTimeout(() => active--, delayMs);
      return phase === 'storm' ? { status: 429, headers: { 'retry-after': '1' }, delayMs } : { status: 200, delayMs };
    }));
    const relay = track(await startRelay(yaml(intake.url)));
    const port = relay.port('h', 'tcp/0');
    const N = 60_000;
    const limits: { at: number; limit: number }[] = [];
    const sampler = setInterval(() => void relay.metric('intake_relay_output_concurrency_limit').then((limit) => limits.push({ at: Date.now(), limit })), 25);
    // Fast answers first: the limit grows.
    await sendTcp(port, lines(N));
    await vi.waitFor(() => expect(intake.accepted.length).toBeGreaterThan(8_000), { timeout: 30_000, interval: 20 });
    phase = 'storm';
    const stormAt = Date.now();
    await new Promise((r) => setTimeout(r, 5_500));
    clearInterval(sampler);
    phase = 'ok';
    // The highest limit from just before the storm on: what it started with.
    const before = Math.max(...limits.filter((l) => l.at > stormAt - 500).map((l) => l.limit));
    await vi.waitFor(() => expect(intake.accepted).toHaveLength(N), { timeout: 30_000, interval: 50 });
    expect(new Set(intake.accepted).size).toBe(N);
    // After the first answer of the storm (requests already out may land): each pause's burst.
    const storm = arrivals.filter((a) => a.at > stormAt + 300 && a.at < stormAt + 5_500);
    const bursts: number[] = [];
    let last = -Infinity;
    for (const a of storm) {
      if (a.at - last > 500) bursts.push(0);
      bursts[bursts.length - 1]! += 1;
      last = a.at;
    }
    const peak = Math.max(0, ...storm.map((a) => a.active));
    console.log(`429 storm: limit before ${before}, requests per pause ${JSON.stringify(bursts)}, peak in flight ${peak}`);
    expect(peak).toBeLessThanOrEqual(Math.max(1, before));
    expect(bursts.length).toBeGreaterThanOrEqual(3);
    // Each pause halves the limit (or more): the i-th burst is at most the limit before the storm
    // halved i times (1 at least). Not half the burst before: the first burst counted starts 300 ms
    // into the storm, so requests of that pause that landed earlier are not in it.
    let bound = Math.max(1, before);
    for (const burst of bursts) {
      expect(burst).toBeLessThanOrEqual(bound);
      bound = Math.max(1, Math.ceil(bound / 2));
    }
    expect(bursts[bursts.length - 1]).toBeLessThan(bursts[0] as number);
    await vi.waitFor(async () => expect(await books(relay, 'h')).toMatchObject({ received: N, sent: N, dropped: 0, balanced: true }));
    expect(await relay.metric('intake_relay_output_in_flight')).toBe(0);
  }, 90_000);
});
