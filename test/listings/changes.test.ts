import { Value } from '@sinclair/typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FeedRecord } from '../../src/domain/listings/feed.ts'
import { listingId } from '../../src/domain/listings/listing.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { encodeCursor, storeIdentity } from '../../src/listings/cursor.ts'
import { ChangesResponse } from '../../src/listings/feed-schemas.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { listingRoutes, syncRoutes } from '../../src/listings/routes.ts'
import { databaseTargets } from '../support/databases.ts'
import { aRecord, type Get, invalidRequest, type Market, mountedFetch, mountedOn, openMarket } from '../support/market.ts'

/**
 * GET /listings/changes over a generated market and one hand-made zone (CR Zona 700) whose story after
 * an export is told line by line below, with the changes a reader of the zone, of the country and of
 * everything must see. Snapshot-plus-changes over generated feeds with concurrent ingest:
 * test/listings/sync.property.test.ts; every format of the export read back: test/listings/export.test.ts.
 */

const base = { country: 'CR', zone: 'Zona 700', currency: 'USD', verified_at: '2026-04-19T00:00:00.000Z', observed_at: '2026-04-20T00:00:00.000Z' } as const
const line = (source_id: string, overrides: Partial<FeedRecord> = {}) => aRecord({ ...base, source_id, price: 100_000, ...overrides })
const idOf = (sourceId: string, source = 'broker') => listingId(source, sourceId)
const at = (minute: number) => `2026-04-25T00:${String(minute).padStart(2, '0')}:00.000Z`

/** Zone 700 as exported: five public listings, an unverified and a scraped one. */
const BEFORE: FeedRecord[] = [
  ...['p1', 'p2', 'p3', 'p4', 'p5'].map((id) => line(id)),
  line('u1', { verified_at: null }),
  line('s1', { source: 'scraped', broker: null }),
]

/** What happens after the export, one line at a time, in this order. */
const STORY: FeedRecord[] = [
  line('p1', { price: 90_000, observed_at: at(1) }),
  line('p2', { title: 'Apartamento remodelado, Zona 700', observed_at: at(2) }),
  line('p3', { status: 'delisted', observed_at: at(3) }),
  line('p4', { zone: 'Zona 701', observed_at: at(4) }),
  line('n1', { observed_at: at(5) }),
  line('u1', { verified_at: at(6), observed_at: at(6) }),
  line('s1', { source: 'scraped', broker: null, price: 80_000, observed_at: at(7) }),
  line('p3', { observed_at: at(8) }),
]

type Change = { kind: string; listing_id: string; cursor: string; fields?: string[]; price?: object; reason?: string; listing?: Record<string, unknown> }

for (const target of databaseTargets('change feed')) {
  describe(`GET /listings/changes on ${target.name}`, () => {
    let market: Market
    let get: Get
    let fetch: ReturnType<typeof mountedFetch>
    let listings: Get
    /** The cursor of the zone's export before the story. */
    let exported: string
    let snapshot: Map<string, Record<string, unknown>>

    const exportOf = async (query: string) => {
      const response = await fetch(`/listings/export?${query}`)
      expect(response.status).toBe(200)
      const lines = (await response.text()).trimEnd().split('\n').map((text) => JSON.parse(text) as Record<string, unknown>)
      const end = lines.pop() as { cursor: string; count: number }
      expect(end).toEqual({ cursor: response.headers.get('mirador-cursor'), count: lines.length })
      return { cursor: end.cursor, listings: new Map(lines.map((record) => [record.id as string, record])) }
    }
    /** Every change after `after` that `query` follows, page by page of `limit`. */
    const follow = async (after: string, query: string, limit = 1000) => {
      const changes: Change[] = []
      for (let cursor = after, more = true; more; ) {
        const { status, body } = await get(`/listings/changes?after=${cursor}&limit=${limit}&${query}`)
        expect(status).toBe(200)
        expect(Value.Check(ChangesResponse, body)).toBe(true)
        changes.push(...(body.changes as Change[]))
        ;[cursor, more] = [body.next_cursor as string, body.more as boolean]
      }
      return changes
    }
    const seen = (changes: Change[]) => changes.map((c) => [c.kind, c.listing_id, c.fields ?? c.reason ?? null])

    beforeAll(async () => {
      market = await openMarket(target, 120, 'changes', (records) => [...records, ...BEFORE])
      get = mountedOn(market, syncRoutes)
      fetch = mountedFetch(market, syncRoutes)
      listings = mountedOn(market, listingRoutes)
      ;({ cursor: exported, listings: snapshot } = await exportOf('country=CR&zone=zona-700'))
      for (const record of STORY) await ingestRecords(market.store, [record], DEFAULT_FX)
      await market.settle()
    })
    afterAll(async () => market?.close())

    it('exports the zone as it was: its five public listings, not the unverified or the scraped one', () => {
      expect([...snapshot.keys()].sort()).toEqual(['p1', 'p2', 'p3', 'p4', 'p5'].map((id) => idOf(id)).sort())
    })

    it('tells a reader of the zone what happened to it, in order: a move out is a removal', async () => {
      expect(seen(await follow(exported, 'country=CR&zone=zona-700'))).toEqual([
        ['price_changed', idOf('p1'), ['price_usd', 'price_local']],
        ['updated', idOf('p2'), ['title']],
        ['removed', idOf('p3'), 'delisted'],
        ['removed', idOf('p4'), 'moved_out'],
        ['listed', idOf('n1'), null],
        ['listed', idOf('u1'), null],
        ['listed', idOf('p3'), null],
      ])
    })

    it('tells a reader of the country the move as an update, and a reader of the other zone as a listing', async () => {
      const country = (await follow(exported, 'country=CR')).filter((c) => c.listing_id === idOf('p4'))
      expect(seen(country)).toEqual([['updated', idOf('p4'), ['zone']]])
      expect(country[0]!.listing).toMatchObject({ zone: 'Zona 701', zone_slug: 'zona-701' })
      expect(seen(await follow(exported, 'country=CR&zone=zona-701'))).toEqual([['listed', idOf('p4'), null]])
      expect(await follow(exported, 'country=GT')).toEqual([])
    })

    it('gives the old and new price, and each changed listing whole, as /listings shows it', async () => {
      const changes = await follow(exported, 'country=CR&zone=zona-700')
      expect(changes[0]).toMatchObject({ price: { old_usd: 100_000, new_usd: 90_000 }, at: at(1) })
      const { body } = await listings('/listings?country=CR&zone=zona-700&limit=200')
      const shown = new Map((body.listings as Record<string, unknown>[]).map(({ days_on_market: _, ...record }) => [record.id, record]))
      for (const change of changes.filter((c) => c.listing)) {
        expect(change.listing, change.listing_id).toEqual(shown.get(change.listing_id))
      }
    })

    it('turns the export into the zone as it is now, with no gap and no duplicate', async () => {
      const inventory = new Map(snapshot)
      for (const change of await follow(exported, 'country=CR&zone=zona-700', 2)) {
        if (change.kind === 'listed') expect(inventory.has(change.listing_id), `listed twice: ${change.listing_id}`).toBe(false)
        else expect(inventory.has(change.listing_id), `${change.kind} of a listing not held: ${change.listing_id}`).toBe(true)
        if (change.kind === 'removed') inventory.delete(change.listing_id)
        else inventory.set(change.listing_id, change.listing!)
      }
      const now = await exportOf('country=CR&zone=zona-700')
      expect(inventory).toEqual(now.listings)
      expect(now.cursor).not.toBe(exported)
    })

    it('pages by limit with a next_cursor, says `more` until caught up, then answers nothing new at the same cursor', async () => {
      const first = await get(`/listings/changes?after=${exported}&limit=3&country=CR&zone=zona-700`)
      expect(first.body).toMatchObject({ more: true, next_cursor: (first.body.changes as Change[])[2]!.cursor })
      const all = await follow(exported, 'country=CR&zone=zona-700')
      const caughtUp = await get(`/listings/changes?after=${all.at(-1)!.cursor}&country=CR&zone=zona-700`)
      expect(caughtUp.body).toMatchObject({ ok: true, changes: [], more: false })
      const again = await get(`/listings/changes?after=${caughtUp.body.next_cursor}&country=CR&zone=zona-700`)
      expect(again.body).toEqual(caughtUp.body)
    })

    it('starts from the beginning without a cursor: every public listing of the market is listed before anything else happens to it', async () => {
      const everything = await follow(encodeCursor('', 0), '')
      const first = new Map<string, string>()
      for (const change of everything) if (!first.has(change.listing_id)) first.set(change.listing_id, change.kind)
      expect(new Set(first.values())).toEqual(new Set(['listed']))
      expect(seen(await follow(encodeCursor('', 0), 'country=CR&zone=zona-700')).slice(0, 5).map(([kind]) => kind)).toEqual(Array(5).fill('listed'))
    })

    it('answers the same changes with the same cursors after the read model is rebuilt', async () => {
      const before = await follow(exported, '')
      await market.runner.rebuild(['listings'])
      await market.settle()
      expect(await follow(exported, '')).toEqual(before)
    })

    it('refuses what is not a cursor of this store, names every bad parameter, and never answers 500', async () => {
      const foreign = encodeCursor('0123456789abcdef', 5)
      const head = await market.store.headPosition()
      const ahead = encodeCursor(await storeIdentity(market.store), head + 1)
      const cursorError = (message: RegExp) => ({ ok: false, error: 'invalid_cursor', message: expect.stringMatching(message), details: [{ field: 'after', message: expect.any(String) }] })
      expect(await get(`/listings/changes?after=${foreign}`)).toEqual({ status: 400, body: cursorError(/another Mirador store/) })
      expect(await get(`/listings/changes?after=${ahead}`)).toEqual({ status: 400, body: cursorError(/after the latest change/) })
      for (const after of ['garbage', 'c1.', 'c1.!!', `${exported}=`, 'c2.LjA', 'c1.' + Buffer.from('abc.-1').toString('base64url')]) {
        expect(await get(`/listings/changes?after=${encodeURIComponent(after)}`), after).toEqual({ status: 400, body: invalidRequest(['after']) })
      }
      for (const limit of ['0', '1001', 'abc', '-1', '1.5', '']) {
        expect(await get(`/listings/changes?limit=${limit}`), limit).toEqual({ status: 400, body: invalidRequest(['limit']) })
      }
      expect(await get('/listings/changes?zone=zona-700')).toEqual({ status: 400, body: invalidRequest(['zone']) })
      expect(await get('/listings/changes?country=XX&zone=zona-700')).toEqual({ status: 400, body: invalidRequest(['country']) })
      expect(await get(`/listings/changes?after=garbage&limit=0&country=CR&country=CR`)).toEqual({ status: 400, body: invalidRequest(['after', 'limit', 'country']) })
      expect(await get('/listings/changes?country=CR&zone=zona-99999999999999999999')).toMatchObject({ status: 200, body: { changes: [], more: false } })
    })
  })
}
