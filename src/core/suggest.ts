// "Did you mean": the closest of the allowed words to a misspelt one, by edit distance
// (Damerau-Levenshtein, optimal string alignment: a swap of two letters counts once), when it is
// close enough to be a slip rather than another word.

function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const row = d[i] as number[];
      const prev = d[i - 1] as number[];
      row[j] = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1);
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}

/**
 * The allowed word closest to `word` (case and `-`/`_` ignored), or undefined when none is within a
 * third of its length (at least 1, at most 3 edits): `max_event` -> `max_events`, `vaildate` -> `validate`.
 */
export function suggest(word: string, allowed: readonly string[]): string | undefined {
  const norm = (s: string): string => s.toLowerCase().replace(/[-_]/g, '');
  const w = norm(word);
  const limit = Math.min(3, Math.max(1, Math.floor(w.length / 3)));
  let best: string | undefined;
  let bestD = Number.POSITIVE_INFINITY;
  for (const a of allowed) {
    const dist = distance(w, norm(a));
    if (dist < bestD) [best, bestD] = [a, dist];
  }
  return bestD <= limit ? best : undefined;
}

/** ` (did you mean "x"?)`, or '' when nothing is close. */
export function didYouMean(word: string, allowed: readonly string[], quote = '"'): string {
  const s = suggest(word, allowed);
  return s === undefined ? '' : ` (did you mean ${quote}${s}${quote}?)`;
}
