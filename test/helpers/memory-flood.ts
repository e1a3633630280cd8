// memory_bytes as a sidecar limited to 64 MiB says it, checked on a relay process run as users run
// it (test/integration/packaging-npm.test.ts: the installed package's command): its intake down, a
// TCP sender that writes as fast as the relay reads until the memory queue is full and the input
// stops reading. The queue's bound is the one derived from the budget, it really fills, and the
// relay's anonymous memory (RssAnon: what the kernel cannot take back), sampled every 50 ms from the
// first event on, is returned for the caller to compare with the budget. Nothing is delivered or
// dropped: received = queued.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, vi } from 'vitest';
import { tempDir, track } from './cleanup.ts';
import { freePort } from './peers.ts';
import { TEST_KEY } from './relay.ts';

const MiB = 1024 * 1024;
export const FLOOD_BUDGET = 64 * MiB;
/** The memory queue's bound: a quarter of the one intake's share, (64 - 32 MiB for the runtime) / 4. */
const QUEUE_BYTES = 8 * MiB;

function anonKiB(pid: number): number {
  return Number(/RssAnon:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1] ?? 0);
}

async function metric(port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes('intake="side"'));
  return Number(line?.split(' ').pop() ?? NaN);
}

/** Runs `command run -c FILE` with memory_bytes 64 MiB, floods it, checks the queue; the peak anonymous memory in bytes. */
export async function floodToFullQueue(command: string, env: NodeJS.ProcessEnv): Promise<number> {
  const dir = tempDir('memory-budget-');
  const [inPort, opsPort, downPort] = [await freePort(), await freePort(), await freePort()];
  const file = join(dir, 'relay.yaml');
  writeFileSync(file, `log_level: fatal
memory_bytes: ${FLOOD_BUDGET}
data_dir: ${join(dir, 'state')}
metrics: { enabled: true, address: 127.0.0.1, port: ${opsPort} }
intakes:
  - name: side
    intake_key: ${TEST_KEY}
    inputs: [{ type: tcp, address: 127.0.0.1, port: ${inPort} }]
    output: { type: syslog, host: 127.0.0.1, port: ${downPort}, server_name: localhost, backoff: { initial_ms: 1000, max_ms: 1000 } }
`);
  const relay = spawn(command, ['run', '-c', file], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  track({ stop: () => new Promise<void>((r) => (relay.exitCode !== null ? r() : (relay.once('exit', () => r()), relay.kill('SIGKILL')))) });
  const pid = relay.pid as number;
  await vi.waitFor(() => metric(opsPort, 'intake_relay_queue_max_bytes').then((v) => expect(v).toBe(QUEUE_BYTES)), { timeout: 30_000, interval: 200 });
  let peak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, anonKiB(pid));
  }, 50);
  try {
    // 200-byte lines, written only as fast as the relay takes them, until it stops reading.
    const socket = net.connect(inPort, '127.0.0.1');
    socket.on('error', () => {}); // the relay's stop may reset it: what it received is counted
    await new Promise<void>((r) => socket.once('connect', () => r()));
    const line = (i: number): string => `<134>Nov 28 10:00:00 app side[1]: budget ${String(i).padStart(8, '0')} ${'x'.repeat(160)}\n`;
    let sent = 0;
    let stalled = false;
    while (!stalled && sent < 400_000) {
      let chunk = '';
      for (let k = 0; k < 256; k++) chunk += line(sent++);
      if (!socket.write(chunk)) {
        // No room for 5 s: the relay's queue is full and its input stopped reading.
        stalled = !(await new Promise<boolean>((r) => {
          const t = setTimeout(() => r(false), 5_000);
          socket.once('drain', () => {
            clearTimeout(t);
            r(true);
          });
        }));
      }
    }
    expect(stalled).toBe(true);
    const queued = await metric(opsPort, 'intake_relay_queue_bytes');
    // Full: at its soft limit or above (the input pauses there), within the bound and the one
    // read a paused connection may overshoot it by (queue.ts, offer).
    expect(queued).toBeGreaterThan(QUEUE_BYTES * 0.75);
    expect(queued).toBeLessThanOrEqual(QUEUE_BYTES + 64 * 1024);
    // Sampled a while longer: collections after the flood.
    await new Promise((r) => setTimeout(r, 2_000));
    const received = await metric(opsPort, 'intake_relay_events_received_total');
    const events = await metric(opsPort, 'intake_relay_queue_events');
    expect(received).toBeGreaterThan(30_000);
    expect(events).toBe(received);
    socket.destroy();
  } finally {
    clearInterval(sampler);
  }
  return peak * 1024;
}
