/**
 * Edit distance with adjacent transpositions (optimal string alignment, the restricted
 * Damerau-Levenshtein): one per inserted, deleted, replaced or swapped neighbouring character, so
 * `craete` → `create` and `tire` → `tier` are 1 each.
 */
export function editDistance(a: string, b: string): number {
  // rows[i][j]: distance between the first i characters of a and the first j of b.
  const rows = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, rows[i - 2]![j - 2]! + 1)
      rows[i]![j] = best
    }
  }
  return rows[a.length]![b.length]!
}

/**
 * The candidate closest to what was typed, if it is close enough to be a typo: at most one edit per
 * four characters of the candidate (at least one, at most three). Ties go to the first candidate.
 */
export function closest(typed: string, candidates: Iterable<string>): string | undefined {
  let found: string | undefined
  let best = Number.POSITIVE_INFINITY
  for (const candidate of candidates) {
    const distance = editDistance(typed, candidate)
    const allowed = Math.min(3, Math.max(1, Math.floor(candidate.length / 4)))
    if (distance <= allowed && distance < best) {
      found = candidate
      best = distance
    }
  }
  return found
}
