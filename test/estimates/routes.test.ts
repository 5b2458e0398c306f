import { Value } from '@sinclair/typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FeedRecord } from '../../src/domain/listings/feed.ts'
import { listingId } from '../../src/domain/listings/listing.ts'
import { EstimateResponse } from '../../src/domain/market/estimate-figures.ts'
import { estimateRoutes } from '../../src/estimates/routes.ts'
import { databaseTargets } from '../support/databases.ts'
import { aRecord, type Get, invalidRequest, type Market, mountedOn, openMarket } from '../support/market.ts'

/**
 * GET /estimate as HTTP over a generated market with one hand-made zone (SV Zona 500) whose answer is
 * worked out below by hand from docs/statistics.md ("Estimates"). The brute-force oracle over
 * generated markets is test/estimates/oracle.test.ts.
 */

const verified = { source: 'broker', verified_at: '2026-03-01T11:00:00.000Z', country: 'SV', zone: 'Zona 500', currency: 'USD' } as const
/** Public Venta apartments of SV Zona 500: id suffix, area, bedrooms, bathrooms, price (USD) → price per m². */
const PUBLIC: [string, number, number, number, number][] = [
  ['a', 100, 2, 2, 100_000], // 1000 per m²
  ['b', 110, 2, 2, 121_000], // 1100
  ['c', 90, 2, 1, 81_000], // 900
  ['d', 120, 3, 2, 150_000], // 1250
  ['e', 80, 2, 1, 76_000], // 950
  ['f', 100, 2, 2, 105_000], // 1050
  ['i', 300, 2, 2, 300_000], // 1000, far larger
]
const idOf = (suffix: string) => listingId('broker', `z500-${suffix}`)
const zone500 = (): FeedRecord[] => [
  ...PUBLIC.map(([id, area_m2, bedrooms, bathrooms, price]) => aRecord({ ...verified, source_id: `z500-${id}`, area_m2, bedrooms, bathrooms, price })),
  // Never compared: scraped, an unverified broker listing, a delisted one, and a type only scraped data has.
  aRecord({ ...verified, source: 'scraped', source_id: 'z500-scraped', area_m2: 100, price: 1_000_000, broker: null }),
  aRecord({ ...verified, source_id: 'z500-unverified', verified_at: null, area_m2: 100, price: 999_999 }),
  aRecord({ ...verified, source_id: 'z500-delisted', area_m2: 100, price: 10, status: 'delisted' }),
  ...[1, 2, 3, 4, 5].map((n) => aRecord({ ...verified, source: 'scraped', source_id: `z500-bodega-${n}`, property_type: 'Bodega', broker: null })),
  // g: public in February only (delisted when the others arrived).
  ...(['active', 'delisted'] as const).map((status, i) =>
    aRecord({
      ...verified,
      source_id: 'z500-g',
      area_m2: 100,
      price: 95_000,
      listed_at: '2026-01-20T00:00:00.000Z',
      verified_at: '2026-02-01T00:00:00.000Z',
      observed_at: i === 0 ? '2026-02-01T12:00:00.000Z' : '2026-03-01T12:00:00.000Z',
      status,
    }),
  ),
]

for (const target of databaseTargets('estimate endpoint')) {
  describe(`estimate endpoint on ${target.name}`, () => {
    let market: Market
    let get: Get
    beforeAll(async () => {
      market = await openMarket(target, 150, 'estimates', (records) => [...records, ...zone500()])
      get = mountedOn(market, estimateRoutes)
    })
    afterAll(async () => market?.close())

    const subject = 'country=SV&zone=zona-500&operation=Venta&property_type=Apartamento&area_m2=100'
    const idsOf = (body: Record<string, unknown>) => (body.comparables as { listing_id: string }[]).map((c) => c.listing_id)

    it('estimates from the same-bedroom listings within 25 % of the area (level 1), closest first', async () => {
      const { status, body } = await get(`/estimate?${subject}&bedrooms=2`)
      expect(status).toBe(200)
      expect(Value.Check(EstimateResponse, body)).toBe(true)
      // Kept: a, b, c, e, f (d has 3 bedrooms, i is 300 m²). Prices per m² 900, 950, 1000, 1050, 1100:
      // median 1000 × 100 m²; nearest ranks ⌈0.5⌉ = 1 (900) and ⌈4.5⌉ = 5 (1100); 5 comparables: medium.
      expect(body.estimate).toEqual({ price_usd: 100_000, price_per_m2_usd: 1000, low_usd: 90_000, high_usd: 110_000, confidence: 'medium' })
      expect(body.reason).toBeNull()
      expect(body.method).toEqual({ version: 1, level: 1, candidates: 7, kept: 5, used: 5, min_comparables: 5 })
      const [a, f] = [idOf('a'), idOf('f')].sort()
      expect(idsOf(body)).toEqual([a, f, idOf('b'), idOf('c'), idOf('e')])
      expect((body.comparables as unknown[])[2]).toEqual({
        listing_id: idOf('b'),
        area_m2: 110,
        bedrooms: 2,
        bathrooms: 2,
        price_usd: 121_000,
        price_per_m2_usd: 1100,
        adjusted_price_usd: 110_000,
        distance: 0.09531, // |ln(110 / 100)| = 0.0953101…
        similarity: 0.913, // 1 / 1.09531
      })
    })

    it('bathrooms given count in the distance: a listing a bathroom apart comes after', async () => {
      const { body } = await get(`/estimate?${subject}&bedrooms=2&bathrooms=1`)
      // c (90 m², 1 bath): 0.105361; e (80 m², 1 bath): 0.223144; a, f: 0.1; b: 0.19531.
      expect(idsOf(body)).toEqual([...[idOf('a'), idOf('f')].sort(), idOf('c'), idOf('b'), idOf('e')])
    })

    it('without bedrooms the search starts at level 2 and keeps every listing within 25 % of the area', async () => {
      const { body } = await get(`/estimate?${subject}&comparables=6`)
      expect(body.method).toMatchObject({ level: 2, candidates: 7, kept: 6, used: 6 })
      // 900, 950, 1000, 1050, 1100, 1250: median (1000 + 1050) / 2; ranks ⌈0.6⌉ = 1 and ⌈5.4⌉ = 6.
      expect(body.estimate).toMatchObject({ price_usd: 102_500, price_per_m2_usd: 1025, low_usd: 90_000, high_usd: 125_000 })
    })

    it('widens to every listing of the zone when no band keeps five', async () => {
      const { body } = await get(`/estimate?${subject.replace('area_m2=100', 'area_m2=250')}`)
      // ±25 % of 250 m² (187.5 to 312.5) and ±50 % (125 to 375) both keep i (300 m²) alone; level 4 keeps all 7.
      expect(body.method).toMatchObject({ level: 4, kept: 7, used: 7 })
      expect((body.estimate as { confidence: string }).confidence).toBe('low')
    })

    it('as_of answers from the listings public then: in February only g, since delisted', async () => {
      const { status, body } = await get(`/estimate?${subject}&bedrooms=2&as_of=2026-02-15T00:00:00Z`)
      expect(status).toBe(200)
      expect(body).toMatchObject({ as_of: '2026-02-15T00:00:00.000Z', estimate: null, reason: 'too_few_comparables' })
      expect(body.method).toEqual({ version: 1, level: null, candidates: 1, kept: 0, used: 0, min_comparables: 5 })
    })

    it('as_of after the last line answers what now answers, naming the instant', async () => {
      const now = await get(`/estimate?${subject}&bedrooms=2`)
      const then = await get(`/estimate?${subject}&bedrooms=2&as_of=2026-03-02T00:00:00Z`)
      expect(then.body).toEqual({ ...now.body, as_of: '2026-03-02T00:00:00.000Z' })
    })

    it('as_of before the zone had any listing is 404, as on the zone endpoints', async () => {
      const { status, body } = await get(`/estimate?${subject}&as_of=2026-01-15T00:00:00Z`)
      expect(status).toBe(404)
      expect(body).toMatchObject({ ok: false, error: 'not_found' })
    })

    it('a property type only scraped listings have gives no estimate, and no count of them', async () => {
      const { status, body } = await get(`/estimate?${subject.replace('Apartamento', 'Bodega')}`)
      expect(status).toBe(200)
      expect(body).toMatchObject({ estimate: null, reason: 'too_few_comparables', comparables: [] })
      expect(body.method).toEqual({ version: 1, level: null, candidates: 0, kept: 0, used: 0, min_comparables: 5 })
    })

    it('a zone the country does not have is 404, as on the zone endpoints', async () => {
      const { status, body } = await get(`/estimate?${subject.replace('zona-500', 'zona-9999')}`)
      expect(status).toBe(404)
      expect(body).toMatchObject({ ok: false, error: 'not_found', message: 'no zone "zona-9999" in SV' })
    })

    it.each([
      ['area_m2=0', ['area_m2']],
      ['area_m2=-5', ['area_m2']],
      ['area_m2=abc', ['area_m2']],
      ['area_m2=1e5', ['area_m2']],
      ['area_m2=1000000.5', ['area_m2']],
      ['area_m2=100&area_m2=120', ['area_m2']],
      ['area_m2=100&property_type=Chalet&operation=alquiler&country=MX', ['country', 'operation', 'property_type']],
      ['area_m2=100&comparables=4', ['comparables']],
      ['area_m2=100&comparables=51', ['comparables']],
      ['area_m2=100&bedrooms=2.5&bathrooms=-1', ['bedrooms', 'bathrooms']],
      ['area_m2=100&as_of=2099-01-01T00:00:00Z', ['as_of']],
      ['area_m2=100&as_of=2026-02-30T00:00:00Z', ['as_of']],
    ])('%s → 400 invalid_request naming exactly the bad parameters', async (query, fields) => {
      const base = 'country=SV&zone=zona-500&operation=Venta&property_type=Apartamento'
      const given = new URLSearchParams(query)
      const rest = [...new URLSearchParams(base)].filter(([name]) => !given.has(name))
      expect(await get(`/estimate?${new URLSearchParams([...rest, ...given])}`)).toEqual({ status: 400, body: invalidRequest(fields) })
    })

    it('zone, operation, property type and area are required', async () => {
      expect(await get('/estimate')).toEqual({ status: 400, body: invalidRequest(['zone', 'operation', 'property_type', 'area_m2']) })
    })
  })
}
