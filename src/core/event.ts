// The event that flows from inputs through the queue to outputs. One flat object per event, built
// once by the input; nothing is computed twice. Absent syslog fields are '' (and pri is -1).

export interface LogEvent {
  /** The payload: MSG of a syslog line, or the whole line when it had no header. */
  readonly message: string;
  /** UTF-8 bytes of the frame as received (header included): queue accounting and size limits. */
  readonly byteSize: number;
  /** Reception time, ms since the epoch. */
  readonly receivedAt: number;
  /** Address of the sender (IP), '' for local sources. */
  readonly sender: string;
  /** PRI (facility * 8 + severity), -1 when the line had no header. */
  readonly pri: number;
  /** 5424 = RFC 5424 header, 3164 = BSD header, 0 = none. */
  readonly format: 0 | 3164 | 5424;
  /** Source timestamp as written by the sender ('' if none). */
  readonly timestamp: string;
  readonly hostname: string;
  readonly appName: string;
  readonly procId: string;
  readonly msgId: string;
  /** The source's STRUCTURED-DATA elements, verbatim ('' when none or NILVALUE). */
  readonly structuredData: string;
}

/** A run of events handed through the queue and to a sink as one unit. */
export interface Batch {
  readonly events: readonly LogEvent[];
  /** Sum of the events' byteSize. */
  readonly bytes: number;
}

export function batchOf(events: readonly LogEvent[]): Batch {
  let bytes = 0;
  for (const e of events) bytes += e.byteSize;
  return { events, bytes };
}
