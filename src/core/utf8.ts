// UTF-8 at byte level: where a cut may fall without splitting a character.

/** `end`, moved back so that [start, end) does not finish inside a multi-byte UTF-8 sequence. */
export function utf8Boundary(buf: Uint8Array, start: number, end: number): number {
  let k = end - 1;
  let cont = 0;
  while (k > start && ((buf[k] as number) & 0xc0) === 0x80 && cont < 3) {
    k--;
    cont++;
  }
  const lead = buf[k] as number;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return end - k < need ? k : end;
}
