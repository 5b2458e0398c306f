import { Value } from '@sinclair/typebox/value'
import { describe, expect, it } from 'vitest'
import { listingRoutes } from '../../src/listings/routes.ts'
import { ListingsResponse } from '../../projections/listings/search.ts'
import { databaseTargets } from '../support/databases.ts'
import { type Get, invalidRequest, routesOnMarket } from '../support/market.ts'

/** The listings endpoint as HTTP over a generated market (see routesOnMarket). */
for (const target of databaseTargets('listings endpoint')) {
  describe(`listings endpoint on ${target.name}`, () => {
    const on = routesOnMarket(target, listingRoutes)
    const get: Get = (path) => on.get(path)

    it.each([
      ['/listings?limit=0', ['limit']],
      ['/listings?limit=abc&offset=-1', ['limit', 'offset']],
      ['/listings?price_min=500&price_max=100', ['price_min']],
      ['/listings?operation=alquiler&property_type=Chalet&sort=cheapest', ['operation', 'property_type', 'sort']],
      ['/listings?zone=10', ['zone']],
      ['/listings?country=MX&offset=10001', ['country', 'offset']],
    ])('GET %s → 400 invalid_request naming %j', async (path, fields) => {
      expect(await get(path)).toEqual({ status: 400, body: invalidRequest(fields) })
    })

    it('GET /listings serves a page of the verified broker inventory with total and next offset', async () => {
      const { status, body } = await get('/listings?country=gt&limit=5&sort=price_desc')
      expect(status).toBe(200)
      expect(Value.Check(ListingsResponse, body)).toBe(true)
      expect(body).toMatchObject({ ok: true, count: 5, limit: 5, offset: 0, next_offset: 5 })
      const listings = body.listings as { country: string; price_usd: number }[]
      expect(listings.every((l) => l.country === 'GT')).toBe(true)
      expect(listings.map((l) => l.price_usd)).toEqual([...listings.map((l) => l.price_usd)].sort((a, b) => b - a))
    })
  })
}
