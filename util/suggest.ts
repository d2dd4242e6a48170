// "Did you mean": the closest of a few known words to a misspelled one (kinds, field names).

/**
 * Optimal string alignment distance (Levenshtein plus adjacent transpositions, so `Deploymnet` is 1 from
 * `Deployment`), case-insensitive; gives up past `max` and answers max + 1.
 */
export function editDistance(a: string, b: string, max = Infinity): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  if (Math.abs(s.length - t.length) > max) return max + 1;
  let before = new Array<number>(t.length + 1).fill(0);
  let previous = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const row = new Array<number>(t.length + 1);
    row[0] = i;
    let best = row[0];
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1])
        row[j] = Math.min(row[j], before[j - 2] + 1);
      best = Math.min(best, row[j]);
    }
    if (best > max) return max + 1;
    before = previous;
    previous = row;
  }
  return previous[t.length];
}

/** How far a word of this length may be from a suggestion: 1 up to 4 characters, 2 up to 8, then 3. */
function tolerance(length: number): number {
  return length <= 4 ? 1 : length <= 8 ? 2 : 3;
}

/**
 * The candidate closest to `word` (case-insensitive; a difference in case alone is closest of all), or undefined
 * when none is near enough to be a likely misspelling, or `word` is itself a candidate. Ties: the first in order.
 */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = tolerance(word.length) + 1;
  for (const c of candidates) {
    if (c === word) return undefined;
    const d = c.toLowerCase() === word.toLowerCase() ? 0 : editDistance(word, c, bestDistance - 1);
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}
