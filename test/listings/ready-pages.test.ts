import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { daysOnMarketChangesAt } from '../../src/domain/market/statistics.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { listingSearchOf } from '../../src/listings/search-query.ts'
import { ANCHOR, aRecord, type Market, openMarket } from '../support/market.ts'

/** Listing pages serialised once: each must still be the page of the request time and of the events applied. */
describe('listing pages kept as bytes', () => {
  let market: Market
  beforeAll(async () => {
    market = await openMarket({ name: 'pglite', open: () => openPglite(), create: () => Promise.reject(new Error('unused')) }, 150, 'ready-pages')
  })
  afterAll(async () => market?.close())

  const search = listingSearchOf({ country: 'GT', limit: '20' })
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)
  const fresh = async (now: Date) => JSON.stringify(await market.inventory.search(search, now))

  it('the same bytes until a listing on the page gains a day, then the page of that time', async () => {
    let now = new Date(ANCHOR.getTime() + 86_400_000)
    const first = text((await market.inventory.searchBytes(search, now)).bytes)
    expect(first).toBe(await fresh(now))
    const page = JSON.parse(first) as { listings: { listed_at: string }[] }
    const changes = Math.min(...page.listings.map((l) => daysOnMarketChangesAt(now.getTime(), Date.parse(l.listed_at))))
    now = new Date(changes - 1)
    expect(text((await market.inventory.searchBytes(search, now)).bytes)).toBe(first)
    now = new Date(changes)
    const after = text((await market.inventory.searchBytes(search, now)).bytes)
    expect(after).not.toBe(first)
    expect(after).toBe(await fresh(now))
  })

  it('the page of the events applied: a new listing shows at once after they are', async () => {
    const now = new Date(ANCHOR.getTime() + 2 * 86_400_000)
    const before = JSON.parse(text((await market.inventory.searchBytes(search, now)).bytes)) as { total: number }
    await ingestRecords(market.store, [aRecord({ source_id: 'ready-pages-1', country: 'GT', listed_at: ANCHOR.toISOString(), verified_at: ANCHOR.toISOString(), observed_at: ANCHOR.toISOString() })], DEFAULT_FX)
    await market.settle()
    const after = text((await market.inventory.searchBytes(search, now)).bytes)
    expect((JSON.parse(after) as { total: number }).total).toBe(before.total + 1)
    expect(after).toBe(await fresh(now))
  })
})
