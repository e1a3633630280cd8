// Turns the frames of one read (a TCP chunk or a UDP datagram) into events, offers them to the
// intake's queue in one call and updates the input's metrics once per read, not per event. Events
// keep referring to the read's buffer (Node gives each read its own, exactly sized): no copy.

import { isAscii, isUtf8 } from 'node:buffer';
import type { LogEvent } from '../core/event.ts';
import type { BoundedQueue, OfferResult } from '../core/queue.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { FrameSink } from './framing.ts';
import { fieldCache, parseSyslog, type HeaderDefaults } from './syslog-parse.ts';

export interface InputContext {
  readonly intake: string;
  readonly input: string;
  readonly queue: BoundedQueue;
  readonly metrics: Metrics;
  readonly defaults: HeaderDefaults;
}

export function inputCounters(ctx: InputContext) {
  const { metrics: m, intake, input } = ctx;
  return {
    received: m.eventsReceived.labels({ intake, input }),
    bytes: m.bytesReceived.labels({ intake, input }),
    invalidUtf8: m.eventsModified.labels({ intake, input, reason: 'invalid_utf8' }),
    truncated: m.eventsModified.labels({ intake, input, reason: 'truncated' }),
    tooLarge: m.eventsDropped.labels({ intake, stage: 'input', reason: 'too_large' }),
    queueFull: m.eventsDropped.labels({ intake, stage: 'input', reason: 'queue_full' }),
    closed: m.eventsDropped.labels({ intake, stage: 'input', reason: 'shutdown' }),
    oversizeFrames: m.framingErrors.labels({ intake, input, reason: 'too_large' }),
    paused: m.inputPaused.labels({ intake, input }),
  };
}
export type InputCounters = ReturnType<typeof inputCounters>;

export class EventBuilder implements FrameSink {
  readonly #ctx: InputContext;
  readonly #c: InputCounters;
  readonly #canPause: boolean;
  readonly #fields = fieldCache();
  #events: LogEvent[] = [];
  #bytes = 0;
  #sender = '';
  #chunk: Buffer | undefined;
  #receivedAt = 0;
  #ascii = true;
  #utf8 = true;
  #invalid = 0;
  #truncated = 0;
  #tooLarge = 0;

  constructor(ctx: InputContext, counters: InputCounters, canPause: boolean) {
    this.#ctx = ctx;
    this.#c = counters;
    this.#canPause = canPause;
  }

  /** Events built and not yet offered. */
  get pending(): number {
    return this.#events.length;
  }

  /** Start a read: one reception time and one encoding check for all its frames. */
  begin(chunk: Buffer, sender: string): void {
    this.#sender = sender;
    this.#chunk = chunk;
    this.#receivedAt = Date.now();
    this.#ascii = isAscii(chunk);
    this.#utf8 = this.#ascii || isUtf8(chunk);
  }

  frame(buf: Buffer, start: number, end: number, truncated: boolean): void {
    if (truncated) {
      end = utf8Boundary(buf, start, end);
      this.#truncated++;
    }
    this.#bytes += end - start;
    // The read was checked as a whole; a frame joined from an earlier read's tail was not.
    const fromRead = buf === this.#chunk;
    if (!(fromRead && this.#utf8) && !isUtf8(buf.subarray(start, end))) {
      // Forward what a UTF-8 decoder makes of it (U+FFFD for each bad sequence), never bad bytes.
      this.#invalid++;
      const fixed = Buffer.from(buf.toString('utf8', start, end), 'utf8');
      this.#events.push(parseSyslog(fixed, 0, fixed.length, this.#receivedAt, this.#sender, this.#ctx.defaults, false, this.#fields));
      return;
    }
    this.#events.push(parseSyslog(buf, start, end, this.#receivedAt, this.#sender, this.#ctx.defaults, fromRead && this.#ascii, this.#fields));
  }

  oversized(): void {
    this.#tooLarge++;
  }

  /** Offer what this read produced; returns what the caller must do (pause on slow_down). */
  flush(): OfferResult {
    const c = this.#c;
    if (this.#tooLarge > 0) {
      c.tooLarge.inc(this.#tooLarge);
      c.oversizeFrames.inc(this.#tooLarge);
      c.received.inc(this.#tooLarge);
      this.#tooLarge = 0;
    }
    if (this.#invalid > 0) {
      c.invalidUtf8.inc(this.#invalid);
      this.#invalid = 0;
    }
    if (this.#truncated > 0) {
      c.truncated.inc(this.#truncated);
      this.#truncated = 0;
    }
    const events = this.#events;
    if (events.length === 0) return 'ok';
    const bytes = this.#bytes;
    this.#events = [];
    this.#bytes = 0;
    c.received.inc(events.length);
    c.bytes.inc(bytes);
    const queue = this.#ctx.queue;
    const r = queue.offer(events, bytes, this.#canPause);
    if (r.dropped > 0) (queue.closed ? c.closed : c.queueFull).inc(r.dropped);
    return r.result;
  }
}

/** "::ffff:10.0.0.1" -> "10.0.0.1". */
export function senderAddress(addr: string | undefined): string {
  if (!addr) return '';
  return addr.startsWith('::ffff:') ? addr.slice(7) : addr;
}

/** `end`, moved back so that [start, end) does not finish inside a multi-byte UTF-8 sequence. */
export function utf8Boundary(buf: Buffer, start: number, end: number): number {
  let k = end - 1;
  let cont = 0;
  while (k > start && ((buf[k] as number) & 0xc0) === 0x80 && cont < 3) {
    k--;
    cont++;
  }
  const lead = buf[k] as number;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return end - k < need ? k : end;
}
