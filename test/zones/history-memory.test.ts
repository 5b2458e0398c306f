import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generationTables } from '../../projections/engine/generations.ts'
import { liveTables } from '../../projections/engine/live-tables.ts'
import { listingsProjection, type ListingsTables } from '../../projections/listings/projection.ts'
import { countryZoneFactsAt } from '../../projections/listings/zone-rows.ts'
import type { Figures } from '../../src/domain/market/zone-statistics.ts'
import type { FeedRecord } from '../../src/domain/listings/feed.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import type { Country } from '../../src/domain/market/vocabulary.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { databaseTargets } from '../support/databases.ts'
import { aRecord, ANCHOR, type Market, openMarket } from '../support/market.ts'

/**
 * Answers as of an instant come from the history held in memory (zone-history.ts); the listings the
 * SQL of `countryZoneFactsAt` selects are the reference the listings held in memory must equal: both
 * go through the same statistics, so their figures must be equal, figure for figure, also after the history
 * followed new events (price changes, delistings, a zone move) and for prices per m² that differ only
 * far below a cent, on either side of a half cent.
 */
const sale = (id: string, price: number, area: number, overrides: Partial<FeedRecord> = {}) =>
  aRecord({
    source_id: id,
    country: 'CR',
    zone: 'Zona 9',
    price,
    currency: 'USD',
    area_m2: area,
    observed_at: '2026-04-01T00:00:00.000Z',
    ...overrides,
  })

// 1000.005 exactly at area 100: just below it, just above it (the median of three), further above.
const nearHalfCent = [sale('a', 100_000.5, 100.000000000001), sale('b', 100_000.5, 99.9999999999999), sale('c', 100_000.5, 99.9999999999998)]

const later = [
  sale('b', 100_000.7, 99.9999999999999, { observed_at: '2026-04-10T00:00:00.000Z' }),
  sale('c', 100_000.5, 99.9999999999998, { status: 'delisted', observed_at: '2026-04-12T00:00:00.000Z' }),
  sale('a', 100_000.5, 100.000000000001, { zone: 'Zona 8', observed_at: '2026-04-15T00:00:00.000Z' }),
  sale('d', 100_000.5, 100, { observed_at: '2026-04-20T00:00:00.000Z' }),
]

const instants = ['2026-03-15T00:00:00.000Z', '2026-04-01T00:00:00.000Z', '2026-04-11T00:00:00.000Z', '2026-04-16T12:00:00.000Z', ANCHOR.toISOString()].map(
  (t) => new Date(t),
)

for (const target of databaseTargets('history in memory')) {
  describe(`answers as of an instant from memory on ${target.name}`, () => {
    let market: Market
    let t: ListingsTables
    beforeAll(async () => {
      market = await openMarket(target, 120, 'history-memory', (records) => [...records, ...nearHalfCent])
      t = generationTables(listingsProjection, await liveTables(market.db).of(listingsProjection)) as ListingsTables
    })
    afterAll(async () => {
      await market?.close()
    })

    const sameAsSql = async () => {
      for (const country of ['CR', 'GT'] as Country[]) {
        for (const at of instants) {
          for (const figures of ['detail', 'summary', 'history'] as Figures[]) {
            const fromMemory = await market.zones.factsAt(country, at, undefined, figures)
            expect(fromMemory).toEqual(await countryZoneFactsAt(market.db, t, country, at, undefined, figures))
          }
          const zone9 = await market.zones.factsAt(country, at, 9, 'detail')
          expect(zone9).toEqual(await countryZoneFactsAt(market.db, t, country, at, 9, 'detail'))
        }
      }
    }

    it('equals the SQL reference at every instant, a median just above a half cent rounded up', async () => {
      await sameAsSql()
      const zone9 = (await market.zones.factsAt('CR', new Date('2026-04-02T00:00:00.000Z'), 9)).get(9)!
      expect(zone9).toMatchObject({ n_sale: 3, median_ppm2_usd: 1000.01 })
    })

    it('still equals it after following price changes, a delisting, a zone move and a new listing', async () => {
      await ingestRecords(market.store, later, DEFAULT_FX)
      await market.settle()
      await sameAsSql()
      const zone8 = async (at: string) => (await market.zones.factsAt('CR', new Date(at), 8)).get(8)?.n_sale ?? 0
      expect(await zone8('2026-04-16T00:00:00.000Z')).toBe((await zone8('2026-04-14T00:00:00.000Z')) + 1)
    })
  })
}
