import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FeedRecord } from '../../src/listings/feed.ts'
import { DEFAULT_FX } from '../../src/market/fx.ts'
import { COUNTRIES } from '../../src/market/vocabulary.ts'
import { getZoneDetail, listZones } from '../../src/zones/queries.ts'
import { databaseTargets } from '../support/databases.ts'
import { ANCHOR, type Market, openMarket } from '../support/market.ts'

/**
 * The statistics oracle: everything the zone queries serve is recomputed here by brute force from
 * the raw feed lines, without the projection, the events or the SQL. Every line of the demo feed is
 * a full snapshot of its listing, so a listing's state at time T is simply its last line at or
 * before T. Arithmetic is in whole cents and milliseconds, rounding halves up (all values positive).
 */

const NOW = new Date(ANCHOR.getTime() + 36 * 3_600_000 + 12_345)
const DAY = 86_400_000

type Snapshot = { record: FeedRecord; priceCents: number; ppm2Cents: number; listedMs: number }

const snapshotOf = (record: FeedRecord): Snapshot => {
  const priceCents = Math.round((record.price * 100) / DEFAULT_FX[record.currency])
  return { record, priceCents, ppm2Cents: Math.round(priceCents / record.area_m2), listedMs: Date.parse(record.listed_at) }
}

/** Each listing's snapshot as of `at` (its last line observed at or before it), active ones only. */
function activeAt(records: readonly FeedRecord[], at: number): Snapshot[] {
  const last = new Map<string, FeedRecord>()
  for (const r of records) if (Date.parse(r.observed_at) <= at) last.set(`${r.source}\n${r.source_id}`, r)
  return [...last.values()].filter((r) => r.status === 'active').map(snapshotOf)
}

/** Exact median of whole units, as a number of hundredths: null under 3 values. */
const medianCents = (values: number[]): number | null => {
  if (values.length < 3) return null
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  const twice = sorted.length % 2 === 1 ? 2 * sorted[mid]! : sorted[mid - 1]! + sorted[mid]!
  return Math.floor((twice + 1) / 2) / 100
}

const figures = (listings: Snapshot[], saleOnly: boolean) => {
  const priced = saleOnly ? listings.filter((l) => l.record.operation === 'Venta') : listings
  return {
    n_active: listings.length,
    median_ppm2_usd: medianCents(priced.map((l) => l.ppm2Cents)),
    median_price_usd: medianCents(priced.map((l) => l.priceCents)),
  }
}

const medianDom = (listings: Snapshot[]): number | null => {
  if (listings.length < 3) return null
  const ages = listings.map((l) => NOW.getTime() - l.listedMs).sort((a, b) => a - b)
  const mid = ages.length >> 1
  const median = ages.length % 2 === 1 ? ages[mid]! : (ages[mid - 1]! + ages[mid]!) / 2
  return Math.round(median / (DAY / 10)) / 10
}

const pct = (now: number | null, then: number | null) => {
  if (now === null || then === null) return null
  const delta = Math.round(now * 100) - Math.round(then * 100)
  const scaled = (Math.abs(delta) * 10_000) / Math.round(then * 100)
  return (Math.sign(delta) * Math.round(scaled)) / 100
}

for (const target of databaseTargets('zone statistics oracle')) {
  describe(`zone statistics oracle on ${target.name}`, () => {
    let market: Market
    beforeAll(async () => {
      market = await openMarket(target, 900, 'oracle')
    })
    afterAll(async () => market?.close())

    it('serves for every zone exactly what the raw feed says: medians, counts, breakdowns, source mix, 30-day change', async () => {
      const { records } = market
      const latestEvent = Math.max(...records.map((r) => Date.parse(r.observed_at)))
      const now = activeAt(records, Number.POSITIVE_INFINITY)
      const then = activeAt(records, latestEvent - 30 * DAY)
      let nonNullMedians = 0

      for (const country of COUNTRIES) {
        const zoneNumbers = [...new Set(records.filter((r) => r.country === country).map((r) => Number(r.zone.slice(5))))].sort(
          (a, b) => a - b,
        )
        const inZone = (list: Snapshot[], n: number) => list.filter((l) => l.record.country === country && l.record.zone === `Zona ${n}`)
        const updatedAt = (n: number) =>
          new Date(
            Math.max(...records.filter((r) => r.country === country && r.zone === `Zona ${n}`).map((r) => Date.parse(r.observed_at))),
          ).toISOString()

        const expectedZones = zoneNumbers.map((n) => {
          const active = inZone(now, n)
          const overall = figures(active, true)
          return {
            zone: `Zona ${n}`,
            slug: `zona-${n}`,
            median_ppm2_usd: overall.median_ppm2_usd,
            n_active: active.length,
            median_dom: medianDom(active),
            median_price_usd: overall.median_price_usd,
            change_30d_pct: pct(overall.median_ppm2_usd, figures(inZone(then, n), true).median_ppm2_usd),
            updated_at: updatedAt(n),
          }
        })
        expect(await listZones(market.db, country, NOW)).toEqual(expectedZones)

        for (const n of zoneNumbers) {
          const active = inZone(now, n)
          const activeThen = inZone(then, n)
          const overall = figures(active, true)
          const thenPpm2 = figures(activeThen, true).median_ppm2_usd
          const brokers = active.filter((l) => l.record.source === 'broker').length
          const detail = await getZoneDetail(market.db, country, `zona-${n}`, NOW)
          expect(detail).toEqual({
            zone: `Zona ${n}`,
            slug: `zona-${n}`,
            country,
            ...overall,
            median_dom: medianDom(active),
            by_property_type: ['Apartamento', 'Casa', 'Terreno', 'Oficina', 'Local', 'Bodega'].map((t) => ({
              property_type: t,
              ...figures(active.filter((l) => l.record.property_type === t), true),
            })),
            by_bedrooms: ['0', '1', '2', '3', '4+'].map((b) => ({
              bedrooms: b,
              ...figures(active.filter((l) => (l.record.bedrooms >= 4 ? '4+' : String(l.record.bedrooms)) === b), true),
            })),
            by_operation: ['Venta', 'Renta'].map((o) => ({
              operation: o,
              ...figures(active.filter((l) => l.record.operation === o), false),
            })),
            change_30d: {
              median_ppm2_usd_now: overall.median_ppm2_usd,
              median_ppm2_usd_then: thenPpm2,
              pct: pct(overall.median_ppm2_usd, thenPpm2),
              n_active_now: active.length,
              n_active_then: activeThen.length,
            },
            source_mix: [
              { source: 'broker', n: brokers, share: expect.any(Number) },
              { source: 'scraped', n: active.length - brokers, share: expect.any(Number) },
            ],
            updated_at: updatedAt(n),
          })
          const [broker, scraped] = detail!.source_mix
          if (active.length > 0) {
            expect(broker!.share + scraped!.share).toBe(1)
            expect(Math.abs(broker!.share - brokers / active.length)).toBeLessThanOrEqual(0.00005 + 1e-12)
          } else {
            expect([broker!.share, scraped!.share]).toEqual([0, 0])
          }
          nonNullMedians += [detail!, ...detail!.by_property_type, ...detail!.by_bedrooms, ...detail!.by_operation].filter(
            (f) => f.median_ppm2_usd !== null,
          ).length
          if (detail!.change_30d.pct !== null) nonNullMedians += 1
        }
      }
      // The comparison above is meaningful only if the market is dense enough to publish medians.
      expect(nonNullMedians).toBeGreaterThan(300)
    })

    it('answers null for an unknown zone and an impossible zone number', async () => {
      expect(await getZoneDetail(market.db, 'GT', 'zona-999', NOW)).toBeNull()
      expect(await getZoneDetail(market.db, 'GT', 'zona-99999999999999999999', NOW)).toBeNull()
      expect(await listZones(market.db, 'GT', NOW)).not.toEqual([])
    })
  })
}
