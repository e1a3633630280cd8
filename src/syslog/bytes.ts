// Reading a frame's bytes in place: bounded to the frame, since a frame is a range of a buffer
// shared with its neighbours.

/** buf[i] when i is inside the frame (before `end`), else -1. */
export function byteAt(buf: Uint8Array, i: number, end: number): number {
  return i < end ? (buf[i] as number) : -1;
}

/** Index of the first `byte` in buf[from, end), or -1. */
export function indexOfByte(buf: Uint8Array, byte: number, from: number, end: number): number {
  for (let i = from; i < end; i++) if (buf[i] === byte) return i;
  return -1;
}

export function isDigit(ch: number): boolean {
  return ch >= 0x30 && ch <= 0x39;
}
