// Batch buffers carved from reused slabs. A syslog batch buffer lives until the intake has
// confirmed it (the resend window: tens of MB under load). Allocating a fresh one per batch made V8
// hold tens of MB of dead off-heap memory between major collections; rounding each to a
// power-of-two size class wasted up to half of each (a 270 KB batch took 512 KiB). Batches are
// cut from 1 MiB slabs one after another instead, and a slab is reused once every batch cut from
// it has been given back, so the window costs what it holds plus at most a slab. A slab let go is
// released at once (its ArrayBuffer detached), not when a garbage collection finds it: a relay at
// rest after a burst collects rarely, and kept tens of MB of let-go slabs for a minute or more.

import { freeNow } from '../../core/free-now.ts';

/**
 * Half of it holds a default batch (1,000 events of 250 bytes). The window costs what it holds and
 * the slabs at its two ends, partly used: measured on the TCP flood with an 8 MiB window, 1 MiB
 * slabs peaked 3-4 MiB lower than 2 MiB ones (3 runs each).
 */
export const SLAB_BYTES = 1024 * 1024;

interface Slab {
  readonly buf: Buffer;
  /** Bytes cut from it so far. */
  used: number;
  /** Batches cut from it and not given back. */
  live: number;
}

export class BufferPool {
  /** Slabs with batches not given back, or the current one, by their memory. */
  readonly #slabs = new Map<ArrayBufferLike, Slab>();
  readonly #free: Slab[] = [];
  readonly #maxFree: number;
  #current: Slab | undefined;

  /** `maxFreeBytes`: slabs kept for reuse when nothing is cut from them. */
  constructor(maxFreeBytes: number) {
    this.#maxFree = Math.max(1, Math.floor(maxFreeBytes / SLAB_BYTES));
  }

  take(size: number): Buffer {
    // A batch larger than half a slab gets a buffer of its own (not pooled).
    if (size > SLAB_BYTES / 2) return Buffer.allocUnsafeSlow(size);
    let s = this.#current;
    if (s && s.used + size > SLAB_BYTES) {
      if (s.live === 0) s.used = 0;
      else s = undefined;
    }
    if (!s) {
      s = this.#free.pop() ?? { buf: Buffer.allocUnsafeSlow(SLAB_BYTES), used: 0, live: 0 };
      this.#slabs.set(s.buf.buffer, s);
      this.#current = s;
    }
    const out = s.buf.subarray(s.used, s.used + size);
    s.used += size;
    s.live++;
    return out;
  }

  /** Drops the free slabs but one (after a burst, when nothing has been written for a while). */
  trim(): void {
    for (const s of this.#free.splice(1)) release(s);
  }

  /** Only for a buffer from take() that nothing refers to any more (the kernel has taken it). */
  give(buf: Buffer): void {
    const s = this.#slabs.get(buf.buffer);
    if (!s) return;
    s.live--;
    if (s.live > 0 || s === this.#current) return;
    this.#slabs.delete(s.buf.buffer);
    if (this.#free.length < this.#maxFree) {
      s.used = 0;
      this.#free.push(s);
    } else {
      release(s);
    }
  }
}

/** Frees a slab's memory now. Only for one nothing was cut from that is not given back (live 0). */
function release(s: Slab): void {
  freeNow(s.buf);
}
