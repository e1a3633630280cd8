// What the RELP sink holds: each batch until every one of its events is answered (Held, with a
// state per event), and each open session's unanswered transactions in the order written (Session),
// so that an answer finds its event and a lost session gives back exactly the unanswered ones.

import type { LogEvent } from '../../core/event.ts';
import { RELP_TXNR_MAX } from '../../relp/frame.ts';
import type { OpenSession } from './session.ts';

export const TO_WRITE = 0;
export const WRITTEN = 1;
export const ACKED = 2;
export const REFUSED = 3;
/** Answered, and reported to the runner before the whole batch was (a stop at its deadline). */
export const REPORTED = 4;
/** Frames built per write: bounds the buffer of one write. */
export const MAX_RUN = 1024;

/** A batch the sink holds until each of its events is answered. */
export interface Held {
  readonly seq: number;
  readonly events: readonly LogEvent[];
  /** Each event's state: TO_WRITE, WRITTEN, ACKED, REFUSED or REPORTED. */
  readonly state: Uint8Array;
  /** Events before this are written or answered (TO_WRITE ones are at or after it). */
  cursor: number;
  answered: number;
  refused: number;
  /** Answered events already reported (a stop reports what was answered of a batch answered in part). */
  reported: number;
  /** The reason of the last refusal, for the log. */
  refusal: string;
  /** Resolves send() once every event is written (or the session is gone). */
  written: (() => void) | undefined;
  /** Some of its events went out on a session. */
  everWritten: boolean;
  /** Its events counted in the sink's unacknowledged: all, or those not reported before a hand-over. */
  counted: number;
}

/** One open session and its unanswered transactions, oldest first. */
export class Session {
  readonly open: OpenSession;
  txnr: number;
  /**
   * Unanswered transactions: their numbers, and which held event each carries. An answered one
   * keeps its place until the next compaction with -1 and no batch: a batch answered must not stay
   * reachable through thousands of answered places, or its events outlive the young generation.
   */
  readonly txnrs: number[] = [];
  readonly held: (Held | undefined)[] = [];
  readonly index: number[] = [];
  head = 0;
  lastAnswerAt = performance.now();
  done = false;
  closing = false;
  /** A write of what the window lets out is due at the end of this turn of the event loop. */
  pumpSoon = false;
  /** Resolves once the server answered our "close" (or the session ended). */
  closed: (() => void) | undefined;
  closeTxnr = -1;
  /** When the close was written (a close not answered within ackTimeoutMs ends the session). */
  closeSentAt = 0;

  constructor(open: OpenSession) {
    this.open = open;
    this.txnr = open.firstTxnr;
  }

  get unanswered(): number {
    return this.txnrs.length - this.head;
  }

  push(txnr: number, h: Held, i: number): void {
    this.txnrs.push(txnr);
    this.held.push(h);
    this.index.push(i);
  }

  /** Transaction k is answered: its place lets go of its batch. */
  answered(k: number): void {
    this.txnrs[k] = -1;
    this.held[k] = undefined;
  }

  /** Removes answered transactions from the front (compacting now and then). */
  compact(): void {
    if (this.head > 4096 && this.head * 2 > this.txnrs.length) {
      this.txnrs.splice(0, this.head);
      this.held.splice(0, this.head);
      this.index.splice(0, this.head);
      this.head = 0;
    }
  }
}

/** The transaction number of the i-th frame of a run starting at `first` (numbers latch at 999,999,999). */
export function txnrAt(first: number, i: number): number {
  const t = first + i;
  return t > RELP_TXNR_MAX ? t - RELP_TXNR_MAX : t;
}
