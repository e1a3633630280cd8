// Turns the frames of one read (a TCP chunk, a UDP datagram, a file's lines) into events and hands
// them to the source's Inlet in one call: one reception time and one encoding check per read, and
// counts once per read, not per event (who sent them: once per run of reads from one address).
// Events keep referring to the read's buffer (Node gives each read its own, exactly sized): no
// copy. Invalid UTF-8 is repaired (counted), never forwarded.

import { isAscii, isUtf8 } from 'node:buffer';
import { isIPv4 } from 'node:net';
import type { Inlet } from '../core/component.ts';
import type { LogEvent } from '../core/event.ts';
import type { OfferResult } from '../core/event-queue.ts';
import type { EventTelemetry } from '../core/telemetry.ts';
import type { FrameSink } from '../syslog/framing.ts';
import { fieldCache, headerlessEvent, parseSyslog, type HeaderDefaults } from '../syslog/parse.ts';
import { utf8Boundary } from '../core/utf8.ts';

export class FrameBuilder implements FrameSink {
  readonly #inlet: Inlet;
  readonly #t: EventTelemetry;
  readonly #defaults: HeaderDefaults;
  readonly #parse: boolean;
  readonly #fields = fieldCache();
  #events: LogEvent[] = [];
  #bytes = 0;
  #from = '';
  #chunk: Buffer | undefined;
  #receivedAt = 0;
  #utf8 = true;
  #invalid = 0;
  #truncated = 0;
  #tooLarge = 0;
  /** The run of reads from one address: where its events start in #events, and #bytes then. */
  #runFrom = '';
  #runStart = 0;
  #runBytes = 0;

  /** `parse`: read a syslog header where a frame has one; false: every frame is a whole message. */
  constructor(inlet: Inlet, telemetry: EventTelemetry, defaults: HeaderDefaults, parse = true) {
    this.#inlet = inlet;
    this.#t = telemetry;
    this.#defaults = defaults;
    this.#parse = parse;
  }

  #event(buf: Buffer, start: number, end: number): LogEvent {
    return this.#parse
      ? parseSyslog(buf, start, end, this.#receivedAt, this.#from, this.#defaults, this.#fields)
      : headerlessEvent(buf, start, end, this.#receivedAt, this.#from, this.#defaults);
  }

  /** Events built and not yet offered. */
  get pending(): number {
    return this.#events.length;
  }

  /** Start a read from the address `from`: one reception time and one encoding check for all its frames. */
  begin(chunk: Buffer, from: string): void {
    this.sender(from);
    this.#chunk = chunk;
    this.#receivedAt = Date.now();
    this.#utf8 = isAscii(chunk) || isUtf8(chunk);
  }

  /** The next frames of this read come from `from` (a read holding several senders' datagrams). */
  sender(from: string): void {
    if (from !== this.#runFrom) {
      this.#endRun();
      this.#runFrom = from;
    }
    this.#from = from;
  }

  frame(buf: Buffer, start: number, end: number, truncated: boolean): void {
    if (truncated) {
      end = utf8Boundary(buf, start, end);
      this.#truncated++;
    }
    // The read was checked as a whole (the deframer may hand over the rest of it as a view of it
    // after a frame that straddled two reads); a frame joined from an earlier read's tail was not. A part
    // of valid UTF-8 is valid when it neither starts nor ends inside a character, which an octet
    // count (or the end of a skipped oversized frame) may not respect.
    const checked = this.#utf8 && inChunk(buf, this.#chunk) && !isContinuation(buf[start]) && !isContinuation(buf[end]);
    if (!checked && !isUtf8(buf.subarray(start, end))) {
      // Forward what a UTF-8 decoder makes of it (U+FFFD for each bad sequence), never bad bytes.
      this.#invalid++;
      const fixed = Buffer.from(buf.toString('utf8', start, end), 'utf8');
      this.#events.push(this.#event(fixed, 0, fixed.length));
      // The queue accounts each event by its own size: the repaired one's.
      this.#bytes += fixed.length;
      return;
    }
    this.#events.push(this.#event(buf, start, end));
    this.#bytes += end - start;
  }

  oversized(): void {
    this.#tooLarge++;
  }

  /** Offers what this read produced; returns what the caller must do (pause on slow_down). */
  flush(): OfferResult {
    const t = this.#t;
    if (this.#tooLarge > 0) {
      t.tooLarge(this.#tooLarge);
      this.#tooLarge = 0;
    }
    if (this.#invalid > 0) {
      t.modified('invalid_utf8', this.#invalid);
      this.#invalid = 0;
    }
    if (this.#truncated > 0) {
      t.modified('truncated', this.#truncated);
      this.#truncated = 0;
    }
    if (this.#fields.repaired > 0) {
      t.modified('invalid_header', this.#fields.repaired);
      this.#fields.repaired = 0;
    }
    const events = this.#events;
    if (events.length === 0) return 'ok';
    this.#endRun();
    t.senders.hosts(events, this.#receivedAt);
    const bytes = this.#bytes;
    this.#events = [];
    this.#bytes = 0;
    this.#runStart = 0;
    this.#runBytes = 0;
    return this.#inlet.send(events, bytes);
  }

  /** Tells who sent the events built since the run's start. */
  #endRun(): void {
    const n = this.#events.length - this.#runStart;
    if (n > 0) this.#t.senders.from(this.#runFrom, n, this.#bytes - this.#runBytes, this.#receivedAt);
    this.#runStart = this.#events.length;
    this.#runBytes = this.#bytes;
  }

  /** Resolves when every queue that asked this source to slow down has room again. */
  writable(): Promise<void> {
    return this.#inlet.writable();
  }
}

/** "::ffff:10.0.0.1" -> "10.0.0.1" (an IPv4-mapped IPv6 address, as Node writes it, is the IPv4 one). */
export function senderAddress(addr: string | undefined): string {
  if (!addr) return '';
  return addr.startsWith('::ffff:') && isIPv4(addr.slice(7)) ? addr.slice(7) : addr;
}

/** Is `buf` a view of `chunk`'s bytes (the read itself, or part of it)? */
function inChunk(buf: Buffer, chunk: Buffer | undefined): boolean {
  if (buf === chunk) return true;
  return chunk !== undefined && buf.buffer === chunk.buffer && buf.byteOffset >= chunk.byteOffset && buf.byteOffset + buf.length <= chunk.byteOffset + chunk.length;
}

/** A UTF-8 continuation byte (10xxxxxx); false past the end of the buffer. */
function isContinuation(b: number | undefined): boolean {
  return b !== undefined && (b & 0xc0) === 0x80;
}
