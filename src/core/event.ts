// The event that flows from inputs through the queue to outputs. One flat object per event, built
// once by the input. The frame's bytes are never decoded on the way through: the source's
// STRUCTURED-DATA and MSG stay byte ranges of the buffer the input read (shared by the events of
// one read, exactly sized by Node, never modified), and are copied as bytes into the output. Only
// the header fields, which RFC 5424 requires to be printable ASCII, become strings.

export interface LogEvent {
  /** The bytes holding the frame. Shared, read-only. */
  readonly buf: Buffer;
  /** The frame is buf[start, end). */
  readonly start: number;
  readonly end: number;
  /** The source's SD-ELEMENTs, verbatim: buf[sdStart, sdEnd), empty when none or NILVALUE. */
  readonly sdStart: number;
  readonly sdEnd: number;
  /** MSG: buf[msgStart, end); for a line without header, the whole line. */
  readonly msgStart: number;
  /** The source's TIMESTAMP as sent: buf[tsStart, tsEnd), empty when none. */
  readonly tsStart: number;
  readonly tsEnd: number;
  /** Reception time, ms since the epoch. */
  readonly receivedAt: number;
  /** Address of the sender (IP), '' for local sources. */
  readonly sender: string;
  /** PRI (facility * 8 + severity); the input's default for lines without one. */
  readonly pri: number;
  /** 5424 = RFC 5424 header, 3164 = BSD header, 0 = none. */
  readonly format: 0 | 3164 | 5424;
  /** Header fields, printable ASCII; '' when absent. */
  readonly hostname: string;
  readonly appName: string;
  readonly procId: string;
  readonly msgId: string;
}

/** UTF-8 bytes of the frame as received: queue accounting and size limits. */
export function byteSize(e: LogEvent): number {
  return e.end - e.start;
}

export function messageText(e: LogEvent): string {
  return e.buf.toString('utf8', e.msgStart, e.end);
}

export function structuredDataText(e: LogEvent): string {
  return e.buf.toString('utf8', e.sdStart, e.sdEnd);
}

export function timestampText(e: LogEvent): string {
  return e.buf.toString('latin1', e.tsStart, e.tsEnd);
}

/** A run of events handed through the queue and to a sink as one unit. */
export interface Batch {
  readonly events: readonly LogEvent[];
  /** Sum of the events' byte sizes. */
  readonly bytes: number;
  /**
   * Sequence number of the first event: the queue numbers the events it takes in, in order, and a
   * batch always holds consecutive ones, [seq, seq + events.length).
   */
  readonly seq: number;
}
