import { Elysia } from 'elysia'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { medianDaysOnMarketChangesAt } from '../../src/domain/market/zone-statistics.ts'
import { errorPlugin } from '../../src/http/errors.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { zoneRoutes } from '../../src/zones/routes.ts'
import { adminGate } from '../support/gate.ts'
import { ANCHOR, aRecord, type Market, openMarket } from '../support/market.ts'

/**
 * The answers of /zones and /zone/{slug} are serialised once and kept: what a client sees must still
 * be the answer of the request time (days on market step every 2.4 hours) and of the events applied.
 */
describe('zone answers kept as bytes', () => {
  let market: Market
  let now = new Date(ANCHOR.getTime() + 86_400_000)
  let get: (path: string) => Promise<{ status: number; text: string; type: string | null }>
  beforeAll(async () => {
    market = await openMarket({ name: 'pglite', open: () => openPglite(), create: () => Promise.reject(new Error('unused')) }, 150, 'ready-bytes')
    await market.zones.settled()
    const { gate, authorization } = adminGate()
    const app = new Elysia().use(errorPlugin({ info() {}, error() {} })).group('/api/v1', (api) => api.use(zoneRoutes({ gate, zones: market.zones, clock: () => now })))
    get = async (path) => {
      const response = await app.handle(new Request(`http://localhost/api/v1${path}`, { headers: { authorization } }))
      return { status: response.status, text: await response.text(), type: response.headers.get('content-type') }
    }
  })
  afterAll(async () => market?.close())

  /** What the route must answer at `now`, computed afresh from the prepared figures. */
  const fresh = async (slug: string) => JSON.stringify({ ok: true, ...(await market.zones.zone('GT', slug, now)) })
  const freshList = async () => {
    const zones = await market.zones.zones('GT', now)
    return JSON.stringify({ ok: true, country: 'GT', count: zones.length, zones })
  }

  it('answers as JSON at every request time: the same bytes until days on market change, the new figure from then on', async () => {
    // The zone whose days on market change first: the list changes then too.
    const zones = [...(await market.zones.facts('GT')).values()]
    const changesOf = (zone: (typeof zones)[number]) => medianDaysOnMarketChangesAt(now.getTime(), zone.medianListedMs, zone.n_active)
    const zone = zones.reduce((a, b) => (changesOf(b) < changesOf(a) ? b : a))
    const changes = changesOf(zone)
    expect(changes).toBeLessThan(Number.POSITIVE_INFINITY)
    const first = await get(`/zone/${zone.slug}?country=GT`)
    expect(first).toEqual({ status: 200, text: await fresh(zone.slug), type: 'application/json;charset=utf-8' })
    const list = await get('/zones?country=GT')
    expect(list.text).toBe(await freshList())
    const before = JSON.parse(first.text).median_dom as number
    now = new Date(Math.ceil(changes) - 1)
    expect((await get(`/zone/${zone.slug}?country=GT`)).text).toBe(first.text)
    expect((await get('/zones?country=GT')).text).toBe(list.text)
    now = new Date(Math.ceil(changes))
    const after = await get(`/zone/${zone.slug}?country=GT`)
    expect(JSON.parse(after.text).median_dom).toBeCloseTo(before + 0.1, 10)
    expect(after.text).toBe(await fresh(zone.slug))
    const listAfter = await get('/zones?country=GT')
    expect(listAfter.text).not.toBe(list.text)
    expect(listAfter.text).toBe(await freshList())
  })

  it('answers with the new figures once events changed them, and a zone that appears is served', async () => {
    const before = JSON.parse((await get('/zones?country=GT')).text) as { count: number }
    expect((await get(`/zone/zona-${before.count + 1}?country=GT`)).status).toBe(404)
    const records = Array.from({ length: 3 }, (_, i) =>
      aRecord({ source_id: `ready-bytes-${i}`, country: 'GT', zone: `Zona ${before.count + 1}`, observed_at: new Date(ANCHOR.getTime() + i).toISOString() }),
    )
    await ingestRecords(market.store, records, DEFAULT_FX)
    await market.settle()
    const after = await get('/zones?country=GT')
    expect(JSON.parse(after.text).count).toBe(before.count + 1)
    expect(after.text).toBe(await freshList())
    const added = await get(`/zone/zona-${before.count + 1}?country=GT`)
    expect(added.status).toBe(200)
    expect(added.text).toBe(await fresh(`zona-${before.count + 1}`))
  })
})
