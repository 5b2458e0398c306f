import { Value } from '@sinclair/typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ZoneDetailResponse, ZonesResponse } from '../../src/domain/market/zone-figures.ts'
import { zoneRoutes } from '../../src/zones/routes.ts'
import { databaseTargets } from '../support/databases.ts'
import { type Get, type Market, invalidRequest, mountedOn, openMarket } from '../support/market.ts'

/** The zone endpoints as HTTP over a generated market (see mountedOn). */
for (const target of databaseTargets('zone endpoints')) {
  describe(`zone endpoints on ${target.name}`, () => {
    let market: Market
    let get: Get
    beforeAll(async () => {
      market = await openMarket(target, 150, 'routes')
      get = mountedOn(market, zoneRoutes)
    })
    afterAll(async () => market?.close())

    it('GET /zones lists the zones of a country in zone order, country in any letter case', async () => {
      const { status, body } = await get('/zones?country=cr')
      expect(status).toBe(200)
      expect(Value.Check(ZonesResponse, body)).toBe(true)
      const zones = body.zones as { zone: string; slug: string }[]
      expect(body).toMatchObject({ ok: true, country: 'CR', count: zones.length })
      expect(zones.map((z) => z.zone)).toEqual(zones.map((_, i) => `Zona ${i + 1}`))
      expect((await get('/zones')).body.country).toBe('GT')
    })

    it('GET /zone/{slug} serves the zone detail, 404 for an unknown zone', async () => {
      const { status, body } = await get('/zone/zona-2?country=HN')
      expect(status).toBe(200)
      expect(Value.Check(ZoneDetailResponse, body)).toBe(true)
      expect(body).toMatchObject({ ok: true, zone: 'Zona 2', slug: 'zona-2', country: 'HN' })
      expect(await get('/zone/zona-99')).toEqual({
        status: 404,
        body: { ok: false, error: 'not_found', message: 'no zone "zona-99" in GT' },
      })
    })

    it.each([
      ['/zones?country=MX', ['country']],
      ['/zone/Zona-1', ['slug']],
      ['/zone/zona-01', ['slug']],
      ['/zone/zona-0?country=xx', ['slug', 'country']],
    ])('GET %s → 400 invalid_request naming %j', async (path, fields) => {
      expect(await get(path)).toEqual({ status: 400, body: invalidRequest(fields) })
    })
  })
}
