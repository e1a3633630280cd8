// Batch buffers for reuse, by power-of-two size. A syslog batch buffer lives until the intake has
// confirmed it; allocating a fresh one per batch made V8 hold tens of MB of dead off-heap memory
// between major collections.

export class BufferPool {
  readonly #free = new Map<number, Buffer[]>();
  #bytes = 0;
  readonly #maxBytes: number;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  take(size: number): Buffer {
    const cls = sizeClass(size);
    const b = this.#free.get(cls)?.pop();
    if (b) this.#bytes -= b.length;
    return (b ?? Buffer.allocUnsafeSlow(cls)).subarray(0, size);
  }

  /** Only for a buffer nothing refers to any more (the socket has handed it to the kernel). */
  give(buf: Buffer): void {
    const whole = Buffer.from(buf.buffer, buf.byteOffset, buf.buffer.byteLength - buf.byteOffset);
    if (whole.length !== sizeClass(whole.length) || this.#bytes + whole.length > this.#maxBytes) return;
    let list = this.#free.get(whole.length);
    if (!list) this.#free.set(whole.length, (list = []));
    list.push(whole);
    this.#bytes += whole.length;
  }
}

function sizeClass(n: number): number {
  return Math.max(64 * 1024, 2 ** Math.ceil(Math.log2(n)));
}
