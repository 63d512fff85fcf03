/** Case, `_` and `-` aside: `max_concurrency` and `MaxConcurrency` are spellings of `maxConcurrency`. */
export const folded = (key: string) => key.toLowerCase().replace(/[_-]/g, "");

/** Edits (insert, delete, replace, swap two neighbours) from `a` to `b`, to name the option a typo meant. */
function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      // `pre` for `per`, `retires` for `retries`: two letters swapped count as one typo.
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j]!, before[j - 2]! + 1);
    }
    before = previous;
    previous = row;
  }
  return previous[b.length]!;
}

/** The known option `key` was probably meant as: same letters in another spelling, or a typo of at most two letters. */
export function meantOption(key: string, known: readonly string[]): string | undefined {
  const spelled = known.find((k) => folded(k) === folded(key));
  if (spelled) return spelled;
  // `retrys` is two edits from `retry_on` as from `retries`: read as the plural it tries to spell, it is none from the one.
  const plural = folded(key).replace(/([^aeiou])ys$/, "$1ies");
  const distances = known.map((k) => [k, Math.min(editDistance(folded(k), folded(key)), editDistance(folded(k), plural))] as const);
  const near = distances.filter(([k, d]) => d <= Math.max(1, Math.min(2, Math.floor(folded(k).length / 4))));
  if (near.length) return near.length === 1 ? near[0]![0] : undefined;
  // Two edits off a short option (`timaut` for `timeout`) are past the share above, yet a word of six
  // or more letters keeps most of itself: the option is named when no other is as close. In a shorter
  // word two edits are most of it (`tries`), so they name nothing.
  const two = folded(key).length >= 6 ? distances.filter(([, d]) => d === 2) : [];
  return two.length === 1 ? two[0]![0] : undefined;
}

/** What to write instead of an unknown `key`: the one meant, or every `noun` there is when none is that close. */
export function insteadOf(key: string, known: readonly string[], noun: string): string {
  const meant = meantOption(key, known);
  return meant ? `did you mean ${meant}?` : `the ${noun} are ${known.join(", ")}`;
}
