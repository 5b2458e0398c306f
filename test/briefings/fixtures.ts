import { candidatesOf, estimateOf } from '../../src/domain/market/estimate.ts'
import fc from 'fast-check'
import { type BriefingEstimate, type CountryContext, type EstimateSubject, estimateSubjectOf, type SegmentStats, type ZoneDetail, type ZoneFacts, type ZoneFactsSource } from '../../src/domain/briefings/facts.ts'
import type { ComparableListing } from '../../src/domain/market/comparable.ts'
import { BEDROOM_GROUPS, type Country, PROPERTY_TYPES } from '../../src/domain/market/vocabulary.ts'

/** The estimate a briefing gets for `subject` from `candidates` (the public listings of its zone, operation and type), as the service computes it. */
export const briefingEstimate = (subject: EstimateSubject, candidates: readonly ComparableListing[]): BriefingEstimate => ({
  subject,
  ...estimateOf(candidatesOf(candidates), estimateSubjectOf(subject)),
})

/** A plausible zone (Guatemala City-like figures); every field can be overridden. */
export function zoneDetail(overrides: Partial<ZoneDetail> = {}): ZoneDetail {
  return {
    zone: 'Zona 10',
    slug: 'zona-10',
    country: 'GT',
    n_active: 160,
    n_sale: 120,
    median_ppm2_usd: 1820,
    median_price_usd: 245_000,
    median_dom: 45,
    by_property_type: [
      { property_type: 'Apartamento', n_active: 90, n_sale: 67, median_ppm2_usd: 1900, median_price_usd: 210_000 },
      { property_type: 'Casa', n_active: 40, n_sale: 30, median_ppm2_usd: 1500, median_price_usd: 390_000 },
      { property_type: 'Terreno', n_active: 12, n_sale: 9, median_ppm2_usd: 520, median_price_usd: 480_000 },
      { property_type: 'Oficina', n_active: 18, n_sale: 13, median_ppm2_usd: 2100, median_price_usd: 260_000 },
    ],
    by_bedrooms: [
      { bedrooms: '1', n_active: 30, n_sale: 22, median_ppm2_usd: 2000, median_price_usd: 140_000 },
      { bedrooms: '2', n_active: 55, n_sale: 41, median_ppm2_usd: 1850, median_price_usd: 205_000 },
      { bedrooms: '3', n_active: 45, n_sale: 33, median_ppm2_usd: 1700, median_price_usd: 320_000 },
    ],
    by_operation: [
      { operation: 'Venta', n_active: 120, median_ppm2_usd: 1820, median_price_usd: 245_000 },
      { operation: 'Renta', n_active: 40, median_ppm2_usd: 11.5, median_price_usd: 1_400 },
    ],
    change_30d: { median_ppm2_usd_now: 1820, median_ppm2_usd_then: 1765, pct: 3.1, n_active_now: 160, n_active_then: 150, n_sale_now: 120, n_sale_then: 110 },
    source_mix: [
      { source: 'broker', n: 100, share: 0.625 },
      { source: 'scraped', n: 60, share: 0.375 },
    ],
    updated_at: '2026-05-07T12:00:00.000Z',
    ...overrides,
  }
}

export function countryContext(overrides: Partial<CountryContext> = {}): CountryContext {
  return {
    country: 'GT',
    zones: 14,
    n_active: 2100,
    median_ppm2_usd: 1500,
    median_price_usd: 190_000,
    median_dom: 60,
    change_30d_pct: 0.8,
    ...overrides,
  }
}

export const facts = (zone: Partial<ZoneDetail> = {}, country: Partial<CountryContext> = {}): ZoneFacts => ({
  zone: zoneDetail(zone),
  country: countryContext(country),
})

/**
 * Zones held in memory, for service tests that are not about the zone read models; `candidates` are
 * the public listings every estimate compares with (of any zone, operation and type asked), none by default.
 */
export function fixtureFacts(
  zones: readonly ZoneDetail[],
  country: CountryContext = countryContext(),
  candidates: readonly ComparableListing[] = [],
): ZoneFactsSource & { zoneCalls: number; estimateCalls: number } {
  const source = {
    zoneCalls: 0,
    estimateCalls: 0,
    async zone(code: Country, name: string) {
      source.zoneCalls += 1
      return zones.find((z) => z.country === code && z.zone === name) ?? null
    },
    async country() {
      return country
    },
    async estimate(_country: Country, _zone: string, subject: Parameters<ZoneFactsSource['estimate']>[2]) {
      source.estimateCalls += 1
      return briefingEstimate(subject, candidates)
    },
  }
  return source
}

/** Zona 1 … Zona n of Guatemala, all with the default figures. */
export const gtZones = (n: number) => Array.from({ length: n }, (_, i) => zoneDetail({ zone: `Zona ${i + 1}`, slug: `zona-${i + 1}` }))

// ---- arbitraries for property-based tests ---------------------------------------------------

const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null, freq: 6 })
const money = (min: number, max: number) => fc.double({ min, max, noNaN: true, noDefaultInfinity: true })

const segmentStats: fc.Arbitrary<SegmentStats> = fc.record({
  n_active: fc.integer({ min: 0, max: 400 }),
  median_ppm2_usd: maybe(money(100, 8000)),
  median_price_usd: maybe(money(10_000, 3_000_000)),
})

/** A row whose medians are over its sale listings, a part of its active ones. */
const saleStats = fc
  .tuple(segmentStats, fc.double({ min: 0, max: 1, noNaN: true }))
  .map(([s, share]) => ({ ...s, n_sale: Math.floor(s.n_active * share) }))

export const zoneArb: fc.Arbitrary<ZoneDetail> = fc
  .record({
    stats: saleStats,
    dom: maybe(fc.integer({ min: 1, max: 400 })),
    change: maybe(fc.double({ min: -25, max: 25, noNaN: true })),
    types: fc.subarray([...PROPERTY_TYPES]).chain((types) => fc.tuple(...types.map((t) => saleStats.map((s) => ({ property_type: t, ...s }))))),
    bedrooms: fc.subarray([...BEDROOM_GROUPS]).chain((groups) => fc.tuple(...groups.map((b) => saleStats.map((s) => ({ bedrooms: b, ...s }))))),
    sale: segmentStats,
    rent: fc.option(
      fc.record({ n_active: fc.integer({ min: 0, max: 200 }), median_ppm2_usd: maybe(money(1, 60)), median_price_usd: maybe(money(100, 20_000)) }),
      { nil: undefined },
    ),
  })
  .map(({ stats, dom, change, types, bedrooms, sale, rent }) =>
    zoneDetail({
      ...stats,
      median_dom: dom,
      by_property_type: types,
      by_bedrooms: bedrooms,
      by_operation: [{ operation: 'Venta' as const, ...sale }, ...(rent ? [{ operation: 'Renta' as const, ...rent }] : [])],
      change_30d: {
        median_ppm2_usd_now: stats.median_ppm2_usd,
        median_ppm2_usd_then: null,
        pct: change,
        n_active_now: stats.n_active,
        n_active_then: 0,
        n_sale_now: stats.n_sale,
        n_sale_then: 0,
      },
    }),
  )

export const countryArb: fc.Arbitrary<CountryContext> = fc.record({
  country: fc.constant('GT' as const),
  zones: fc.integer({ min: 1, max: 30 }),
  n_active: fc.integer({ min: 0, max: 10_000 }),
  median_ppm2_usd: maybe(money(100, 8000)),
  median_price_usd: maybe(money(10_000, 3_000_000)),
  median_dom: maybe(fc.integer({ min: 1, max: 400 })),
  change_30d_pct: maybe(fc.double({ min: -25, max: 25, noNaN: true })),
})

export const factsArb: fc.Arbitrary<ZoneFacts> = fc.record({ zone: zoneArb, country: countryArb })

const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined })
const withoutUndefined = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined))

/** Valid bodies of a persona: Zona 10, one of its `profiles`, maybe a language, and maybe each of `extra`. */
const bodyArb = (profiles: string[], extra: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Record<string, unknown>> =>
  fc
    .record({
      zone: fc.constant('Zona 10'),
      profile: fc.constantFrom(...profiles),
      language: optional(fc.constantFrom('es', 'en', 'pt')),
      ...Object.fromEntries(Object.entries(extra).map(([field, arb]) => [field, optional(arb)])),
    })
    .map(withoutUndefined)

/** Valid request bodies for each persona (before defaults). */
export const bodyArbs: Record<string, fc.Arbitrary<Record<string, unknown>>> = {
  investor: bodyArb(['conservative', 'balanced', 'aggressive'], { budget_usd: money(1000, 5_000_000), horizon_years: fc.integer({ min: 1, max: 30 }) }),
  homebuyer: bodyArb(['first_time', 'family', 'downsizer'], {
    budget_usd: money(1000, 5_000_000),
    bedrooms: fc.integer({ min: 0, max: 10 }),
    property_type: fc.constantFrom(...PROPERTY_TYPES),
    area_m2: money(10, 10_000),
  }),
  landlord: bodyArb(['long_term', 'short_term', 'corporate'], { property_type: fc.constantFrom(...PROPERTY_TYPES) }),
  developer: bodyArb(['residential', 'commercial', 'mixed_use'], { lot_m2: money(10, 1_000_000) }),
  broker: bodyArb(['listing_agent', 'buyer_agent'], {
    property_type: fc.constantFrom(...PROPERTY_TYPES),
    asking_price_usd: money(1000, 10_000_000),
    area_m2: money(10, 10_000),
  }),
}
