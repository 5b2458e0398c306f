import type { ComparableListing } from './comparable.ts'
import { type Decimal, decimalOf, divideHalfAwayFromZero } from './decimal.ts'
import type { Confidence, EstimateFigures, EstimateResponse } from './estimate-figures.ts'
import { middleOf } from './zone-statistics.ts'

/**
 * An estimate of one property's price or monthly rent from the public listings most like it
 * (docs/statistics.md, "Estimates"): which listings are kept (widening levels), their order
 * (distance), and the figures over the ones used. Pure: the caller hands over the candidates, the
 * public listings of the subject's country, zone, operation and property type at the instant asked.
 */

// ---- The rules ----------------------------------------------------------------------------------

export const ESTIMATE_METHOD_VERSION = 1
/** No estimate rests on fewer listings than this, at any level. */
export const MIN_COMPARABLES = 5
export const DEFAULT_COMPARABLES = 10
export const MAX_COMPARABLES = 50
/** The range: the comparables' 10th and 90th percentiles (nearest rank), in tenths. */
const RANGE_TENTHS = [1, 9] as const
/** The range's percentiles, for the words that describe it (briefings). */
export const RANGE_PERCENTILES = RANGE_TENTHS.map((tenths) => tenths * 10) as [number, number]
/** `high` confidence needs at least this many comparables used. */
const HIGH_CONFIDENCE_COMPARABLES = 8

/** A widening level: same bedrooms or not, and the area band in quarters of the subject's area (null: any area). */
type Level = { level: 1 | 2 | 3 | 4; sameBedrooms: boolean; quarters: 1 | 2 | null }
const LEVELS: readonly Level[] = [
  { level: 1, sameBedrooms: true, quarters: 1 },
  { level: 2, sameBedrooms: false, quarters: 1 },
  { level: 3, sameBedrooms: false, quarters: 2 },
  { level: 4, sameBedrooms: false, quarters: null },
]

/** Distance weights per bedroom and per bathroom of difference (the area counts as |ln(a / A)|). */
const BEDROOM_WEIGHT = 0.25
const BATHROOM_WEIGHT = 0.1

/**
 * Published and ordered by: the distance rounded to 6 decimals; the similarity shown to 4. The
 * double's exact value is rounded, half up (`toFixed`): `Math.round(d × 10⁶)` would round the
 * product, which can land on a half the value itself is below.
 */
const roundedTo = (value: number, places: number): number => Number(value.toFixed(places))

// ---- The answer ----------------------------------------------------------------------------------

export type Subject = { areaM2: number; bedrooms?: number; bathrooms?: number; comparables: number }
/** An estimate and what it rests on: the figures of GET /estimate's answer (estimate-figures.ts) that the method gives. */
export type Estimate = Pick<EstimateResponse, 'estimate' | 'reason' | 'comparables' | 'method'>

/**
 * The candidates of an estimate, in order of area (ascending), read by position: the inventory hands
 * a view of its columns (no copy), `candidatesOf` one of a list. Sorted by area, each area band is a
 * range found by binary search.
 */
export interface Candidates {
  readonly count: number
  areaM2(i: number): number
  bedrooms(i: number): number
  bathrooms(i: number): number
  cents(i: number): number
  id(i: number): string
  /** Negative when candidate i's listing id comes first (byte order), without building the ids. */
  compareIds(i: number, j: number): number
}

/** `listings` as candidates (sorted by area on a copy). */
export const candidatesOf = (listings: readonly ComparableListing[]): Candidates => sortedCandidates([...listings].sort(byArea))

export const byArea = (a: ComparableListing, b: ComparableListing): number => a.areaM2 - b.areaM2

/** `sorted` (by area) as candidates, but its `skipped`-th when given (a listing held out: bench:estimate). */
export function sortedCandidates(sorted: readonly ComparableListing[], skipped = sorted.length): Candidates {
  const at = (i: number) => sorted[i < skipped ? i : i + 1]!
  return {
    count: skipped < sorted.length ? sorted.length - 1 : sorted.length,
    areaM2: (i) => at(i).areaM2,
    bedrooms: (i) => at(i).bedrooms,
    bathrooms: (i) => at(i).bathrooms,
    cents: (i) => at(i).cents,
    id: (i) => at(i).id,
    compareIds: (i, j) => byteOrder(at(i).id, at(j).id),
  }
}

/** Byte order of two ids (ASCII): as SQL's `collate "C"` orders them. */
const byteOrder = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

export function estimateOf(candidates: Candidates, subject: Subject): Estimate {
  const area = decimalOf(subject.areaM2)
  for (const level of LEVELS) {
    if (level.sameBedrooms && subject.bedrooms === undefined) continue
    const [from, to] = level.quarters === null ? [0, candidates.count] : band(candidates, area, level.quarters)
    const sameBedrooms = level.sameBedrooms ? subject.bedrooms! : null
    const kept = sameBedrooms === null ? to - from : countBedrooms(candidates, from, to, sameBedrooms)
    if (kept < MIN_COMPARABLES) continue
    const used = closest(candidates, from, to, sameBedrooms, subject)
    const method = { version: ESTIMATE_METHOD_VERSION, level: level.level, candidates: candidates.count, kept, used: used.length, min_comparables: MIN_COMPARABLES }
    const { estimate, comparables } = figuresOf(used, area, level.level)
    return { estimate, reason: null, comparables, method }
  }
  return {
    estimate: null,
    reason: 'too_few_comparables',
    comparables: [],
    method: { version: ESTIMATE_METHOD_VERSION, level: null, candidates: candidates.count, kept: 0, used: 0, min_comparables: MIN_COMPARABLES },
  }
}

// ---- Widening and order --------------------------------------------------------------------------

/** Positions [from, to) of the candidates within `quarters` quarters of the subject's area: (4 − q)·A ≤ 4·a ≤ (4 + q)·A, exactly. */
function band(candidates: Candidates, area: Decimal, quarters: number): [number, number] {
  const from = firstWhere(candidates.count, (i) => atLeast(4, candidates.areaM2(i), 4 - quarters, area))
  const to = firstWhere(candidates.count, (i) => !atLeast(4 + quarters, area, 4, candidates.areaM2(i)))
  return [from, Math.max(from, to)]
}

/** The first position of [0, count) where `holds` (false before it, true from it on). */
function firstWhere(count: number, holds: (i: number) => boolean): number {
  let [lo, hi] = [0, count]
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (holds(mid)) hi = mid
    else lo = mid + 1
  }
  return lo
}

function countBedrooms(candidates: Candidates, from: number, to: number, bedrooms: number): number {
  let n = 0
  for (let i = from; i < to; i++) if (candidates.bedrooms(i) === bedrooms) n += 1
  return n
}

/**
 * Whether x·a ≥ y·b exactly (a, b areas; `b` or `a` given as its decimal). In doubles when they
 * are clearly apart; the exact decimals decide the few that are within rounding of each other.
 */
function atLeast(x: number, a: number | Decimal, y: number, b: number | Decimal): boolean {
  const [left, right] = [x * valueOf(a), y * valueOf(b)]
  if (Math.abs(left - right) > 1e-9 * Math.max(left, right)) return left > right
  const [da, db] = [typeof a === 'number' ? decimalOf(a) : a, typeof b === 'number' ? decimalOf(b) : b]
  const scale = Math.max(da.scale, db.scale)
  return BigInt(x) * da.digits * 10n ** BigInt(scale - da.scale) >= BigInt(y) * db.digits * 10n ** BigInt(scale - db.scale)
}
const valueOf = (value: number | Decimal) => (typeof value === 'number' ? value : Number(value.digits) / 10 ** value.scale)

/** A comparable as used: its figures and its distance from the subject. */
type Ranked = ComparableListing & { distance: number }

/**
 * The `subject.comparables` candidates of [from, to) (only those with `bedrooms`, when given) closest
 * to the subject: by distance (rounded to 6 decimals), then listing id. Candidates are read outward
 * from the subject's area, the nearer area first: a distance is at least its area term, so the walk
 * stops once the next area term exceeds the farthest distance kept (a handful of candidates read,
 * whatever the zone's size). Ids are read only to break a tie.
 */
function closest(candidates: Candidates, from: number, to: number, bedrooms: number | null, subject: Subject): Ranked[] {
  const best: { i: number; distance: number }[] = []
  const before = (i: number, distance: number, other: { i: number; distance: number }) =>
    distance < other.distance || (distance === other.distance && candidates.compareIds(i, other.i) < 0)
  // The walk compares unrounded area terms; rounding moves a distance by at most half a millionth.
  const areaTerm = (i: number) => Math.abs(Math.log(candidates.areaM2(i) / subject.areaM2))
  const start = from + firstWhere(to - from, (k) => candidates.areaM2(from + k) >= subject.areaM2)
  let [left, right] = [start - 1, start]
  let [leftTerm, rightTerm] = [left >= from ? areaTerm(left) : Infinity, right < to ? areaTerm(right) : Infinity]
  while (left >= from || right < to) {
    const takeLeft = leftTerm <= rightTerm
    const i = takeLeft ? left : right
    const term = takeLeft ? leftTerm : rightTerm
    if (takeLeft) leftTerm = --left >= from ? areaTerm(left) : Infinity
    else rightTerm = ++right < to ? areaTerm(right) : Infinity
    const full = best.length === subject.comparables
    if (full && term > best[best.length - 1]!.distance + 1e-6) break
    if (bedrooms !== null && candidates.bedrooms(i) !== bedrooms) continue
    const distance = distanceOf(candidates, i, subject)
    if (full && !before(i, distance, best[best.length - 1]!)) continue
    let at = best.length
    while (at > 0 && before(i, distance, best[at - 1]!)) at -= 1
    best.splice(at, 0, { i, distance })
    if (best.length > subject.comparables) best.pop()
  }
  return best.map(({ i, distance }) => ({
    id: candidates.id(i),
    areaM2: candidates.areaM2(i),
    bedrooms: candidates.bedrooms(i),
    bathrooms: candidates.bathrooms(i),
    cents: candidates.cents(i),
    distance,
  }))
}

function distanceOf(candidates: Candidates, i: number, subject: Subject): number {
  let distance = Math.abs(Math.log(candidates.areaM2(i) / subject.areaM2))
  if (subject.bedrooms !== undefined) distance += BEDROOM_WEIGHT * Math.abs(candidates.bedrooms(i) - subject.bedrooms)
  if (subject.bathrooms !== undefined) distance += BATHROOM_WEIGHT * Math.abs(candidates.bathrooms(i) - subject.bathrooms)
  return roundedTo(distance, 6)
}

// ---- Figures -------------------------------------------------------------------------------------

/** An exact rational number: num / den, den > 0. */
type Ratio = { num: bigint; den: bigint }

/** A listing's exact price per m²: cents / (100 × area), the area as its decimal. */
function pricePerM2(listing: ComparableListing): Ratio {
  const area = decimalOf(listing.areaM2)
  return { num: BigInt(listing.cents) * 10n ** BigInt(area.scale), den: 100n * area.digits }
}

const compare = (a: Ratio, b: Ratio): number => {
  const [left, right] = [a.num * b.den, b.num * a.den]
  return left < right ? -1 : left > right ? 1 : 0
}
const mean = (a: Ratio, b: Ratio): Ratio => ({ num: a.num * b.den + b.num * a.den, den: 2n * a.den * b.den })
const times = (a: Ratio, area: Decimal): Ratio => ({ num: a.num * area.digits, den: a.den * 10n ** BigInt(area.scale) })
/** Whole cents of a USD amount, rounded once, half away from zero. */
const centsOf = (amount: Ratio): bigint => divideHalfAwayFromZero(amount.num * 100n, amount.den)
const usd = (cents: bigint): number => Number(cents) / 100

/** The value of 1-based rank ⌈p·n⌉ (p = tenths / 10) of the ascending `sorted`: the nearest-rank percentile. */
const nearestRank = (sorted: readonly Ratio[], tenths: number): Ratio => sorted[Math.ceil((tenths * sorted.length) / 10) - 1]!

function figuresOf(used: readonly Ranked[], area: Decimal, level: 1 | 2 | 3 | 4): Pick<Estimate, 'estimate' | 'comparables'> {
  const prices = used.map(pricePerM2)
  const sorted = [...prices].sort(compare)
  const median = mean(...middleOf(sorted))
  const [price, low, high] = [centsOf(times(median, area)), centsOf(times(nearestRank(sorted, RANGE_TENTHS[0]), area)), centsOf(times(nearestRank(sorted, RANGE_TENTHS[1]), area))]
  const estimate: EstimateFigures = {
    price_usd: usd(price),
    price_per_m2_usd: usd(centsOf(median)),
    low_usd: usd(low),
    high_usd: usd(high),
    confidence: confidenceOf(used.length, level, high - low, price),
  }
  const comparables = used.map((listing, i) => ({
    listing_id: listing.id,
    area_m2: listing.areaM2,
    bedrooms: listing.bedrooms,
    bathrooms: listing.bathrooms,
    price_usd: listing.cents / 100,
    price_per_m2_usd: usd(centsOf(prices[i]!)),
    adjusted_price_usd: usd(centsOf(times(prices[i]!, area))),
    distance: listing.distance,
    similarity: roundedTo(1 / (1 + listing.distance), 4),
  }))
  return { estimate, comparables }
}

/** The confidence word, from the published cents: how many comparables, how far the search widened, how wide the range. */
function confidenceOf(used: number, level: 1 | 2 | 3 | 4, spread: bigint, price: bigint): Confidence {
  if (used >= HIGH_CONFIDENCE_COMPARABLES && level <= 2 && 2n * spread <= price) return 'high'
  if (level <= 3 && spread <= price) return 'medium'
  return 'low'
}
