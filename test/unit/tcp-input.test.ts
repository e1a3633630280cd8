// The TCP syslog input against raw TCP clients: what it reads reaches the queue, and idle_timeout_ms
// frees the connection slot of an idle sender, also one that never closes its side after ours.
import net from 'node:net';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { messageText } from '../../src/core/event.ts';
import { BoundedQueue } from '../../src/core/queue.ts';
import { TcpSyslogInput } from '../../src/inputs/tcp/input.ts';
import { inletTelemetry } from '../../src/pipeline/instruments.ts';
import { syslogInputTelemetry } from '../../src/inputs/syslog-instruments.ts';
import { FilterSet } from '../../src/routing/filters.ts';
import { Inlet } from '../../src/routing/inlet.ts';
import { Metrics } from '../../src/telemetry/metrics.ts';
import { track } from '../helpers/cleanup.ts';
import { NO_SIGHTINGS } from '../helpers/frame-input.ts';
import { metricValue } from '../helpers/relay.ts';

async function setup(o: { idleTimeoutMs: number; maxConnections: number; maxEvents?: number }) {
  const metrics = new Metrics(false);
  const queue = new BoundedQueue({ maxEvents: o.maxEvents ?? 1000, maxBytes: 1 << 20, whenFull: 'block' });
  const sender = new Inlet({ targets: [{ intake: 'i', intakeKey: '', queue, filters: new FilterSet([]) }] }, { mode: 'pause' }, inletTelemetry(metrics, 'in'));
  const telemetry = syslogInputTelemetry(metrics, pino({ level: 'silent' }), 'i', 'in', NO_SIGHTINGS);
  const input = new TcpSyslogInput(
    {
      label: 'in', address: '127.0.0.1', port: 0, maxConnections: o.maxConnections, idleTimeoutMs: o.idleTimeoutMs,
      maxMessageBytes: 1000, oversize: 'drop', tls: undefined, defaults: { pri: 13, hostname: '', appName: '', procId: '' }, proxy: undefined,
    },
    sender,
    telemetry,
  );
  await input.start();
  track({ stop: async () => { await input.stop(100); input.dispose(); } });
  return { input, queue, metric: (name: string, labels: Record<string, string> = {}) => metricValue(metrics, name, labels) };
}

/** A client that sends `line`, then keeps its side open, whatever the server does (allowHalfOpen). */
function stubborn(port: number, line: string): { socket: net.Socket; ended: () => boolean } {
  let ended = false;
  const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  socket.on('error', () => {});
  socket.on('data', () => {});
  socket.on('end', () => (ended = true));
  socket.write(line);
  track({ stop: () => socket.destroy() });
  return { socket, ended: () => ended };
}

describe('TCP input: idle_timeout_ms', () => {
  it('a sender that never closes its side after ours is cut a timeout later: its slot is free again, counted once', async () => {
    const s = await setup({ idleTimeoutMs: 150, maxConnections: 1 });
    const first = stubborn(s.input.port, '<13>first, then silence\n');
    await vi.waitFor(() => expect(s.queue.pendingEvents).toBe(1));
    // Ended by the server (FIN), and still open on the client's side.
    await vi.waitFor(() => expect(first.ended()).toBe(true), { timeout: 10_000 });
    expect(first.socket.destroyed).toBe(false);
    // The client cannot tell that the server cut it: the server's count of connections can.
    await vi.waitFor(async () => expect(await s.metric('intake_relay_input_connections')).toBe(0), { timeout: 10_000 });
    expect(await s.metric('intake_relay_input_connections_rejected_total', { reason: 'idle_timeout' })).toBe(1);
    // max_connections is 1: the slot is free for the next sender.
    const second = stubborn(s.input.port, '<13>second\n');
    await vi.waitFor(() => expect(s.queue.pendingEvents).toBe(2));
    expect(await s.metric('intake_relay_input_connections_rejected_total', { reason: 'max_connections' })).toBe(0);
    const batch = (await s.queue.take({ maxEvents: 10, maxBytes: 1 << 20, lingerMs: 0 }, new AbortController().signal))!;
    expect(batch.events.map(messageText)).toEqual(['first, then silence', 'second']);
    second.socket.destroy();
  });

  it('a sender paused by backpressure (a full queue) is not idle: never cut, and what the kernel holds for it is read once the queue drains', async () => {
    const idle = 100;
    const s = await setup({ idleTimeoutMs: idle, maxConnections: 10, maxEvents: 100 });
    const n = 3_000;
    const socket = net.connect({ port: s.input.port, host: '127.0.0.1' });
    socket.on('error', () => {});
    track({ stop: () => socket.destroy() });
    socket.write(Array.from({ length: n }, (_, i) => `<13>held ${i}\n`).join(''));
    await vi.waitFor(() => expect(s.queue.pendingEvents).toBeGreaterThanOrEqual(10));
    // Paused for several idle timeouts: time must pass for the timer to fire, so this one waits.
    await new Promise((r) => setTimeout(r, 5 * idle));
    expect(await s.metric('intake_relay_input_connections_rejected_total', { reason: 'idle_timeout' })).toBe(0);
    const got: string[] = [];
    while (got.length < n) {
      const batch = await s.queue.take({ maxEvents: 50, maxBytes: 1 << 20, lingerMs: 0 }, AbortSignal.timeout(10_000));
      if (!batch) break;
      got.push(...batch.events.map(messageText));
      s.queue.settle(batch.seq, batch.events.length);
      s.queue.release(batch);
    }
    expect(got).toHaveLength(n);
    expect(got.at(-1)).toBe(`held ${n - 1}`);
    expect(await s.metric('intake_relay_input_connections_rejected_total', { reason: 'idle_timeout' })).toBe(0);
  });
});
