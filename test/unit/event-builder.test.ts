import { describe, expect, it } from 'vitest';
import { messageText } from '../../src/core/event.ts';
import { BoundedQueue } from '../../src/core/queue.ts';
import { EventBuilder, inputCounters, type InputContext } from '../../src/sources/event-builder.ts';
import { Deframer } from '../../src/sources/framing.ts';
import { Metrics } from '../../src/telemetry/metrics.ts';
import { FilterSet } from '../../src/core/filters.ts';
import { metricValue } from '../helpers/relay.ts';

function setup() {
  const queue = new BoundedQueue({ maxEvents: 100, maxBytes: 1 << 20, whenFull: 'block' });
  const metrics = new Metrics(false);
  const ctx: InputContext = { input: 'in', metrics, defaults: { pri: 13, hostname: '', appName: '', procId: '' }, targets: [{ intake: 'i', queue, filters: new FilterSet([]) }] };
  const builder = new EventBuilder(ctx, inputCounters(ctx), true);
  const deframer = new Deframer(1000, 'drop', builder);
  const read = (chunk: Buffer): void => {
    builder.begin(chunk, '10.0.0.1');
    deframer.push(chunk);
    builder.flush();
  };
  return { queue, metrics, read };
}

describe('EventBuilder', () => {
  it('repairs invalid UTF-8 in a frame joined across reads, even when the later read is valid', async () => {
    const { queue, metrics, read } = setup();
    read(Buffer.from([...Buffer.from('<13>bad '), 0xff]));
    read(Buffer.from(' tail\n<13>fine\n'));
    const batch = await queue.take({ maxEvents: 10, maxBytes: 1 << 20, lingerMs: 0 }, new AbortController().signal);
    expect(batch!.events.map(messageText)).toEqual(['bad \uFFFD tail', 'fine']);
    expect(await metricValue(metrics, 'intake_relay_events_modified_total', { reason: 'invalid_utf8' })).toBe(1);
  });

  it('counts events offered after the queue closed as dropped for shutdown', async () => {
    const { queue, metrics, read } = setup();
    queue.close();
    read(Buffer.from('<13>late\n'));
    expect(await metricValue(metrics, 'intake_relay_events_dropped_total', { reason: 'shutdown' })).toBe(1);
    expect(await metricValue(metrics, 'intake_relay_events_dropped_total', { reason: 'queue_full' })).toBe(0);
  });
});

describe('EventBuilder accounting', () => {
  it('counts a repaired frame at its repaired size, so the queue\'s bytes return to zero', async () => {
    const { queue, read } = setup();
    read(Buffer.from([...Buffer.from('<13>bad '), 0xff, 0xfe, 0x0a, ...Buffer.from('<13>ok\n')]));
    const batch = await queue.take({ maxEvents: 10, maxBytes: 1 << 20, lingerMs: 0 }, new AbortController().signal);
    expect(batch!.bytes).toBe(batch!.events.reduce((n, e) => n + e.end - e.start, 0));
    queue.release(batch!);
    expect([queue.pendingEvents, queue.pendingBytes]).toEqual([0, 0]);
  });
});
