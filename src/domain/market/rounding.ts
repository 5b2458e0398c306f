/**
 * Rounding of every published number, in one place: money in USD to cents, percentages to
 * 2 decimals, days to 1 decimal, shares to 4 decimals; always half away from zero, as
 * PostgreSQL's round(numeric) does. Quantities are kept as whole units (cents, milliseconds)
 * so that a half is a half: `numerator / denominator` is then exact whenever it is k + 0.5.
 */

/** numerator / denominator rounded half away from zero to a whole number. */
export function divideRounded(numerator: number, denominator: number): number {
  const quotient = numerator / denominator
  return Math.sign(quotient) * Math.round(Math.abs(quotient))
}

/** Whole cents of an amount, rounded half away from zero. */
export const cents = (amount: number): number => divideRounded(amount * 100, 1)

/**
 * Shares of `counts` in their total, to `decimals` places, summing to exactly 1 (largest
 * remainder: units lost to rounding go to the largest remainders, ties to the earlier entry).
 * All zeros when the total is zero.
 */
export function sharesSummingToOne(counts: readonly number[], decimals = 4): number[] {
  const total = counts.reduce((a, b) => a + b, 0)
  if (total === 0) return counts.map(() => 0)
  const units = 10 ** decimals
  const floors = counts.map((n) => Math.floor((n * units) / total))
  const remainders = counts.map((n, i) => n * units - floors[i]! * total)
  let missing = units - floors.reduce((a, b) => a + b, 0)
  const order = counts.map((_, i) => i).sort((a, b) => remainders[b]! - remainders[a]! || a - b)
  for (const i of order) {
    if (missing === 0) break
    floors[i]! += 1
    missing -= 1
  }
  return floors.map((u) => u / units)
}
