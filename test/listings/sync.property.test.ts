import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FeedRecord } from '../../src/domain/listings/feed.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { listingRoutes, syncRoutes } from '../../src/listings/routes.ts'
import { databaseTargets } from '../support/databases.ts'
import { aRecord, type Get, type Market, mountedFetch, mountedOn, openMarket } from '../support/market.ts'

/**
 * The promise of "Staying in sync" (docs/api.md), over generated feeds: an export, then every change
 * after its cursor, read by a client while the feed goes on being ingested, gives exactly the
 * inventory /listings shows at the end — no change of a listing the client does not hold (a gap), no
 * listing listed twice (a duplicate). Listings move between two zones and two countries, change
 * price and title, are verified late, delisted and relisted, and some are scraped (never public).
 */

const COUNTRIES = ['CR', 'PA'] as const
type Line = { listing: number; country: (typeof COUNTRIES)[number]; zone: 0 | 1; price: number; title: number; verified: boolean; delisted: boolean }

const line = fc.record({
  listing: fc.integer({ min: 0, max: 5 }),
  country: fc.constantFrom(...COUNTRIES),
  zone: fc.constantFrom(0 as const, 1 as const),
  price: fc.constantFrom(100_000, 120_000, 150_000),
  title: fc.integer({ min: 0, max: 1 }),
  verified: fc.boolean(),
  delisted: fc.boolean(),
})
/** A feed: lines before the export, lines after it; which place the client follows. */
const feed = fc.record({
  before: fc.array(line, { maxLength: 12 }),
  after: fc.array(line, { minLength: 1, maxLength: 25 }),
  follows: fc.constantFrom('zone', 'country'),
})

type Change = { kind: string; listing_id: string; listing?: Record<string, unknown> }

for (const target of databaseTargets('snapshot and changes')) {
  describe(`an export and its changes on ${target.name}`, () => {
    let market: Market
    let changes: Get
    let pages: Get
    let fetch: ReturnType<typeof mountedFetch>
    let run = 0
    let minute = 0
    beforeAll(async () => {
      market = await openMarket(target, 112, 'sync')
      changes = mountedOn(market, syncRoutes)
      pages = mountedOn(market, listingRoutes)
      fetch = mountedFetch(market, syncRoutes)
    })
    afterAll(async () => market?.close())

    /** Run `r`'s feed line (its own listings and zones: runs never see each other's). */
    const record = (r: number, l: Line): FeedRecord => {
      const at = new Date(Date.UTC(2026, 3, 21) + ++minute * 60_000).toISOString()
      const scraped = l.listing === 5
      return aRecord({
        source: scraped ? 'scraped' : 'broker',
        source_id: `sync-${r}-${l.listing}`,
        country: l.country,
        zone: `Zona ${900 + 2 * r + l.zone}`,
        currency: 'USD',
        price: l.price,
        title: `Apartamento ${l.title}`,
        ...(scraped ? { broker: null } : {}),
        verified_at: l.verified ? '2026-04-20T00:00:00.000Z' : null,
        status: l.delisted ? 'delisted' : 'active',
        observed_at: at,
      })
    }
    const ingest = async (lines: FeedRecord[]) => {
      for (const one of lines) {
        await ingestRecords(market.store, [one], DEFAULT_FX)
        await market.settle()
      }
    }
    const exported = async (query: string) => {
      const lines = (await (await fetch(`/listings/export?${query}`)).text()).trimEnd().split('\n').map((text) => JSON.parse(text))
      const { cursor } = lines.pop() as { cursor: string }
      return { cursor, held: new Map<string, Record<string, unknown>>(lines.map((listing) => [listing.id, listing])) }
    }
    /** The inventory /listings shows for the place, as the export shows a listing. */
    const shown = async (query: string) => {
      const listings = new Map<string, Record<string, unknown>>()
      for (let offset: number | null = 0; offset !== null; ) {
        const { body } = await pages(`/listings?${query}&limit=200&offset=${offset}`)
        for (const { days_on_market: _, ...listing } of body.listings as Record<string, unknown>[]) listings.set(listing.id as string, listing)
        offset = body.next_offset as number | null
      }
      return listings
    }

    /** Applies each change the client reads to what it holds; a gap or a duplicate fails at once. */
    const apply = (held: Map<string, Record<string, unknown>>, read: Change[]) => {
      for (const change of read) {
        const holds = held.has(change.listing_id)
        expect(holds, `${change.kind} ${change.listing_id}: ${holds ? 'a duplicate' : 'a gap'}`).toBe(change.kind !== 'listed')
        if (change.kind === 'removed') held.delete(change.listing_id)
        else held.set(change.listing_id, change.listing!)
      }
    }
    const page = async (after: string, query: string) => {
      const { status, body } = await changes(`/listings/changes?after=${after}&limit=3&${query}`)
      expect(status).toBe(200)
      return body as { changes: Change[]; next_cursor: string; more: boolean }
    }

    it('gives exactly the inventory now, followed while the feed is ingested', async () => {
      await fc.assert(
        fc.asyncProperty(feed, async ({ before, after, follows }) => {
          const r = run++
          const query = follows === 'zone' ? `country=CR&zone=zona-${900 + 2 * r}` : 'country=PA'
          await ingest(before.map((l) => record(r, l)))
          const { cursor, held } = await exported(query)
          let done = false
          let at = cursor
          const following = (async () => {
            // Reads while lines arrive, then until caught up after the last.
            for (let caughtUp = false; !caughtUp; ) {
              const ended = done
              const answer = await page(at, query)
              apply(held, answer.changes)
              at = answer.next_cursor
              caughtUp = ended && !answer.more
              if (!answer.more) await new Promise((resolve) => setTimeout(resolve, 2))
            }
          })()
          await ingest(after.map((l) => record(r, l)))
          done = true
          await following
          expect(held).toEqual(await shown(query))
        }),
        { numRuns: 25 },
      )
    }, 300_000)
  })
}
