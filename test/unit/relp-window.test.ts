// The RELP sink's window (src/outputs/relp/window.ts): an answered transaction's place lets go of
// its batch at once. Places are compacted only past 4,096 answered, and a batch they still named
// stayed reachable (with its 1,000 events) for thousands of later answers: long enough to be
// promoted to V8's old generation, 110 MB per million events on the benchmark's RELP path.
import { expect, it } from 'vitest';
import type { OpenSession } from '../../src/outputs/relp/session.ts';
import { Session, type Held } from '../../src/outputs/relp/window.ts';

const held = (n: number): Held => ({ seq: 0, events: [], state: new Uint8Array(n), cursor: 0, answered: 0, refused: 0, reported: 0, refusal: '', written: undefined, everWritten: false, counted: n });

it('an answered transaction names its batch no longer, before the places are compacted', () => {
  const s = new Session({ firstTxnr: 1 } as OpenSession);
  const a = held(3000);
  const b = held(3000);
  for (let i = 0; i < 3000; i++) s.push(1 + i, a, i);
  for (let i = 0; i < 3000; i++) s.push(3001 + i, b, i);
  // Every transaction of a answered, in order, as the sink does (the head passes answered places).
  for (let k = 0; k < 3000; k++) {
    s.answered(k);
    while (s.head < s.txnrs.length && s.txnrs[s.head] === -1) s.head++;
    s.compact();
  }
  expect(s.head).toBe(3000); // under the compaction's 4,096: the places are still there
  expect(s.held.includes(a)).toBe(false);
  expect(s.held.filter((h) => h === b)).toHaveLength(3000);
  expect(s.unanswered).toBe(3000);
});
