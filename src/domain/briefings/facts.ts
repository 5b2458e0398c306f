import { DEFAULT_COMPARABLES, type Estimate, type Subject } from '../market/estimate.ts'
import type { Country, Operation, PropertyType } from '../market/vocabulary.ts'
import type { ZoneDetail, ZoneSummary } from '../market/zone-figures.ts'

export type { ZoneDetail, ZoneSummary }

/*
 * The market facts a briefing is written from: one zone's detail record (as GET /zone/{slug}
 * serves it) plus country-level context, and the estimate of the reader's property when the
 * persona's input describes one. Writers receive them as plain data and query nothing.
 */

export type SegmentStats = { n_active: number; median_ppm2_usd: number | null; median_price_usd: number | null }

/** The country the zone is compared with: medians of the zones' medians (each zone weighs the same). */
export type CountryContext = {
  country: Country
  zones: number
  n_active: number
  median_ppm2_usd: number | null
  median_price_usd: number | null
  median_dom: number | null
  change_30d_pct: number | null
}

/**
 * The property a briefing's input describes, as GET /estimate would be asked about it (its
 * bathrooms never: no persona asks for them). Its persona says when its input describes one
 * (`estimateSubject`, personas/define.ts); the briefing's cache key carries it (cache-key.ts).
 */
export type EstimateSubject = {
  operation: Operation
  property_type: PropertyType
  area_m2: number
  /** As the reader gave them; null when not given (the estimate then ignores bedrooms). */
  bedrooms: number | null
  /** How many of the closest comparables are used: GET /estimate's default. */
  comparables: number
}

/** The estimate of the subject, as GET /estimate answers it now: figures (or null and the reason), comparables, method. */
export type BriefingEstimate = { subject: EstimateSubject } & Estimate

/** `estimate`: present when the persona's input describes a property (its `estimate` may be null: too few comparables). */
export type ZoneFacts = { zone: ZoneDetail; country: CountryContext; estimate?: BriefingEstimate }

/** Briefings use as many comparables as GET /estimate does by default. */
export const BRIEFING_COMPARABLES = DEFAULT_COMPARABLES

/** The subject as the estimate reads it (src/domain/market/estimate.ts). */
export const estimateSubjectOf = (subject: EstimateSubject): Subject => ({
  areaM2: subject.area_m2,
  bedrooms: subject.bedrooms ?? undefined,
  comparables: subject.comparables,
})

/** Where the briefing service gets its facts (the zone read models, or fixtures in tests). */
export interface ZoneFactsSource {
  /** The zone's detail, or null when the country has no such zone. */
  zone(country: Country, zone: string, now: Date): Promise<ZoneDetail | null>
  /** Country-level context, needed only when a briefing is actually written. */
  country(country: Country, now: Date): Promise<CountryContext>
  /** The estimate of `subject` in the zone from the public listings now, needed only when a briefing is written. */
  estimate(country: Country, zone: string, subject: EstimateSubject): Promise<BriefingEstimate>
}

const median = (values: readonly number[]): number | null => {
  if (values.length === 0) return null
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const present = (values: readonly (number | null)[]): number[] => values.filter((v): v is number => v !== null)

/** Pure: the country context from the zones list. */
export function countryContext(country: Country, zones: readonly ZoneSummary[]): CountryContext {
  return {
    country,
    zones: zones.length,
    n_active: zones.reduce((sum, z) => sum + z.n_active, 0),
    median_ppm2_usd: median(present(zones.map((z) => z.median_ppm2_usd))),
    median_price_usd: median(present(zones.map((z) => z.median_price_usd))),
    median_dom: median(present(zones.map((z) => z.median_dom))),
    change_30d_pct: median(present(zones.map((z) => z.change_30d_pct))),
  }
}
