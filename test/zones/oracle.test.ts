import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Db } from '../../src/db/port.ts'
import type { FeedRecord } from '../../src/domain/listings/feed.ts'
import { ListingInventory } from '../../projections/listings/inventory.ts'
import { listingSearchOf } from '../../src/listings/search-query.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { COUNTRIES, type Country } from '../../src/domain/market/vocabulary.ts'
import type { ZoneDetail, ZoneSummary } from '../../src/domain/market/zone-figures.ts'
import { zoneAsOf, zoneHistory, zonesAsOf } from '../../src/zones/point-in-time.ts'
import { listingId } from '../../src/domain/listings/listing.ts'
import { getZoneDetail, listZones } from '../support/sql-zone-answers.ts'
import { listingsProjection } from '../../projections/listings/projection.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { databaseTargets } from '../support/databases.ts'
import { ANCHOR, aRecord, type Market, openMarket } from '../support/market.ts'
import { decimal, type Fraction, halfCentPrices, isHalfCent, usdCents } from '../support/half-cents.ts'

/**
 * The statistics oracle: everything the zone queries serve is recomputed here by brute force from
 * the raw feed lines, without the projection, the events or the SQL. Every line of the demo feed is
 * a full snapshot of its listing, so a listing's state at time T is simply its last line at or
 * before T. Arithmetic is exact: prices in whole cents, price per m² as a fraction (cents × area's
 * denominator / area's numerator, in BigInt), medians as fractions, rounded once to the cent,
 * halves up (all values positive), as the docs define every statistic.
 */

const NOW = new Date(ANCHOR.getTime() + 36 * 3_600_000 + 12_345)
const DAY = 86_400_000

const compare = (a: Fraction, b: Fraction) => (a.n * b.d < b.n * a.d ? -1 : a.n * b.d > b.n * a.d ? 1 : 0)

type Snapshot = { record: FeedRecord; priceCents: number; ppm2: Fraction; listedMs: number }

const snapshotOf = (record: FeedRecord): Snapshot => {
  const priceCents = usdCents(record.price, DEFAULT_FX[record.currency])
  const area = decimal(record.area_m2)
  return { record, priceCents, ppm2: { n: BigInt(priceCents) * area.d, d: area.n }, listedMs: Date.parse(record.listed_at) }
}

/** Each listing's snapshot as of `at` (its last line observed at or before it), active ones only. */
function activeAt(records: readonly FeedRecord[], at: number): Snapshot[] {
  const last = new Map<string, FeedRecord>()
  for (const r of records) if (Date.parse(r.observed_at) <= at) last.set(`${r.source}\n${r.source_id}`, r)
  return [...last.values()].filter((r) => r.status === 'active').map(snapshotOf)
}

/** Exact median of amounts in cents (the mean of the two middle ones for an even count), published in USD: null under 3. */
function medianUsd(values: readonly Fraction[]): number | null {
  if (values.length < 3) return null
  const sorted = [...values].sort(compare)
  const mid = sorted.length >> 1
  const [a, b] = sorted.length % 2 === 1 ? [sorted[mid]!, sorted[mid]!] : [sorted[mid - 1]!, sorted[mid]!]
  const mean = { n: a.n * b.d + b.n * a.d, d: 2n * a.d * b.d }
  // Round half up to whole cents: floor((2n + d) / 2d).
  return Number((2n * mean.n + mean.d) / (2n * mean.d)) / 100
}
const cents = (c: number): Fraction => ({ n: BigInt(c), d: 1n })

/** A breakdown row: medians over its Venta listings, `n_sale` of them. */
const saleFigures = (listings: Snapshot[]) => {
  const sales = listings.filter((l) => l.record.operation === 'Venta')
  return {
    n_active: listings.length,
    n_sale: sales.length,
    median_ppm2_usd: medianUsd(sales.map((l) => l.ppm2)),
    median_price_usd: medianUsd(sales.map((l) => cents(l.priceCents))),
  }
}

/** A by_operation row: medians over its own listings. */
const ownFigures = (listings: Snapshot[]) => ({
  n_active: listings.length,
  median_ppm2_usd: medianUsd(listings.map((l) => l.ppm2)),
  median_price_usd: medianUsd(listings.map((l) => cents(l.priceCents))),
})

const medianDom = (listings: Snapshot[], at: number): number | null => {
  if (listings.length < 3) return null
  const ages = listings.map((l) => at - l.listedMs).sort((a, b) => a - b)
  const mid = ages.length >> 1
  const median = ages.length % 2 === 1 ? ages[mid]! : (ages[mid - 1]! + ages[mid]!) / 2
  return Math.max(0, Math.round(median / (DAY / 10)) / 10)
}

const pct = (now: number | null, then: number | null) => {
  if (now === null || then === null) return null
  const delta = Math.round(now * 100) - Math.round(then * 100)
  const scaled = (Math.abs(delta) * 10_000) / Math.round(then * 100)
  return (Math.sign(delta) * Math.round(scaled)) / 100
}

type Served = { zones(country: Country): Promise<ZoneSummary[]>; zone(country: Country, slug: string): Promise<ZoneDetail | null> }

/**
 * Checks every zone of every country as `served` answers them against the raw feed as it stood at
 * `at` (the lines observed at or before it; days on market at `at`); returns the medians compared.
 */
async function expectMarketAt(allRecords: readonly FeedRecord[], at: number, served: Served): Promise<number> {
  const records = allRecords.filter((r) => Date.parse(r.observed_at) <= at)
  const latestEvent = Math.max(...records.map((r) => Date.parse(r.observed_at)))
  const now = activeAt(records, at)
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
      const overall = saleFigures(active)
      return {
        zone: `Zona ${n}`,
        slug: `zona-${n}`,
        median_ppm2_usd: overall.median_ppm2_usd,
        n_active: active.length,
        n_sale: overall.n_sale,
        median_dom: medianDom(active, at),
        median_price_usd: overall.median_price_usd,
        change_30d_pct: pct(overall.median_ppm2_usd, saleFigures(inZone(then, n)).median_ppm2_usd),
        updated_at: updatedAt(n),
      }
    })
    expect(await served.zones(country)).toEqual(expectedZones)

    for (const n of zoneNumbers) {
      const active = inZone(now, n)
      const activeThen = inZone(then, n)
      const overall = saleFigures(active)
      const thenSales = saleFigures(activeThen)
      const thenPpm2 = thenSales.median_ppm2_usd
      const brokers = active.filter((l) => l.record.source === 'broker').length
      const detail = await served.zone(country, `zona-${n}`)
      expect(detail).toEqual({
        zone: `Zona ${n}`,
        slug: `zona-${n}`,
        country,
        ...overall,
        median_dom: medianDom(active, at),
        by_property_type: ['Apartamento', 'Casa', 'Terreno', 'Oficina', 'Local', 'Bodega'].map((t) => ({
          property_type: t,
          ...saleFigures(active.filter((l) => l.record.property_type === t)),
        })),
        by_bedrooms: ['0', '1', '2', '3', '4+'].map((b) => ({
          bedrooms: b,
          ...saleFigures(active.filter((l) => (l.record.bedrooms >= 4 ? '4+' : String(l.record.bedrooms)) === b)),
        })),
        by_operation: ['Venta', 'Renta'].map((o) => ({
          operation: o,
          ...ownFigures(active.filter((l) => l.record.operation === o)),
        })),
        change_30d: {
          median_ppm2_usd_now: overall.median_ppm2_usd,
          median_ppm2_usd_then: thenPpm2,
          pct: pct(overall.median_ppm2_usd, thenPpm2),
          n_active_now: active.length,
          n_active_then: activeThen.length,
          n_sale_now: overall.n_sale,
          n_sale_then: thenSales.n_sale,
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
  return nonNullMedians
}


for (const target of databaseTargets('zone statistics oracle')) {
  describe(`zone statistics oracle on ${target.name}`, () => {
    let market: Market
    beforeAll(async () => {
      market = await openMarket(target, 900, 'oracle', halfCentPrices)
    })
    afterAll(async () => market?.close())

    it('serves for every zone exactly what the raw feed says: medians, counts, breakdowns, source mix, 30-day change', async () => {
      const served: Served = { zones: (country) => market.zones.zones(country, NOW), zone: (country, slug) => market.zones.zone(country, slug, NOW) }
      // The market now: every line (the latest is before NOW).
      expect(await expectMarketAt(market.records, NOW.getTime(), served)).toBeGreaterThan(300)
    })

    it('answers as_of any instant exactly what the raw feed said by then, days on market counted at that instant', async () => {
      const instants = [ANCHOR.getTime() - 150 * DAY + 7_777, ANCHOR.getTime() - 61 * DAY, ANCHOR.getTime() - 30 * DAY - 1, ANCHOR.getTime() - 2 * DAY, NOW.getTime()]
      let medians = 0
      for (const at of instants) {
        const when = new Date(at)
        medians += await expectMarketAt(market.records, at, {
          zones: (country) => zonesAsOf(market.zones, country, when),
          zone: (country, slug) => zoneAsOf(market.zones, country, slug, when),
        })
      }
      expect(medians).toBeGreaterThan(800)
    })

    it('answers the monthly history of a zone as its figures at each month\'s end', async () => {
      let known = 0
      for (const [country, slug] of [['GT', 'zona-1'], ['CR', 'zona-3'], ['BR', 'zona-7']] as const) {
        const found = await zoneHistory(market.zones, country, slug, 8, NOW)
        expect(found!.history.map((m) => m.month)).toEqual(['2025-10', '2025-11', '2025-12', '2026-01', '2026-02', '2026-03', '2026-04', '2026-05'])
        for (const month of found!.history) {
          const at = Date.parse(month.at)
          expect(month.at).toBe(month.month === '2026-05' ? NOW.toISOString() : new Date(Date.UTC(Number(month.month.slice(0, 4)), Number(month.month.slice(5)), 1) - 1).toISOString())
          const n = Number(slug.slice(5))
          const listed = market.records.some((r) => r.country === country && r.zone === `Zona ${n}` && Date.parse(r.observed_at) <= at)
          const active = activeAt(market.records, at).filter((l) => l.record.country === country && l.record.zone === `Zona ${n}`)
          const rents = ownFigures(active.filter((l) => l.record.operation === 'Renta'))
          const sales = saleFigures(active)
          expect(month).toEqual({
            month: month.month,
            at: month.at,
            listed,
            ...(listed
              ? { ...sales, median_rent_usd: rents.median_price_usd, median_rent_ppm2_usd: rents.median_ppm2_usd, median_dom: medianDom(active, at) }
              : { n_active: null, n_sale: null, median_ppm2_usd: null, median_price_usd: null, median_rent_usd: null, median_rent_ppm2_usd: null, median_dom: null }),
          })
          if (listed) known += 1
        }
        expect(found!.history.some((m) => !m.listed)).toBe(true)
      }
      expect(known).toBeGreaterThan(10)
    })

    it('serves each public listing\'s price in USD and per m² as the exact conversion, half cents rounded up', async () => {
      const latest = new Map(market.records.map((r) => [`${r.source}\n${r.source_id}`, r]))
      const halfCents = [...latest.values()].filter(isHalfCent)
      let compared = 0
      for (const country of COUNTRIES) {
        for (let offset = 0; ; offset += 200) {
          const page = await market.inventory.search(listingSearchOf({ country, limit: '200', offset: String(offset) }), NOW)
          for (const served of page.listings) {
            const record = [...latest.values()].find((r) => r.source === 'broker' && `${served.id}` === listingId(r.source, r.source_id))!
            const cents = usdCents(record.price, DEFAULT_FX[record.currency])
            const area = decimal(record.area_m2)
            expect([served.price_local, served.price_usd]).toEqual([record.price, cents / 100])
            // price per m²: cents × area.d / area.n, to cents, halves up.
            const [n, d] = [BigInt(cents) * area.d, area.n * 100n]
            expect(served.price_per_m2_usd).toBe(Number((2n * n * 100n + d) / (2n * d)) / 100)
            compared += 1
          }
          if (page.next_offset === null) break
        }
      }
      expect(compared).toBeGreaterThan(200)
      expect(halfCents.length).toBeGreaterThan(200)
    })

    it('answers null for an unknown zone and an impossible zone number', async () => {
      expect(await getZoneDetail(market.db, 'GT', 'zona-999', NOW)).toBeNull()
      expect(await getZoneDetail(market.db, 'GT', 'zona-99999999999999999999', NOW)).toBeNull()
      expect(await listZones(market.db, 'GT', NOW)).not.toEqual([])
    })
  })
}

/**
 * The cases an independent audit caught: version 1 rounded each listing's price per m² to the cent
 * before taking medians, so an even count averaged rounded values and came out a cent high.
 */
for (const target of databaseTargets('exact medians of price per m²')) {
  describe(`exact medians of price per m² on ${target.name}`, () => {
    /** USD listings in one zone: [operation, price in USD, area in m²]. */
    const zones: Record<string, [operation: 'Venta' | 'Renta', price: number, area: number][]> = {
      // Middle values 999.995 and 1000.005: exact median 1000.00; rounded first, 1000.00 and 1000.01 → 1000.01.
      'Zona 1': [['Venta', 90_000, 100], ['Venta', 99_999.5, 100], ['Venta', 100_000.5, 100], ['Venta', 110_000, 100]],
      // A rent zone: middle values 6.155 and 6.165, exact 6.16; rounded first, 6.16 and 6.17 → 6.17.
      'Zona 2': [['Renta', 500, 100], ['Renta', 615.5, 100], ['Renta', 616.5, 100], ['Renta', 700, 100]],
      // Thirds never end in decimal, yet their mean is exactly 333.335: rounds up to 333.34.
      'Zona 3': [['Venta', 900, 3], ['Venta', 1000, 3], ['Venta', 1000.01, 3], ['Venta', 1100, 3]],
      // Odd count, and rents beside the sales: n_active 5, n_sale 3, the medians over the 3 sales only.
      'Zona 4': [['Venta', 100_000, 80], ['Venta', 100_000.01, 80], ['Venta', 250_000, 90], ['Renta', 900, 80], ['Renta', 1_000, 75]],
    }
    const records = Object.entries(zones).flatMap(([zone, listings]) =>
      listings.map(([operation, price, area], i) =>
        aRecord({
          source_id: `${zone}-${i}`,
          country: 'PA',
          zone,
          operation,
          price,
          currency: 'USD',
          area_m2: area,
          bedrooms: 2,
          broker: { id: 'pa-brk-1', name: 'Corredora Panamá' },
          verified_at: '2026-03-01T11:00:00.000Z',
        }),
      ),
    )
    const now = new Date('2026-03-02T00:00:00.000Z')
    let close: () => Promise<void>
    let db: Db

    beforeAll(async () => {
      db = await target.open()
      const store = await openSqlEventStore(db)
      await ingestRecords(store, records, DEFAULT_FX)
      await new ProjectionRunner(db, store, [listingsProjection]).catchUp()
      close = async () => {
        await store.close()
        await db.close()
      }
    })
    afterAll(async () => close?.())

    it('serves the exact medians, rounded once, as the oracle computes them', async () => {
      const served = await listZones(db, 'PA', now)
      const byZone = Object.fromEntries(served.map((z) => [z.zone, z]))
      expect(byZone['Zona 1']).toMatchObject({ median_ppm2_usd: 1000, median_price_usd: 100_000, n_active: 4, n_sale: 4 })
      expect(byZone['Zona 3']).toMatchObject({ median_ppm2_usd: 333.34, n_sale: 4 })
      expect(byZone['Zona 4']).toMatchObject({ median_ppm2_usd: 1250, median_price_usd: 100_000.01, n_active: 5, n_sale: 3 })
      const rents = await getZoneDetail(db, 'PA', 'zona-2', now)
      expect(rents!.by_operation.find((o) => o.operation === 'Renta')).toEqual({ operation: 'Renta', n_active: 4, median_ppm2_usd: 6.16, median_price_usd: 616 })
      expect(rents).toMatchObject({ n_active: 4, n_sale: 0, median_ppm2_usd: null })

      // The same figures from the oracle's exact arithmetic, for every zone.
      const snapshots = records.map(snapshotOf)
      for (const zone of served) {
        const here = snapshots.filter((l) => l.record.zone === zone.zone)
        expect(zone).toMatchObject(
          (({ n_active, n_sale, median_ppm2_usd, median_price_usd }) => ({ n_active, n_sale, median_ppm2_usd, median_price_usd }))(saleFigures(here)),
        )
      }
      const detail = await getZoneDetail(db, 'PA', 'zona-4', now)
      expect(detail!.by_bedrooms.find((b) => b.bedrooms === '2')).toEqual({ bedrooms: '2', n_active: 5, n_sale: 3, median_ppm2_usd: 1250, median_price_usd: 100_000.01 })
    })

    it('publishes each listing\'s price per m² rounded once from the exact value', async () => {
      const inventory = await ListingInventory.open(db, { onLiveAdvanced: () => () => {} })
      const page = await inventory.search(listingSearchOf({ country: 'PA', zone: 'Zona 1', sort: 'price_asc' }), now)
      expect(page.listings.map((l) => l.price_per_m2_usd)).toEqual([900, 1000, 1000.01, 1100])
    })
  })
}
