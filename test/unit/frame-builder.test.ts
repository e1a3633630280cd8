import { isUtf8 } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { messageText } from '../../src/core/event.ts';
import { BoundedQueue } from '../../src/core/queue.ts';
import { frameBuilder } from '../helpers/frame-input.ts';
import { Deframer } from '../../src/syslog/framing.ts';
import { Metrics } from '../../src/telemetry/metrics.ts';
import { metricValue } from '../helpers/relay.ts';

function setup() {
  const queue = new BoundedQueue({ maxEvents: 100, maxBytes: 1 << 20, whenFull: 'block' });
  const metrics = new Metrics(false);
  const builder = frameBuilder(queue, metrics);
  const deframer = new Deframer(1000, 'drop', builder);
  const read = (chunk: Buffer): void => {
    builder.begin(chunk, '10.0.0.1');
    deframer.push(chunk);
    builder.flush();
  };
  return { queue, metrics, read };
}

describe('FrameBuilder', () => {
  it('repairs invalid UTF-8 in a frame joined across reads, even when the later read is valid', async () => {
    const { queue, metrics, read } = setup();
    read(Buffer.from([...Buffer.from('<13>bad '), 0xff]));
    read(Buffer.from(' tail\n<13>fine\n'));
    const batch = await queue.take({ maxEvents: 10, maxBytes: 1 << 20, lingerMs: 0 }, new AbortController().signal);
    expect(batch!.events.map(messageText)).toEqual(['bad \uFFFD tail', 'fine']);
    expect(await metricValue(metrics, 'intake_relay_events_modified_total', { reason: 'invalid_utf8' })).toBe(1);
  });

  it('tells who sent what once per run of reads from one address (datagrams of a turn from several)', () => {
    const queue = new BoundedQueue({ maxEvents: 100, maxBytes: 1 << 20, whenFull: 'block' });
    const seen: [string, number, number][] = [];
    const hosts: number[] = [];
    const builder = frameBuilder(queue, new Metrics(false), false, { from: (f, n, b) => seen.push([f, n, b]), hosts: (events) => hosts.push(events.length) });
    const datagram = (from: string, text: string): void => {
      const b = Buffer.from(text);
      builder.begin(b, from);
      builder.frame(b, 0, b.length, false);
    };
    datagram('10.0.0.1', '<13>a');
    datagram('10.0.0.1', '<13>bb');
    datagram('10.0.0.2', '<13>ccc');
    datagram('10.0.0.1', '<13>d');
    expect(seen).toEqual([['10.0.0.1', 2, 11], ['10.0.0.2', 1, 7]]);
    builder.flush();
    expect(seen).toEqual([['10.0.0.1', 2, 11], ['10.0.0.2', 1, 7], ['10.0.0.1', 1, 5]]);
    expect(hosts).toEqual([4]);
    // The next turn starts a new run, even from the same address.
    datagram('10.0.0.1', '<13>e');
    builder.flush();
    expect(seen.at(-1)).toEqual(['10.0.0.1', 1, 5]);
    builder.flush();
    expect(seen).toHaveLength(4);
  });

  it('counts events offered after the queue closed as dropped for shutdown', async () => {
    const { queue, metrics, read } = setup();
    queue.close();
    read(Buffer.from('<13>late\n'));
    expect(await metricValue(metrics, 'intake_relay_events_dropped_total', { reason: 'shutdown' })).toBe(1);
    expect(await metricValue(metrics, 'intake_relay_events_dropped_total', { reason: 'queue_full' })).toBe(0);
  });
});

describe('FrameBuilder accounting', () => {
  it('counts a repaired frame at its repaired size, so the queue\'s bytes return to zero', async () => {
    const { queue, read } = setup();
    read(Buffer.from([...Buffer.from('<13>bad '), 0xff, 0xfe, 0x0a, ...Buffer.from('<13>ok\n')]));
    const batch = await queue.take({ maxEvents: 10, maxBytes: 1 << 20, lingerMs: 0 }, new AbortController().signal);
    expect(batch!.bytes).toBe(batch!.events.reduce((n, e) => n + e.end - e.start, 0));
    queue.release(batch!);
    expect([queue.pendingEvents, queue.pendingBytes]).toEqual([0, 0]);
  });
});

describe('FrameBuilder: what reaches the queue is valid UTF-8 with clean header fields (issue 12)', () => {
  const take = async (queue: BoundedQueue) => (await queue.take({ maxEvents: 100, maxBytes: 1 << 20, lingerMs: 0 }, new AbortController().signal))!.events;
  const octet = (b: Buffer, count = b.length) => Buffer.concat([Buffer.from(`${count} `), b]);

  it('repairs frames an octet count cuts inside a character, although the read as a whole is valid UTF-8', async () => {
    const { queue, metrics, read } = setup();
    const body = Buffer.from('<13>1 - h a - - - seq=1 é');
    // The count leaves the é's second byte outside: the next frame starts with it (up to the LF).
    const chunk = Buffer.concat([octet(body, body.length - 1), Buffer.from(' tail\n')]);
    expect(isUtf8(chunk)).toBe(true);
    read(chunk);
    const events = await take(queue);
    expect(events.map(messageText)).toEqual(['seq=1 \uFFFD', '\uFFFD tail']);
    for (const e of events) expect(isUtf8(e.buf.subarray(e.msgStart, e.end))).toBe(true);
    expect(await metricValue(metrics, 'intake_relay_events_modified_total', { reason: 'invalid_utf8' })).toBe(2);
  });

  it('cleans control bytes in the header of a pure ASCII read, and counts each repaired event once', async () => {
    const { queue, metrics, read } = setup();
    read(Buffer.concat([
      octet(Buffer.from('<13>Nov 22 10:00:00 h\x00st a\rp[1\n2]: one')),
      octet(Buffer.from('<13>1 - h\tst app\x01 1 ID - two')),
      octet(Buffer.from('<13>Nov 22 10:00:00 host app[12 3]: three')),
      Buffer.from('<13>Nov 22 10:00:00 host app[123]: clean\n'),
    ]));
    const events = await take(queue);
    expect(events.map((e) => [e.hostname, e.appName, e.procId, messageText(e)])).toEqual([
      ['h_st', 'a_p', '1_2', 'one'],
      ['h_st', 'app_', '1', 'two'],
      ['host', '', '', 'app[12 3]: three'],
      ['host', 'app', '123', 'clean'],
    ]);
    expect(await metricValue(metrics, 'intake_relay_events_modified_total', { reason: 'invalid_header' })).toBe(3);
    read(Buffer.from('<13>Nov 22 10:00:00 host app[123]: clean\n'));
    expect(await metricValue(metrics, 'intake_relay_events_modified_total', { reason: 'invalid_header' })).toBe(3);
  });
});
