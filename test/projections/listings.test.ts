import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listingsProjection } from '../../projections/listings/projection.ts'
import { liveTables } from '../../projections/engine/live-tables.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import { diffProjection } from '../../src/operator/projection-diff.ts'
import type { Db } from '../../src/db/port.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { listingId } from '../../src/domain/listings/listing.ts'
import { listingSearchOf } from '../../src/listings/search-query.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { COUNTRIES } from '../../src/domain/market/vocabulary.ts'
import { getZoneDetail, listZones } from '../support/sql-zone-answers.ts'
import { databaseTargets } from '../support/databases.ts'
import { sqlListingSearch } from '../support/sql-listing-search.ts'
import { ANCHOR, aRecord, type Market, openMarket } from '../support/market.ts'

const NOW = new Date(ANCHOR.getTime() + 3_600_000)

/** Everything the zone endpoints serve, for every country and zone. */
async function zoneStatistics(db: Db): Promise<string> {
  const out: unknown[] = []
  for (const country of COUNTRIES) {
    const zones = await listZones(db, country, NOW)
    out.push(zones)
    for (const zone of zones) out.push(await getZoneDetail(db, country, zone.slug, NOW))
  }
  return JSON.stringify(out)
}

/** The live generation's table names. */
const live = async (db: Db) => (await liveTables(db).of(listingsProjection)).tables

const tables = async (db: Db) => {
  const t = await live(db)
  return JSON.stringify([
    await db.query(`select * from ${t.listings} order by listing_id`),
    await db.query(`select * from ${t.history} order by listing_id, since_revision`),
    await db.query(`select * from ${t.zones} order by country, zone_no`),
    await db.query(`select * from ${t.touches} order by country, zone_no, at`),
    await db.query(`select * from ${t.changes} order by position`),
  ])
}

for (const target of databaseTargets('listings projection')) {
  describe(`listings projection on ${target.name}`, () => {
    let market: Market
    beforeAll(async () => {
      market = await openMarket(target, 300, 'replay')
    })
    afterAll(async () => market?.close())

    it('rebuilds byte-identical read models and zone statistics from the events', async () => {
      const statistics = await zoneStatistics(market.db)
      const rows = await tables(market.db)
      const page = JSON.stringify(await sqlListingSearch(market.db, listingSearchOf({ limit: '200' }), NOW))

      await market.runner.rebuild(['listings'])

      expect(await zoneStatistics(market.db)).toBe(statistics)
      expect(await tables(market.db)).toBe(rows)
      expect(JSON.stringify(await sqlListingSearch(market.db, listingSearchOf({ limit: '200' }), NOW))).toBe(page)
    })

    it('applies a batch with the same effect as its events one at a time', async () => {
      const { db, store, runner } = market
      // Listings that go through every kind of event, several events each, within the market's time range.
      const lines = Array.from({ length: 40 }, (_, k) => {
        const base = aRecord({ source_id: `batch-${k}`, zone: `Zona ${1 + (k % 5)}`, price: 1_000_000 + k * 1000 })
        const day = (d: number) => `2026-03-0${d}T00:00:00.000Z`
        const moved = { ...base, zone: `Zona ${6 + (k % 3)}`, observed_at: day(2) }
        const retitled = { ...moved, title: `Apartamento ${k}`, verified_at: day(3), observed_at: day(3) }
        const repriced = { ...retitled, price: 900_000 + k * 1000, area_m2: 90, observed_at: day(4) }
        const delisted = { ...repriced, status: 'delisted' as const, observed_at: day(5) }
        const relisted = { ...repriced, operation: 'Renta' as const, price: 9_000, observed_at: day(6) }
        return [base, moved, retitled, repriced, delisted, relisted]
      }).flat()
      await ingestRecords(store, lines, DEFAULT_FX)
      // Built again in batches, the market's listings first seen in a batch are folded there.
      await runner.rebuild(['listings'])
      const batched = await tables(db)

      // The old way: every event on its own, through the statements of `apply`.
      const oneByOne = new ProjectionRunner(db, store, [{ ...listingsProjection, applyBatch: undefined }])
      await oneByOne.rebuild(['listings'], { hold: true })
      const diff = await diffProjection(db, listingsProjection, NOW)
      expect(diff.summary).toMatch(/: 0 figure\(s\) differ in 0 of [1-9]\d* zones; 0 of [1-9]\d* public listings differ$/)
      await oneByOne.promote('listings')
      expect(await tables(db)).toBe(batched)
    })

    it('takes times from the events, not from when the projection ran', async () => {
      const latest = market.records.reduce((max, r) => (r.observed_at > max ? r.observed_at : max), '')
      const [row] = await market.db.query<{ latest: Date }>(`select max(updated_at) as latest from ${(await live(market.db)).zones}`)
      expect(new Date(row!.latest).toISOString()).toBe(latest)
    })

    it('follows a listing through a zone move, a price change, delisting, relisting and a new title', async () => {
      const { db, store, runner } = market
      const first = aRecord({ source_id: 'mover', country: 'HN', zone: 'Zona 3', currency: 'USD', price: 100_000, area_m2: 80 })
      await ingestRecords(store, [first], DEFAULT_FX)
      const at = '2026-03-02T00:00:00.000Z'
      const moved = { ...first, zone: 'Zona 4', price: 90_000, verified_at: at, observed_at: at }
      const delisted = { ...moved, status: 'delisted' as const, observed_at: '2026-03-03T00:00:00.000Z' }
      const back = { ...moved, observed_at: '2026-03-04T00:00:00.000Z' }
      const retitled = { ...back, title: 'Casa remodelada', observed_at: '2026-03-05T00:00:00.000Z' }
      await ingestRecords(store, [moved, delisted, back, retitled], DEFAULT_FX)
      await runner.catchUp()

      const id = listingId('broker', 'mover')
      const t = await live(db)
      const [listing] = await db.query(
        `select zone_no, title, status, public, price_usd::text, round(ppm2_usd, 2)::text as ppm2_usd from ${t.listings} where listing_id = $1`,
        [id],
      )
      expect(listing).toEqual({
        zone_no: 4,
        title: 'Casa remodelada',
        status: 'active',
        public: true,
        price_usd: '90000.00',
        ppm2_usd: '1125.00',
      })
      const history = await db.query<{ zone_no: number; price_usd: string; valid_from: Date; valid_to: Date | null }>(
        `select zone_no, price_usd::text, valid_from, valid_to from ${t.history} where listing_id = $1 order by since_revision`,
        [id],
      )
      const iso = (time: Date | null) => time && new Date(time).toISOString()
      expect(history.map((h) => [h.zone_no, h.price_usd, iso(h.valid_from), iso(h.valid_to)])).toEqual([
        [3, '100000.00', '2026-03-01T12:00:00.000Z', '2026-03-02T00:00:00.000Z'],
        // The move and the price change of one line: an empty interval in between, active at no time.
        [4, '100000.00', '2026-03-02T00:00:00.000Z', '2026-03-02T00:00:00.000Z'],
        [4, '90000.00', '2026-03-02T00:00:00.000Z', '2026-03-03T00:00:00.000Z'],
        // A new title changes no statistic: the interval stays open.
        [4, '90000.00', '2026-03-04T00:00:00.000Z', null],
      ])
    })
  })
}
