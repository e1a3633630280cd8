// Which of a queue's events are settled: delivered (acknowledged by the output) or dropped with a
// counted reason. Events are numbered in the order the queue takes them in; settlements may come
// out of order (HTTP sends in parallel), so the tracker keeps the settled runs above the low
// watermark until the gap below them closes. Inputs that must not move past undelivered data (the
// file input's checkpoints) compare their own positions with the watermark.

export class SettledTracker {
  /** Every event numbered below this is settled. */
  #watermark: number;
  /** Settled runs above the watermark: start -> end (exclusive). */
  readonly #runs = new Map<number, number>();

  /** `start`: the number below which everything is settled already (a resumed disk queue). */
  constructor(start = 0) {
    this.#watermark = start;
  }

  get watermark(): number {
    return this.#watermark;
  }

  settle(seq: number, count: number): void {
    if (count <= 0) return;
    const end = seq + count;
    if (end <= this.#watermark) return; // already settled (a duplicate acknowledgement)
    if (seq > this.#watermark) {
      // Join with a run that starts where this one ends, so runs stay few.
      const next = this.#runs.get(end);
      if (next !== undefined) this.#runs.delete(end);
      this.#runs.set(seq, next ?? end);
      return;
    }
    let w = end;
    for (;;) {
      const next = this.#runs.get(w);
      if (next === undefined) break;
      this.#runs.delete(w);
      w = next;
    }
    this.#watermark = w;
  }
}
