import { cents, divideRounded, sharesSummingToOne } from './rounding.ts'
import { SOURCES, type Source } from './vocabulary.ts'

/**
 * The arithmetic of published zone statistics, pure. Medians themselves are exact and come from
 * SQL (the mean of the two middle values, in decimal); these functions apply the publication rules.
 */

/** Fewer listings than this make a median `null`: one or two listings are not a market. */
export const MIN_FOR_MEDIAN = 3
const DAY_MS = 86_400_000

/** A median as published: null under MIN_FOR_MEDIAN listings. */
export const publishedMedian = (median: number | null, n: number): number | null =>
  n >= MIN_FOR_MEDIAN && median !== null ? median : null

/**
 * Median days on market at `nowMs`, to 1 decimal, from the median listing time: the median of
 * (now − listed_at) is now − median(listed_at), so it is exact at any request time without a scan.
 * A median in the future of `nowMs` counts as 0 days.
 */
export function medianDaysOnMarket(nowMs: number, medianListedMs: number | null, n: number): number | null {
  if (n < MIN_FOR_MEDIAN || medianListedMs === null) return null
  return Math.max(0, divideRounded(nowMs - medianListedMs, DAY_MS / 10) / 10)
}

/**
 * The first instant after `nowMs` at which `medianDaysOnMarket` may give another value (Infinity
 * when it is null): a tenth of a day is rounded half up, so the value steps when now − median
 * listing time reaches k + ½ tenths; until then an answer holding it can be served as it is.
 */
export function medianDaysOnMarketChangesAt(nowMs: number, medianListedMs: number | null, n: number): number {
  if (n < MIN_FOR_MEDIAN || medianListedMs === null) return Number.POSITIVE_INFINITY
  const tenth = DAY_MS / 10
  const tenths = nowMs >= medianListedMs ? Math.round((nowMs - medianListedMs) / tenth) : 0
  return medianListedMs + tenths * tenth + tenth / 2
}

/** Whole days a listing has been on the market at `nowMs` (0 for a listing dated in the future). */
export const daysOnMarket = (nowMs: number, listedMs: number): number => Math.max(0, Math.floor((nowMs - listedMs) / DAY_MS))

/** The first instant after `nowMs` at which `daysOnMarket` gives another value: the next whole day since listing. */
export const daysOnMarketChangesAt = (nowMs: number, listedMs: number): number =>
  listedMs + (daysOnMarket(nowMs, listedMs) + 1) * DAY_MS

/** Change from `then` to `now` in percent, 2 decimals, computed from the published (rounded) medians. */
export function changePct(now: number | null, then: number | null): number | null {
  if (now === null || then === null || then === 0) return null
  const [nowCents, thenCents] = [cents(now), cents(then)]
  return divideRounded((nowCents - thenCents) * 10_000, thenCents) / 100
}

export type SourceShare = { source: Source; n: number; share: number }

/** Every source with its active listings and share; shares sum to exactly 1 (all 0 without listings). */
export function sourceMix(counts: Readonly<Record<Source, number>>): SourceShare[] {
  const shares = sharesSummingToOne(SOURCES.map((s) => counts[s]))
  return SOURCES.map((source, i) => ({ source, n: counts[source], share: shares[i]! }))
}
