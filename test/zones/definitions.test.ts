import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FeedRecord } from '../../src/domain/listings/feed.ts'
import { listingId } from '../../src/domain/listings/listing.ts'
import { listingRoutes } from '../../src/listings/routes.ts'
import { listingSearchOf } from '../../src/listings/search-query.ts'
import { zoneRoutes } from '../../src/zones/routes.ts'
import { databaseTargets } from '../support/databases.ts'
import { aRecord, type Get, type Market, mountedOn, openMarket } from '../support/market.ts'

/**
 * The nine points an independent implementer had to guess, one test each, as docs/statistics.md
 * now defines them. The market's clock (latest listing event) is CLOCK; "then" is 30 × 24 h before.
 * Answers are served at the day after the anchor (2026-05-02, see mountedOn).
 */
const CLOCK = '2026-04-30T00:00:00.000Z'
const THEN = '2026-03-31T00:00:00.000Z'
const plusMs = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString()

const pa = (id: string, zone: string, overrides: Partial<FeedRecord> = {}): FeedRecord =>
  aRecord({
    source_id: id,
    country: 'PA',
    zone,
    currency: 'USD',
    price: 200_000,
    listed_at: '2026-03-01T00:00:00.000Z',
    observed_at: '2026-03-01T00:00:00.000Z',
    verified_at: '2026-03-01T00:00:00.000Z',
    ...overrides,
  })

const records: FeedRecord[] = [
  // Zona 1: at the 30-day point exactly.
  pa('at-then', 'Zona 1', { listed_at: THEN, observed_at: THEN, verified_at: THEN }),
  pa('delisted-at-then', 'Zona 1'),
  pa('delisted-at-then', 'Zona 1', { observed_at: THEN, status: 'delisted' }),
  pa('after-then', 'Zona 1', { listed_at: plusMs(THEN, 1), observed_at: plusMs(THEN, 1), verified_at: plusMs(THEN, 1) }),
  pa('long-active', 'Zona 1'),
  pa('rent', 'Zona 1', { operation: 'Renta', price: 1_500 }),
  // Zona 2: listed before "then", first seen after it.
  pa('listed-before-seen-after', 'Zona 2', { listed_at: '2026-02-01T00:00:00.000Z', observed_at: '2026-04-10T00:00:00.000Z', verified_at: null }),
  pa('seen-before', 'Zona 2'),
  // Zona 3 → Zona 4: a move at the market's clock.
  pa('mover', 'Zona 3', { observed_at: '2026-04-01T00:00:00.000Z' }),
  pa('mover', 'Zona 4', { observed_at: CLOCK }),
  pa('stays', 'Zona 3', { observed_at: '2026-04-02T00:00:00.000Z' }),
  // Zona 5: the median listing is 10.05 days old at the request time (2026-05-02).
  pa('dom-old', 'Zona 5', { listed_at: '2026-04-01T00:00:00.000Z', observed_at: '2026-04-01T00:00:00.000Z' }),
  pa('dom-median', 'Zona 5', { listed_at: '2026-04-21T22:48:00.000Z', observed_at: '2026-04-21T22:48:00.000Z', verified_at: null }),
  pa('dom-new', 'Zona 5', { listed_at: '2026-04-25T00:00:00.000Z', observed_at: '2026-04-25T00:00:00.000Z' }),
  // Zona 6: 1 broker and 31 scraped listings, shares 312.5 and 9687.5 ten-thousandths: a tie.
  pa('mix-broker', 'Zona 6'),
  ...Array.from({ length: 31 }, (_, i) => pa(`mix-scraped-${i}`, 'Zona 6', { source: 'scraped', broker: null, verified_at: null })),
  // Zona 7: three public listings alike in price and listing time.
  ...['tie-a', 'tie-b', 'tie-c'].map((id) => pa(id, 'Zona 7', { listed_at: '2026-04-15T00:00:00.000Z', observed_at: '2026-04-15T00:00:00.000Z', verified_at: '2026-04-15T00:00:00.000Z' })),
  // Guatemala: the audit's exact half cent.
  aRecord({ source_id: 'half-cent', price: 2_464_500.03875, verified_at: '2026-03-01T11:00:00.000Z', observed_at: '2026-03-01T12:00:00.000Z' }),
]

type Zone = Record<string, unknown> & { change_30d: Record<string, number | null>; source_mix: { source: string; n: number; share: number }[] }

for (const target of databaseTargets('statistics definitions')) {
  describe(`the definitions of docs/statistics.md on ${target.name}`, () => {
    let market: Market
    let zones: Get
    let listings: Get
    const zone = async (slug: string, country = 'PA') => (await zones(`/zone/${slug}?country=${country}`)).body as Zone
    beforeAll(async () => {
      market = await openMarket(target, 112, 'definitions', () => records)
      zones = mountedOn(market, zoneRoutes)
      listings = mountedOn(market, listingRoutes)
    })
    afterAll(async () => market?.close())

    it('1. converts a price to USD exactly, rounded once to cents, half away from zero', async () => {
      const { body } = await listings('/listings?country=GT')
      expect((body.listings as Record<string, unknown>[]).map((l) => [l.price_local, l.price_usd])).toEqual([[2_464_500.03875, 318_000.01]])
    })

    it('2. rounds median_dom half away from zero: 10.05 days is 10.1', async () => {
      expect(await zone('zona-5')).toMatchObject({ n_active: 3, median_dom: 10.1 })
    })

    it('3. gives the unit of a tie of largest remainders to the earlier source: broker', async () => {
      expect((await zone('zona-6')).source_mix).toEqual([
        { source: 'broker', n: 1, share: 0.0313 },
        { source: 'scraped', n: 31, share: 0.9687 },
      ])
    })

    it('4. counts a zone move for the updated_at of both the zone left and the zone entered', async () => {
      expect(await zone('zona-3')).toMatchObject({ n_active: 1, updated_at: CLOCK })
      expect(await zone('zona-4')).toMatchObject({ n_active: 1, updated_at: CLOCK })
    })

    it('5. counts the sales behind the 30-day medians: n_sale_now and n_sale_then', async () => {
      expect((await zone('zona-1')).change_30d).toMatchObject({ n_active_now: 4, n_sale_now: 3, n_active_then: 3, n_sale_then: 2 })
    })

    it('6. breaks ties by listing id: descending for newest and price_desc, ascending for price_asc', async () => {
      const ids = ['tie-a', 'tie-b', 'tie-c'].map((id) => listingId('broker', id)).sort()
      const order = async (sort: string) =>
        ((await listings(`/listings?country=PA&zone=Zona%207&sort=${sort}`)).body.listings as { id: string }[]).map((l) => l.id)
      expect(await order('newest')).toEqual([...ids].reverse())
      expect(await order('price_asc')).toEqual(ids)
      expect(await order('price_desc')).toEqual([...ids].reverse())
    })

    it('7. counts a listing observed exactly at the 30-day point as active then, and one delisted exactly then as gone', async () => {
      const detail = await zone('zona-1')
      // at-then, long-active and the rent; not delisted-at-then, not after-then (1 ms late).
      expect(detail.change_30d).toMatchObject({ n_active_then: 3 })
      expect(detail.n_active).toBe(4)
    })

    it('8. counts a listing from when the feed first showed it (observed_at), not from its listed_at', async () => {
      expect((await zone('zona-2')).change_30d).toMatchObject({ n_active_now: 2, n_active_then: 1 })
    })

    it('9. gives 0 days on market to a listing, and 0 median days to a zone, listed after the time asked', async () => {
      const before = new Date('2026-04-10T00:00:00.000Z')
      const page = await market.inventory.search(listingSearchOf({ country: 'PA', zone: 'Zona 7' }), before)
      expect(page.listings.map((l) => l.days_on_market)).toEqual([0, 0, 0])
      expect(await market.zones.zone('PA', 'zona-7', before)).toMatchObject({ n_active: 3, median_dom: 0 })
      expect(((await listings('/listings?country=PA&zone=Zona%207')).body.listings as { days_on_market: number }[])[0]!.days_on_market).toBe(17)
    })
  })
}
