// Reading a configuration file with a bound, apart from the YAML parser so that the daemon's
// process (which hands the bytes to its loader child: load-child.ts) need not load it.

import { closeSync, openSync, readSync } from 'node:fs';

/** A configuration file is far smaller; the parser's memory grows with its input. */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

/** Reads at most `max` bytes; more is an error with code EFBIG (so /dev/zero cannot hang a load). */
export function readBounded(path: string, max: number): Buffer {
  const fd = openSync(path, 'r');
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(64 * 1024);
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) return Buffer.concat(chunks, total);
      total += n;
      if (total > max) throw Object.assign(new Error(`larger than ${max} bytes`), { code: 'EFBIG' });
      chunks.push(chunk.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
}
