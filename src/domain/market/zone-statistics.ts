import type { ListingColumns } from './listing-columns.ts'
import { cents, divideRounded, sharesSummingToOne } from './rounding.ts'
import { DAY_MS } from './statistics.ts'
import { BEDROOM_GROUPS, type Country, type Operation, OPERATIONS, PROPERTY_TYPES, SOURCES, type Source } from './vocabulary.ts'
import type { ZoneDetail, ZoneHistoryMonth, ZoneSummary } from './zone-figures.ts'
import { isKnowableZoneNumber, zoneName, zoneNumberOfSlug, zoneSlug } from './zone-name.ts'

/**
 * Every published zone figure (docs/statistics.md), computed here and nowhere else: GET /zones,
 * /zone/{slug} and the monthly history, now or as of a past instant, the `projections diff` and
 * `audit answer`. Pure: the callers select the listings (rows of the read model now, or the history
 * intervals open at an instant: projections/listings/zone-rows.ts, history-index.ts), put them in
 * columns (listing-columns.ts) and hand over, per zone, the slots to count.
 */

// ---- The rules ----------------------------------------------------------------------------------

/** Sale listings: every sale median is over them alone (rents are monthly amounts). */
const SALE_OPERATION: Operation = 'Venta'
const SALE = OPERATIONS.indexOf(SALE_OPERATION)
/** The monthly history's rent medians are those of this operation's own listings. */
const RENT_OPERATION: Operation = 'Renta'
const BROKER = SOURCES.indexOf('broker')

/** Fewer listings than this make a median `null`: one or two listings are not a market. */
const MIN_FOR_MEDIAN = 3

/** "Then" of the 30-day change is this long before the market's clock (the latest listing event anywhere). */
const CHANGE_WINDOW_MS = 30 * DAY_MS

/** The instant of "then" for the market's clock `clockMs`. */
export const changeWindowStart = (clockMs: number): number => clockMs - CHANGE_WINDOW_MS

/**
 * The median of n values: the middle one (n odd) or the mean of the two middle ones (n even), taken
 * over exact values and rounded once when published. These are the ranks of the middle values.
 */
const middleRanks = (n: number): [number, number] => [(n - 1) >> 1, n >> 1]

/**
 * The middle values of `sorted` (ascending, non-empty): the middle one twice (n odd) or the two
 * middle ones (n even); the median is their mean. For the estimates (estimate.ts), which take this
 * median of their comparables' exact prices per m².
 */
export function middleOf<T>(sorted: readonly T[]): [T, T] {
  const [lower, upper] = middleRanks(sorted.length)
  return [sorted[lower]!, sorted[upper]!]
}

/** The median of amounts in whole cents, in USD: the mean of the middle values rounded once to cents, half away from zero. */
const centsMedian = ([lower, upper]: [number, number]): number => divideRounded(lower + upper, 2) / 100

/**
 * The median of exact prices per m² (units of 10⁻³⁰) in USD, as SQL's `round((m₁ + m₂) / 2, 2)`
 * gives it: the mean halved at 30 decimals (numeric division), then rounded to cents, half away from zero.
 */
function ppm2Median([lower, upper]: [bigint, bigint]): number {
  const sum = lower + upper
  const half = (sum + (sum & 1n)) / 2n
  const [centsPart, rest] = [half / 10n ** 28n, half % 10n ** 28n]
  return Number(rest * 2n >= 10n ** 28n ? centsPart + 1n : centsPart) / 100
}

// ---- Figures of a set of listings --------------------------------------------------------------

/**
 * Which figures a computation serves: `detail` every row of /zone/{slug}; `summary` the zone rows of
 * /zones (no breakdowns); `history` the zone rows and the operation rows (for the rent medians), no
 * 30-day comparison. Rows not computed read as empty: a caller reads only the figures it asked for.
 */
export type Figures = 'detail' | 'summary' | 'history'

type SaleFigures = { n_active: number; n_sale: number; median_ppm2_usd: number | null; median_price_usd: number | null }
type OwnFigures = Omit<SaleFigures, 'n_sale'>

/** What a zone's active listings say: everything of its facts but its name, its latest event and the 30-day comparison. */
export type ZoneNow = SaleFigures & {
  by_property_type: readonly SaleFigures[]
  by_bedrooms: readonly SaleFigures[]
  by_operation: readonly OwnFigures[]
  sources: Readonly<Record<Source, number>>
  medianListedMs: number | null
}

/** What a zone's listings active 30 days before the market's clock say. */
export type ZoneThen = { n_active: number; n_sale: number; median_ppm2_usd: number | null }

/** Medians over all of `slots`, published (null under MIN_FOR_MEDIAN). */
function ownFigures(columns: ListingColumns, slots: Int32Array): OwnFigures {
  const n = slots.length
  if (n < MIN_FOR_MEDIAN) return { n_active: n, median_ppm2_usd: null, median_price_usd: null }
  const ranks = middleRanks(n)
  return {
    n_active: n,
    median_ppm2_usd: ppm2Median(columns.ppm2AtRanks(slots, ...ranks)),
    median_price_usd: centsMedian(columns.atRanks('cents', slots, ...ranks)),
  }
}

const salesOf = (columns: ListingColumns, slots: Int32Array) => columns.where(slots, 'operation', SALE)

/** All of `slots` counted, the medians over their sale listings. */
function saleFigures(columns: ListingColumns, slots: Int32Array): SaleFigures {
  const sale = ownFigures(columns, salesOf(columns, slots))
  return { n_active: slots.length, n_sale: sale.n_active, median_ppm2_usd: sale.median_ppm2_usd, median_price_usd: sale.median_price_usd }
}

const NONE = new Int32Array(0)

/** The figures of a zone whose active listings are `slots` (only `figures`: the other rows read as empty). */
export function zoneNow(columns: ListingColumns, slots: Int32Array, figures: Figures = 'detail'): ZoneNow {
  const detail = figures === 'detail'
  const broker = columns.count(slots, 'source', BROKER)
  return {
    ...saleFigures(columns, slots),
    by_property_type: PROPERTY_TYPES.map((_, t) => saleFigures(columns, detail ? columns.where(slots, 'propertyType', t) : NONE)),
    by_bedrooms: BEDROOM_GROUPS.map((_, b) => saleFigures(columns, detail ? columns.where(slots, 'bedroomGroup', b) : NONE)),
    by_operation: OPERATIONS.map((_, o) => ownFigures(columns, figures !== 'summary' ? columns.where(slots, 'operation', o) : NONE)),
    sources: { broker, scraped: slots.length - broker },
    medianListedMs: slots.length < MIN_FOR_MEDIAN ? null : listedMedianMs(columns.atRanks('listedMicros', slots, ...middleRanks(slots.length))),
  }
}

/** The median listing time in milliseconds (exact: whole microseconds halved). */
const listedMedianMs = ([lower, upper]: [number, number]): number => (lower + upper) / 2000

/** The 30-day comparison's side "then" of a zone whose listings active then are `slots`. */
export function zoneThen(columns: ListingColumns, slots: Int32Array): ZoneThen {
  const sale = salesOf(columns, slots)
  const n = sale.length
  return { n_active: slots.length, n_sale: n, median_ppm2_usd: n < MIN_FOR_MEDIAN ? null : ppm2Median(columns.ppm2AtRanks(sale, ...middleRanks(n))) }
}

// ---- A zone's facts and the records served ----------------------------------------------------

/** A zone's statistics as of the listings given: everything but what depends on the request time. */
export type ZoneFacts = Omit<ZoneDetail, 'median_dom'> & { medianListedMs: number | null }
/** Every zone seen in a country, by zone number. */
export type CountryZoneFacts = ReadonlyMap<number, ZoneFacts>
/** A zone seen, with the time (ISO) of its latest listing event. */
export type ZoneSeen = { zoneNo: number; updatedAt: string }

const NO_SALE_FIGURES: SaleFigures = { n_active: 0, n_sale: 0, median_ppm2_usd: null, median_price_usd: null }
/** A zone without active listings. */
const EMPTY_NOW: ZoneNow = {
  ...NO_SALE_FIGURES,
  by_property_type: PROPERTY_TYPES.map(() => NO_SALE_FIGURES),
  by_bedrooms: BEDROOM_GROUPS.map(() => NO_SALE_FIGURES),
  by_operation: OPERATIONS.map(() => ({ n_active: 0, median_ppm2_usd: null, median_price_usd: null })),
  sources: { broker: 0, scraped: 0 },
  medianListedMs: null,
}

/**
 * The facts of the zones `seen` of `country`, from what their active listings say (`now`; a zone
 * absent has none) and those active 30 days before (`then`).
 */
export function zoneFactsOf(
  country: Country,
  seen: readonly ZoneSeen[],
  now: ReadonlyMap<number, ZoneNow>,
  then: ReadonlyMap<number, ZoneThen>,
): CountryZoneFacts {
  const facts = new Map<number, ZoneFacts>()
  for (const { zoneNo, updatedAt } of seen) {
    const zone = now.get(zoneNo) ?? EMPTY_NOW
    const past = then.get(zoneNo) ?? { n_active: 0, n_sale: 0, median_ppm2_usd: null }
    facts.set(zoneNo, {
      zone: zoneName(zoneNo),
      slug: zoneSlug(zoneNo),
      country,
      n_active: zone.n_active,
      n_sale: zone.n_sale,
      median_ppm2_usd: zone.median_ppm2_usd,
      median_price_usd: zone.median_price_usd,
      by_property_type: PROPERTY_TYPES.map((property_type, i) => ({ property_type, ...zone.by_property_type[i]! })),
      by_bedrooms: BEDROOM_GROUPS.map((bedrooms, i) => ({ bedrooms, ...zone.by_bedrooms[i]! })),
      by_operation: OPERATIONS.map((operation, i) => ({ operation, ...zone.by_operation[i]! })),
      change_30d: {
        median_ppm2_usd_now: zone.median_ppm2_usd,
        median_ppm2_usd_then: past.median_ppm2_usd,
        pct: changePct(zone.median_ppm2_usd, past.median_ppm2_usd),
        n_active_now: zone.n_active,
        n_active_then: past.n_active,
        n_sale_now: zone.n_sale,
        n_sale_then: past.n_sale,
      },
      source_mix: sourceMix(zone.sources),
      updated_at: updatedAt,
      medianListedMs: zone.medianListedMs,
    })
  }
  return facts
}

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

/** The first instant after `nowMs` at which a figure of `zones` that depends on the request time (days on market) may change. */
export function zoneFactsChangeAt(zones: Iterable<ZoneFacts>, nowMs: number): number {
  let at = Number.POSITIVE_INFINITY
  for (const zone of zones) at = Math.min(at, medianDaysOnMarketChangesAt(nowMs, zone.medianListedMs, zone.n_active))
  return at
}

/** The `zones` array of GET /zones at `now`: every zone seen in the country, by zone number. */
export function zonesAt(facts: CountryZoneFacts, now: Date): ZoneSummary[] {
  const nowMs = now.getTime()
  return [...facts.values()].map((zone) => ({
    zone: zone.zone,
    slug: zone.slug,
    median_ppm2_usd: zone.median_ppm2_usd,
    n_active: zone.n_active,
    n_sale: zone.n_sale,
    median_dom: medianDaysOnMarket(nowMs, zone.medianListedMs, zone.n_active),
    median_price_usd: zone.median_price_usd,
    change_30d_pct: zone.change_30d.pct,
    updated_at: zone.updated_at,
  }))
}

/** The record of GET /zone/{slug} at `now`, or null when the country has no such zone. */
export function zoneDetailAt(facts: CountryZoneFacts, slug: string, now: Date): ZoneDetail | null {
  const zoneNo = zoneNumberOfSlug(slug)
  if (zoneNo === null || !isKnowableZoneNumber(zoneNo)) return null
  const zone = facts.get(zoneNo)
  if (!zone) return null
  return {
    zone: zone.zone,
    slug: zone.slug,
    country: zone.country,
    n_active: zone.n_active,
    n_sale: zone.n_sale,
    median_ppm2_usd: zone.median_ppm2_usd,
    median_price_usd: zone.median_price_usd,
    median_dom: medianDaysOnMarket(now.getTime(), zone.medianListedMs, zone.n_active),
    by_property_type: zone.by_property_type,
    by_bedrooms: zone.by_bedrooms,
    by_operation: zone.by_operation,
    change_30d: zone.change_30d,
    source_mix: zone.source_mix,
    updated_at: zone.updated_at,
  }
}

/** The last `months` calendar months (UTC) up to `at`'s, oldest first, each with the instant of its figures: its last millisecond, or `at` for `at`'s own month. */
export function monthEnds(at: Date, months: number): { month: string; at: Date }[] {
  const [year, month] = [at.getUTCFullYear(), at.getUTCMonth()]
  return Array.from({ length: months }, (_, i) => {
    const start = new Date(Date.UTC(year, month - (months - 1 - i), 1))
    const next = Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1)
    return { month: start.toISOString().slice(0, 7), at: i === months - 1 ? at : new Date(next - 1) }
  })
}

/** A month of GET /zone/{slug}/history from the zone's facts at `end.at` (computed `history`), undefined before its first listing event. */
export function historyMonth(end: { month: string; at: Date }, facts: ZoneFacts | undefined): ZoneHistoryMonth {
  const rents = facts?.by_operation.find((o) => o.operation === RENT_OPERATION)
  return {
    month: end.month,
    at: end.at.toISOString(),
    listed: facts !== undefined,
    n_active: facts?.n_active ?? null,
    n_sale: facts?.n_sale ?? null,
    median_ppm2_usd: facts?.median_ppm2_usd ?? null,
    median_price_usd: facts?.median_price_usd ?? null,
    median_rent_usd: rents?.median_price_usd ?? null,
    median_rent_ppm2_usd: rents?.median_ppm2_usd ?? null,
    median_dom: facts ? medianDaysOnMarket(end.at.getTime(), facts.medianListedMs, facts.n_active) : null,
  }
}
