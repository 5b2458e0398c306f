/**
 * The hold-out of bench/estimate.ts: each public listing estimated in turn from the other public
 * listings of its country, zone, operation and property type (`estimateOf`, its own area, bedrooms
 * and bathrooms as the subject), and how far the estimates fall from the listings' own prices.
 * Money is compared in whole cents, exactly: the listing's price as the read model computes it
 * (`usdText`), the estimate's published figures read as the decimals they are.
 */
import type { ComparableListing } from '../src/domain/market/comparable.ts'
import { decimalOf } from '../src/domain/market/decimal.ts'
import { byArea, type Estimate, estimateOf, sortedCandidates } from '../src/domain/market/estimate.ts'
import type { Confidence } from '../src/domain/market/estimate-figures.ts'
import { usdText } from '../src/domain/market/fx.ts'
import { COUNTRIES, type Country, OPERATIONS, type Operation, type PropertyType } from '../src/domain/market/vocabulary.ts'
import { middleOf } from '../src/domain/market/zone-statistics.ts'

/** A public listing in its final state: where it is (its group of candidates) and what an estimate reads. */
export type PublicListing = { country: Country; zone: string; operation: Operation; propertyType: PropertyType; listing: ComparableListing }

/** A listing's final state, from either market: what decides whether it is public, and its price. */
export type FinalState = {
  id: string
  source: string
  status: string
  verified: boolean
  country: Country
  zone: string
  operation: Operation
  propertyType: PropertyType
  areaM2: number
  bedrooms: number
  bathrooms: number
  priceLocal: number
  fxRate: number
}

/** Public: what /listings may show and an estimate may compare (active, verified, broker: docs/statistics.md). */
export const isPublic = (state: FinalState): boolean => state.status === 'active' && state.verified && state.source === 'broker'

/** The public listing of a final state, its price in whole cents as the read model computes it. */
export function publicListingOf(state: FinalState): PublicListing {
  const cents = Number(centsOfUsdText(usdText(state.priceLocal, state.fxRate)))
  return {
    country: state.country,
    zone: state.zone,
    operation: state.operation,
    propertyType: state.propertyType,
    listing: { id: state.id, areaM2: state.areaM2, bedrooms: state.bedrooms, bathrooms: state.bathrooms, cents },
  }
}

/** "318000.01" → 31800001n. */
const centsOfUsdText = (text: string): bigint => BigInt(text.replace('.', ''))

/** Whole cents of a published USD figure (a number of at most 2 decimals), read as the decimal it is. */
function centsOfPublished(usd: number): bigint {
  const { digits, scale } = decimalOf(usd)
  if (scale > 2) throw new Error(`a published amount has at most 2 decimals, not ${usd}`)
  return digits * 10n ** BigInt(2 - scale)
}

/** The candidate groups: public listings by country, zone, operation and property type, formed once. */
export function groupsOf(listings: readonly PublicListing[]): PublicListing[][] {
  const groups = new Map<string, PublicListing[]>()
  for (const p of listings) {
    const key = `${p.country}\n${p.zone}\n${p.operation}\n${p.propertyType}`
    const group = groups.get(key)
    if (group) group.push(p)
    else groups.set(key, [p])
  }
  return [...groups.values()]
}

// ---- Tallies ------------------------------------------------------------------------------------

export const CONFIDENCES: readonly Confidence[] = ['high', 'medium', 'low']

/** Estimates of one kind: how many, how many put the actual price inside [low, high], their errors. */
export class Estimates {
  n = 0
  inside = 0
  /** |estimate − actual| / actual of each, as fractions. */
  readonly errors: number[] = []

  add(error: number, inside: boolean): void {
    this.n++
    if (inside) this.inside++
    this.errors.push(error)
  }
}

/** What the hold-out found for some listings: how many held out, how many not estimated, the estimates overall, per confidence word and per level. */
export class Tally {
  heldOut = 0
  notEstimated = 0
  readonly all = new Estimates()
  readonly byConfidence = new Map<Confidence, Estimates>(CONFIDENCES.map((c) => [c, new Estimates()]))
  readonly byLevel = new Map<number, Estimates>([1, 2, 3, 4].map((level) => [level, new Estimates()]))

  /** One held-out listing and its estimate. */
  add(actualCents: bigint, { estimate, method }: Estimate): void {
    this.heldOut++
    if (estimate === null) {
      this.notEstimated++
      return
    }
    const price = centsOfPublished(estimate.price_usd)
    const inside = centsOfPublished(estimate.low_usd) <= actualCents && actualCents <= centsOfPublished(estimate.high_usd)
    const difference = price > actualCents ? price - actualCents : actualCents - price
    // Both exact whole cents (well under 2^53): one correctly rounded division.
    const error = Number(difference) / Number(actualCents)
    this.all.add(error, inside)
    this.byConfidence.get(estimate.confidence)!.add(error, inside)
    this.byLevel.get(method.level!)!.add(error, inside)
  }
}

/**
 * The median absolute percentage error of some estimates (null for none): the middle error, or the
 * mean of the two middle ones, picked by the median rule of the statistics module (`middleOf`). A
 * figure of this report about the estimates, not a figure of the product.
 */
export function medianError(errors: readonly number[]): number | null {
  if (errors.length === 0) return null
  const [lower, upper] = middleOf([...errors].sort((a, b) => a - b))
  return (lower + upper) / 2
}

/** The tallies of one market: overall and per country and operation (`${country} ${operation}`). */
export type Tallies = { overall: Tally; byMarket: Map<string, Tally> }

export const newTallies = (): Tallies => ({
  overall: new Tally(),
  byMarket: new Map(COUNTRIES.flatMap((c) => OPERATIONS.map((o) => [`${c} ${o}`, new Tally()] as const))),
})

// ---- The hold-out -------------------------------------------------------------------------------

export type HoldOutOptions = {
  comparables: number
  /** Called now and then with the number of listings held out so far. */
  progress: (done: number) => void
  /** Asked now and then (between listings): true stops the hold-out where it is. */
  stopped: () => boolean
}

const yieldToEvents = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * Holds out every listing of every group in turn, estimating it from the rest of its group; adds
 * each to `tallies`. Returns the number held out (all of them unless stopped). A group is sorted by
 * area once; the rest of it is a view that skips the one held out, never a copy per listing.
 */
export async function holdOut(groups: readonly PublicListing[][], tallies: Tallies, options: HoldOutOptions): Promise<number> {
  let done = 0
  let lastYield = performance.now()
  for (const group of groups) {
    const members = group.map((p) => p.listing).sort(byArea)
    const tally = tallies.byMarket.get(`${group[0]!.country} ${group[0]!.operation}`)!
    for (let i = 0; i < members.length; i++) {
      const held = members[i]!
      const estimate = estimateOf(sortedCandidates(members, i), { areaM2: held.areaM2, bedrooms: held.bedrooms, bathrooms: held.bathrooms, comparables: options.comparables })
      const actual = BigInt(held.cents)
      tallies.overall.add(actual, estimate)
      tally.add(actual, estimate)
      done++
      if (performance.now() - lastYield > 200) {
        options.progress(done)
        await yieldToEvents() // lets Ctrl-C be heard
        lastYield = performance.now()
        if (options.stopped()) return done
      }
    }
  }
  options.progress(done)
  return done
}
