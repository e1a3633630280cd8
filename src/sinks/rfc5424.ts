// RFC 5424 (§6) messages for the intake, framed by octet counting (RFC 5425 §4.3 / RFC 6587 §3.4.1):
//   LEN SP <PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID LOG [SEKOIA@53288 intake_key="KEY"]SD SP MSG
// A whole batch becomes one string, written with one socket write.

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
  readonly text: string;
  /** UTF-8 bytes of `text`. */
  readonly bytes: number;
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

  /** The batch as consecutive octet-counted frames. */
  frames(events: readonly LogEvent[]): Formatted {
    let text = '';
    let bytes = 0;
    for (const e of events) {
      const m = this.message(e);
      const n = Buffer.byteLength(m, 'utf8');
      const prefix = `${n} `;
      text += prefix + m;
      bytes += prefix.length + n;
    }
    return { text, bytes };
  }
}
