// The byte copies of one batch's frames (each event's MSG, its source's SD, a header shared with
// the events before it), gathered while the frames are laid out and done in one call into the
// native addon (native/copy-runs.c): a memcpy each, where Buffer#copy costs a call into C++ and
// its checks per copy (~90 ns for 200 bytes: 7% of the relay's CPU on TCP -> TLS in a profile).
// Where the addon is not loaded, copyPlan() is undefined and the formatter copies each run itself.
// The HTTP output's JSON body also measures its messages' escapes (jsonExtras) and writes those
// that need some escaped (run(out, true)) with it.

import { nativeAddon } from '../platform/native-addon.ts';

/** How many of the last sources named a run's source is looked for among. */
const LOOKBACK = 4;

type CopyRuns = (out: Uint8Array, sources: Uint8Array[], plan: Int32Array, n: number, json?: boolean) => void;
type JsonExtras = (sources: Uint8Array[], plan: Int32Array, n: number, extras: Int32Array) => void;

export class CopyPlan {
  readonly #copyRuns: CopyRuns;
  readonly #jsonExtras: JsonExtras | undefined;
  readonly #sources: Uint8Array[] = [];
  #plan = new Int32Array(4 * 1024);
  #n = 0;

  constructor(copyRuns: CopyRuns, jsonExtras?: JsonExtras) {
    this.#copyRuns = copyRuns;
    this.#jsonExtras = jsonExtras;
  }

  /** Whether jsonExtras() and run(out, true) are there (an addon built before them has neither). */
  get measuresJson(): boolean {
    return this.#jsonExtras !== undefined;
  }

  /** out[dst, dst + end - start) will be src[start, end). */
  add(src: Uint8Array, start: number, end: number, dst: number): void {
    const sources = this.#sources;
    // The events of one read share its buffer, and a run of them a header: each source is named
    // once while it is among the last few named (runs alternate between a header and a read).
    let s = sources.length - 1;
    const stop = s - LOOKBACK;
    while (s >= 0 && s > stop && sources[s] !== src) s--;
    if (s < 0 || s === stop) {
      s = sources.length;
      sources.push(src);
    }
    let i = 4 * this.#n;
    if (i === this.#plan.length) {
      const grown = new Int32Array(this.#plan.length * 2);
      grown.set(this.#plan);
      this.#plan = grown;
    }
    const plan = this.#plan;
    plan[i++] = s;
    plan[i++] = start;
    plan[i++] = end;
    plan[i] = dst;
    this.#n++;
  }

  /**
   * Does every copy added into `out`, and starts over. `json`: each run written escaped for a JSON
   * string, as JSON.stringify writes it (taking its jsonExtras() more bytes from its destination).
   */
  run(out: Uint8Array, json = false): void {
    try {
      if (this.#n > 0) this.#copyRuns(out, this.#sources, this.#plan, this.#n, json);
    } finally {
      this.clear();
    }
  }

  /**
   * extras[i] = the bytes escaping adds to the i-th run added, as a JSON string (destinations
   * are not read), and starts over.
   */
  jsonExtras(extras: Int32Array): void {
    try {
      if (this.#n > 0) (this.#jsonExtras as JsonExtras)(this.#sources, this.#plan, this.#n, extras);
    } finally {
      this.clear();
    }
  }

  /** Forgets what was added (a batch whose layout failed half way must not leave runs for the next). */
  clear(): void {
    this.#sources.length = 0;
    this.#n = 0;
    // A batch of very many events grew it: not kept for good.
    if (this.#plan.length > 4 * 16_384) this.#plan = new Int32Array(4 * 1024);
  }
}

/** A plan for the formatter, or undefined where the addon is not loaded. */
export function copyPlan(): CopyPlan | undefined {
  const exports = nativeAddon().exports;
  const copyRuns = exports?.copyRuns;
  const jsonExtras = exports?.jsonExtras;
  return typeof copyRuns === 'function' ? new CopyPlan(copyRuns as CopyRuns, typeof jsonExtras === 'function' ? (jsonExtras as JsonExtras) : undefined) : undefined;
}
