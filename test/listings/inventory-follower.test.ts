import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listingsProjection } from '../../projections/listings/projection.ts'
import { generationTables } from '../../projections/engine/generations.ts'
import { liveTables } from '../../projections/engine/live-tables.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import type { Db } from '../../src/db/port.ts'
import { generateDemoFeed } from '../../src/domain/demo/market.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import type { FeedRecord } from '../../src/domain/listings/feed.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { ListingInventory } from '../../projections/listings/inventory.ts'
import { listingSearchOf } from '../../src/listings/search-query.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { COUNTRIES } from '../../src/domain/market/vocabulary.ts'
import { databaseTargets } from '../support/databases.ts'
import { eventually } from '../support/eventually.ts'
import { ANCHOR, type Market, openMarket } from '../support/market.ts'
import { sqlListingSearch } from '../support/sql-listing-search.ts'

const NOW = new Date(ANCHOR.getTime() + 3 * 86_400_000 + 5 * 3_600_000)
const LATER = '2026-05-01T06:00:00.000Z'

/** What the inventory serves and what SQL answers from the live generation, as the JSON bytes a client gets. */
const servedAndSql = async (inventory: ListingInventory, db: Db, raw: Record<string, string>) => {
  const search = listingSearchOf(raw)
  return [JSON.stringify(await inventory.search(search, NOW)), JSON.stringify(await sqlListingSearch(db, search, NOW))] as const
}

/** Searches that cover each country, filter and order, with deep pages. */
const sweep: Record<string, string>[] = COUNTRIES.flatMap((country): Record<string, string>[] => [
  { country, limit: '200' },
  { country, sort: 'price_asc', limit: '200' },
  { country, sort: 'price_desc', limit: '200', offset: '15' },
  { country, zone: 'Zona 2', limit: '50' },
  { country, operation: 'Renta', sort: 'price_asc' },
  { country, property_type: 'Casa', sort: 'price_desc', price_max: '250000' },
  { country, price_min: '100000', price_max: '300000', limit: '100' },
])

const expectSameAsSql = async (inventory: ListingInventory, db: Db, searches = sweep) => {
  for (const raw of searches) {
    const [served, sql] = await servedAndSql(inventory, db, raw)
    expect(served, JSON.stringify(raw)).toBe(sql)
  }
}

const sameAsSql = async (inventory: ListingInventory, db: Db) => {
  for (const raw of sweep) {
    const [served, sql] = await servedAndSql(inventory, db, raw)
    if (served !== sql) return false
  }
  return true
}

/** The market's listings as the feed would send them next: same record, later observation. */
const next = (record: FeedRecord, overrides: Partial<FeedRecord>): FeedRecord => ({ ...record, observed_at: LATER, ...overrides })

/** One of each change that moves a listing in, out or within the inventory, plus new listings. */
function changesOf(records: readonly FeedRecord[], tag: string): FeedRecord[] {
  const latest = [...new Map(records.map((r) => [`${r.source}/${r.source_id}`, r])).values()]
  const isPublic = (r: FeedRecord) => r.source === 'broker' && r.status === 'active' && r.verified_at !== null
  const shown = latest.filter(isPublic)
  const unverified = latest.filter((r) => r.source === 'broker' && r.status === 'active' && r.verified_at === null)
  const delisted = latest.filter((r) => r.source === 'broker' && r.status === 'delisted' && r.verified_at !== null)
  expect(shown.length).toBeGreaterThan(40)
  expect(unverified.length).toBeGreaterThan(2)
  return [
    ...shown.slice(0, 10).map((r, i) => next(r, { price: Math.round(r.price * (i % 2 === 0 ? 0.9 : 1.2)) })),
    ...shown.slice(10, 15).map((r) => next(r, { status: 'delisted' })),
    ...shown.slice(15, 20).map((r) => next(r, { zone: r.zone === 'Zona 1' ? 'Zona 2' : 'Zona 1', property_type: 'Casa' })),
    ...shown.slice(20, 22).map((r) => next(r, { listed_at: '2026-04-30T23:59:59.999Z' })),
    ...unverified.slice(0, 3).map((r) => next(r, { verified_at: '2026-05-01T05:00:00.000Z' })),
    ...delisted.slice(0, 3).map((r) => next(r, { status: 'active' })),
    ...shown.slice(30, 34).map((r, i) =>
      next(r, { source_id: `${tag}-new-${i}`, listed_at: '2026-05-01T04:00:00.000Z', verified_at: '2026-05-01T04:00:00.000Z' }),
    ),
  ]
}

for (const target of databaseTargets('listing inventory')) {
  describe(`listing inventory on ${target.name}`, () => {
    let market: Market
    let listings: { country: string; zone_no: number; operation: string; property_type: string; price: string }[]
    beforeAll(async () => {
      market = await openMarket(target, 1000, 'inventory')
      const { tables } = await liveTables(market.db).of(listingsProjection)
      listings = await market.db.query(
        `select country, zone_no, operation, property_type, price_usd::text as price from ${tables.listings} where public order by listing_id`,
      )
    })
    afterAll(async () => market?.close())

    it('answers any search byte for byte as SQL does over the same listings at the same time', async () => {
      const cents = (text: string) => Math.round(Number(text) * 100)
      /** A price bound near a listed price: on it, a cent either side, or between two cents. */
      const near = (price: string) =>
        fc.constantFrom(-1, 0, 0, 1, 0.5, 0.001, -0.999999).map((shift) => {
          const value = (cents(price) + shift) / 100
          return value < 0 ? '0' : value.toFixed(shift % 1 === 0 ? 2 : 6)
        })
      // Searches around one listing (each filter either its value, another value or absent), so that most match something.
      // Half of them around prices whose cents floating point cannot compute (1066.13 × 100 = 106613.00000000001).
      const inexact = listings.filter((l) => Number(l.price) * 100 !== cents(l.price))
      expect(inexact.length).toBeGreaterThan(3)
      const search = fc.oneof(fc.constantFrom(...listings), fc.constantFrom(...inexact)).chain((l) => {
        const maybe = <T>(own: T, other: fc.Arbitrary<T>) => fc.option(fc.oneof(fc.constant(own), fc.constant(own), other), { nil: undefined, freq: 2 })
        return fc.record({
          country: fc.oneof(fc.constant(l.country), fc.constant(l.country.toLowerCase()), fc.constantFrom(...COUNTRIES)),
          zone: maybe(`Zona ${l.zone_no}`, fc.integer({ min: 1, max: 12 }).map((n) => `zona ${n}`)),
          operation: maybe(l.operation, fc.constantFrom('Venta', 'renta')),
          property_type: maybe(l.property_type, fc.constantFrom('Apartamento', 'Casa', 'Terreno', 'Oficina', 'Local')),
          price_min: fc.option(fc.oneof(near(l.price), fc.integer({ min: 0, max: 200_000 }).map(String)), { nil: undefined, freq: 2 }),
          price_max: fc.option(fc.oneof(near(l.price), fc.integer({ min: 0, max: 2_000_000 }).map(String)), { nil: undefined, freq: 2 }),
          sort: fc.constantFrom('newest', 'price_asc', 'price_desc'),
          limit: fc.integer({ min: 1, max: 200 }).map(String),
          offset: fc
            .oneof({ arbitrary: fc.integer({ min: 0, max: 5 }), weight: 6 }, { arbitrary: fc.integer({ min: 0, max: 300 }), weight: 2 }, { arbitrary: fc.constant(10_000), weight: 1 })
            .map(String),
        })
      })
      let nonEmpty = 0
      await fc.assert(
        fc.asyncProperty(search, async (generated) => {
          const raw = Object.fromEntries(Object.entries(generated).filter(([, v]) => v !== undefined)) as Record<string, string>
          if (raw.price_min !== undefined && raw.price_max !== undefined && Number(raw.price_min) > Number(raw.price_max)) {
            ;[raw.price_min, raw.price_max] = [raw.price_max, raw.price_min]
          }
          const [served, sql] = await servedAndSql(market.inventory, market.db, raw)
          expect(served).toBe(sql)
          if (JSON.parse(served).count > 0) nonEmpty += 1
        }),
        { numRuns: 300 },
      )
      expect(nonEmpty, 'searches with a non-empty page').toBeGreaterThan(60)
      await expectSameAsSql(market.inventory, market.db)
    })

    it('answers concurrent pages as SQL does when only a few records fit in memory', async () => {
      const small = await ListingInventory.open(market.db, market.runner, { recordCapacity: 7 })
      try {
        // Overlapping pages, in waves: a page partly in memory waits for the rest while others evict it.
        const searches = ['GT', 'CR'].flatMap((country) =>
          ['newest', 'price_asc'].flatMap((sort) => [0, 2, 4, 6, 8].map((offset) => ({ country, sort, offset: String(offset), limit: '6' }))),
        )
        for (let wave = 0; wave < 3; wave++) {
          const served = await Promise.all(searches.map((raw) => small.search(listingSearchOf(raw), NOW)))
          for (const [i, raw] of searches.entries()) {
            expect(JSON.stringify(served[i]), JSON.stringify(raw)).toBe(JSON.stringify(await sqlListingSearch(market.db, listingSearchOf(raw), NOW)))
          }
        }
        expect(small.size.records).toBeLessThanOrEqual(7)
      } finally {
        small.stop()
      }
    })

    it('includes a listing priced exactly at a decimal bound that floating point would miss (0.07 × 100 ≠ 7)', async () => {
      const listing = market.records.find((r) => r.source === 'broker' && r.status === 'active' && r.verified_at !== null && r.country === 'GT')!
      await ingestRecords(market.store, [next(listing, { source_id: 'seven-cents', price: 0.07, currency: 'USD' })], DEFAULT_FX)
      await market.settle()
      const raw = { country: 'GT', price_min: '0.07', price_max: '0.07' }
      const [served, sql] = await servedAndSql(market.inventory, market.db, raw)
      expect(served).toBe(sql)
      expect(JSON.parse(served)).toMatchObject({ total: 1, listings: [{ price_usd: 0.07 }] })
    })

    it('follows price changes, delistings, relistings, verifications, moves and new listings applied by its runner', async () => {
      await ingestRecords(market.store, changesOf(market.records, 'own'), DEFAULT_FX)
      await market.settle()
      await expectSameAsSql(market.inventory, market.db)
    })

    it('serves a promoted generation from the moment it is live, and the previous one again after a rollback', async () => {
      const { runner, inventory, db } = market
      const [built] = await runner.rebuild(['listings'], { hold: true })
      // The held generation differs visibly from the live one: one public listing renamed in its table only.
      const [version, build] = built!.generation.slice(1).split('.').map(Number)
      const heldTable = generationTables(listingsProjection, { version: version!, build: build! }).listings
      const [renamed] = await db.query<{ listing_id: string }>(
        `update ${heldTable} set title = 'RENAMED in the held generation'
          where listing_id = (select min(listing_id) from ${heldTable} where public and country = 'GT') returning listing_id`,
      )
      expect(renamed).toBeDefined()
      const titleServed = async () => {
        const page = await inventory.search(listingSearchOf({ country: 'GT', limit: '200', offset: '0', sort: 'price_asc' }), NOW)
        const all = [page]
        for (let offset = 200; offset < page.total; offset += 200) {
          all.push(await inventory.search(listingSearchOf({ country: 'GT', limit: '200', offset: String(offset), sort: 'price_asc' }), NOW))
        }
        return all.flatMap((p) => p.listings).find((l) => l.id === renamed!.listing_id)?.title
      }
      const before = await titleServed()

      await runner.promote('listings')
      // No settling: a request right after the switch already sees the new generation.
      expect(await titleServed()).toBe('RENAMED in the held generation')
      await expectSameAsSql(inventory, db)

      await runner.rollback('listings')
      expect(await titleServed()).toBe(before)
      await expectSameAsSql(inventory, db)
    })
  })

  describe(`listing inventory on ${target.name}, changes applied by another process`, () => {
    it('follows what another runner on another connection applied', async () => {
      const shared = await target.create()
      const dbA = await shared.connect()
      const dbB = await shared.connect()
      const storeA = await openSqlEventStore(dbA)
      const storeB = await openSqlEventStore(dbB)
      const runnerA = new ProjectionRunner(dbA, storeA, [listingsProjection])
      const runnerB = new ProjectionRunner(dbB, storeB, [listingsProjection])
      const errors: unknown[] = []
      try {
        const records = generateDemoFeed({ seed: 'elsewhere', listings: 300, anchor: ANCHOR })
        await ingestRecords(storeA, records, DEFAULT_FX)
        await runnerA.start((error) => errors.push(error))
        const inventory = await ListingInventory.open(dbA, runnerA, { onError: (error) => errors.push(error) })
        await expectSameAsSql(inventory, dbA)

        // Process B ingests and applies; process A's runner only finds the events already applied.
        await ingestRecords(storeB, changesOf(records, 'elsewhere'), DEFAULT_FX)
        await runnerB.catchUp()
        await eventually('the inventory of process A answers as SQL does', () => sameAsSql(inventory, dbA))
        await inventory.settled()
        await expectSameAsSql(inventory, dbA)
        inventory.stop()
        expect(errors).toEqual([])
      } finally {
        await runnerA.stop()
        await runnerB.stop()
        await storeA.close()
        await storeB.close()
        await dbA.close()
        await dbB.close()
        await shared.dispose()
      }
    })
  })
}
