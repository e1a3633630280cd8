// RFC 5424 (§6) messages for the intake, framed by octet counting (RFC 5425 §4.3 / RFC 6587 §3.4.1):
//   LEN SP <PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID LOG [SEKOIA@53288 intake_key="KEY"]SD SP MSG
// A whole batch becomes one Buffer, written with one socket write.

import type { LogEvent } from '../core/event.ts';
import { bsdToRfc3339 } from '../sources/syslog-parse.ts';

export type TimestampMode = 'received' | 'source';

export const SEKOIA_SD_ID = 'SEKOIA@53288';

/** Escapes a PARAM-VALUE (RFC 5424 §6.3.3): `"`, `\` and `]` get a backslash. */
export function escapeSdValue(v: string): string {
  return v.replace(/["\\\]]/g, (c) => `\\${c}`);
}

export function intakeKeyElement(intakeKey: string): string {
  return `[${SEKOIA_SD_ID} intake_key="${escapeSdValue(intakeKey)}"]`;
}

export interface Formatted {
  /** The batch as consecutive octet-counted frames, ready to write. */
  readonly buf: Buffer;
}

export class Rfc5424Formatter {
  readonly #sd: string;
  readonly #mode: TimestampMode;
  #lastMs = -1;
  #lastIso = '';

  constructor(intakeKey: string, mode: TimestampMode) {
    this.#sd = intakeKeyElement(intakeKey);
    this.#mode = mode;
  }

  #received(ms: number): string {
    if (ms !== this.#lastMs) {
      this.#lastMs = ms;
      this.#lastIso = new Date(ms).toISOString();
    }
    return this.#lastIso;
  }

  #timestamp(e: LogEvent): string {
    if (this.#mode === 'source' && e.timestamp !== '') {
      if (e.format === 5424 && e.timestamp.charCodeAt(10) === 0x54 /* T */) return e.timestamp;
      if (e.format === 3164) {
        if (e.timestamp.charCodeAt(10) === 0x54) return e.timestamp; // ISO timestamp in a BSD line
        const ts = bsdToRfc3339(e.timestamp, e.receivedAt);
        if (ts) return ts;
      }
    }
    return this.#received(e.receivedAt);
  }

  /** One syslog message, without its length prefix. */
  message(e: LogEvent): string {
    const head = `<${e.pri}>1 ${this.#timestamp(e)} ${e.hostname || '-'} ${e.appName || '-'} ${e.procId || '-'} LOG ${this.#sd}${e.structuredData}`;
    return e.message === '' ? head : `${head} ${e.message}`;
  }

  /**
   * The batch as consecutive octet-counted frames, in one Buffer of exactly the right size: one
   * UTF-8 encoding per message, no large intermediate string.
   */
  frames(events: readonly LogEvent[]): Buffer {
    const messages: string[] = new Array<string>(events.length);
    const sizes: number[] = new Array<number>(events.length);
    let total = 0;
    for (let i = 0; i < events.length; i++) {
      const m = this.message(events[i] as LogEvent);
      const n = Buffer.byteLength(m, 'utf8');
      messages[i] = m;
      sizes[i] = n;
      total += digits(n) + 1 + n;
    }
    const buf = Buffer.allocUnsafe(total);
    let off = 0;
    for (let i = 0; i < messages.length; i++) {
      const n = sizes[i] as number;
      off += buf.write(`${n} `, off, 'latin1');
      off += buf.write(messages[i] as string, off, 'utf8');
    }
    return buf;
  }
}

function digits(n: number): number {
  return n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : n < 10_000 ? 4 : n < 100_000 ? 5 : n < 1_000_000 ? 6 : String(n).length;
}
