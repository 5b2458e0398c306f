import { Value } from '@sinclair/typebox/value'
import { Elysia } from 'elysia'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { errorPlugin, type Logger } from '../../src/http/errors.ts'
import { ZoneDetailResponse, ZonesResponse } from '../../src/zones/schemas.ts'
import { zoneRoutes } from '../../src/zones/routes.ts'
import { databaseTargets } from '../support/databases.ts'
import { ANCHOR, type Market, openMarket } from '../support/market.ts'

/**
 * The zone endpoints as HTTP, mounted as the app mounts them (under /api/v1, behind the error
 * mapping); authentication is in front of them in the real app and tested with it.
 */
const silent: Logger = { info() {}, error() {} }
const clock = () => new Date(ANCHOR.getTime() + 86_400_000)

for (const target of databaseTargets('zone endpoints')) {
  describe(`zone endpoints on ${target.name}`, () => {
    let market: Market
    let get: (path: string) => Promise<{ status: number; body: Record<string, unknown> }>
    beforeAll(async () => {
      market = await openMarket(target, 150, 'routes')
      const app = new Elysia()
        .use(errorPlugin(silent))
        .group('/api/v1', (api) => api.use(zoneRoutes({ db: market.db, clock })))
      get = async (path) => {
        const response = await app.handle(new Request(`http://localhost/api/v1${path}`))
        expect(response.headers.get('content-type')).toMatch(/application\/json/)
        return { status: response.status, body: (await response.json()) as Record<string, unknown> }
      }
    })
    afterAll(async () => market?.close())

    const invalid = (fields: string[]) => ({
      ok: false,
      error: 'invalid_request',
      message: expect.any(String),
      details: fields.map((field) => ({ field, message: expect.any(String) })),
    })

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
        body: { ok: false, error: 'not_found', message: 'no zone zona-99 in GT' },
      })
    })

    it.each([
      ['/zones?country=MX', ['country']],
      ['/zone/Zona-1', ['slug']],
      ['/zone/zona-01', ['slug']],
      ['/zone/zona-0?country=xx', ['slug', 'country']],
    ])('GET %s → 400 invalid_request naming %j', async (path, fields) => {
      expect(await get(path)).toEqual({ status: 400, body: invalid(fields) })
    })
  })
}
