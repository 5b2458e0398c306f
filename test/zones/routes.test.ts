import { Value } from '@sinclair/typebox/value'
import { describe, expect, it } from 'vitest'
import { ZoneDetailResponse, ZoneHistoryResponse, ZonesResponse } from '../../src/domain/market/zone-figures.ts'
import { zoneRoutes } from '../../src/zones/routes.ts'
import { databaseTargets } from '../support/databases.ts'
import { type Get, invalidRequest, routesOnMarket } from '../support/market.ts'

/** The zone endpoints as HTTP over a generated market (see routesOnMarket). */
for (const target of databaseTargets('zone endpoints')) {
  describe(`zone endpoints on ${target.name}`, () => {
    const on = routesOnMarket(target, zoneRoutes)
    const get: Get = (path) => on.get(path)

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

    it('GET /zones?as_of answers as the market stood then, naming the instant; the same instant as now answers as now', async () => {
      const first = on.market.records.map((r) => r.observed_at).sort()[0]!
      const { status, body } = await get(`/zones?country=GT&as_of=${encodeURIComponent('2026-03-01T06:00:00-06:00')}`)
      expect(status).toBe(200)
      expect(Value.Check(ZonesResponse, body)).toBe(true)
      expect(body).toMatchObject({ ok: true, country: 'GT', as_of: '2026-03-01T12:00:00.000Z' })
      const now = await get('/zones?country=GT')
      expect(now.body.as_of).toBeUndefined()
      expect((await get('/zones?country=GT&as_of=2026-05-02T00:00:00Z')).body.zones).toEqual(now.body.zones)
      expect((await get(`/zones?country=GT&as_of=${first}`)).status).toBe(200)
    })

    it('GET /zone/{slug}?as_of: the zone as it stood then; 404 for a zone not yet seen', async () => {
      const { status, body } = await get('/zone/zona-2?country=HN&as_of=2026-04-01T00:00:00Z')
      expect(status).toBe(200)
      expect(Value.Check(ZoneDetailResponse, body)).toBe(true)
      expect(body).toMatchObject({ ok: true, as_of: '2026-04-01T00:00:00.000Z', zone: 'Zona 2', country: 'HN' })
      const first = on.market.records.map((r) => r.observed_at).sort()[0]!
      const zone = on.market.records.find((r) => r.observed_at === first)!
      const other = on.market.records.filter((r) => r.country === zone.country && r.zone !== zone.zone).map((r) => r.observed_at).sort()[0]!
      expect(other > first).toBe(true)
      const later = on.market.records.find((r) => r.observed_at === other)!
      expect(await get(`/zone/${later.zone.toLowerCase().replace(' ', '-')}?country=${zone.country}&as_of=${first}`)).toMatchObject({ status: 404 })
    })

    it('GET /zone/{slug}/history: 12 months by default, oldest first, up to 36; as_of moves the last month', async () => {
      const { status, body } = await get('/zone/zona-1/history?country=GT')
      expect(status).toBe(200)
      expect(Value.Check(ZoneHistoryResponse, body)).toBe(true)
      const history = body.history as { month: string; at: string; listed: boolean; n_active: number | null }[]
      expect(body).toMatchObject({ ok: true, zone: 'Zona 1', slug: 'zona-1', country: 'GT', months: 12, as_of: '2026-05-02T00:00:00.000Z' })
      expect(history.map((m) => m.month)).toEqual(Array.from({ length: 12 }, (_, i) => new Date(Date.UTC(2025, 5 + i, 1)).toISOString().slice(0, 7)))
      expect(history[0]).toMatchObject({ month: '2025-06', at: '2025-06-30T23:59:59.999Z', listed: false, n_active: null })
      expect(history.at(-1)).toMatchObject({ month: '2026-05', at: '2026-05-02T00:00:00.000Z', listed: true })
      const three = await get('/zone/zona-1/history?country=GT&months=3&as_of=2026-03-15T00:00:00Z')
      expect((three.body.history as { month: string; at: string }[]).map((m) => [m.month, m.at])).toEqual([
        ['2026-01', '2026-01-31T23:59:59.999Z'],
        ['2026-02', '2026-02-28T23:59:59.999Z'],
        ['2026-03', '2026-03-15T00:00:00.000Z'],
      ])
      expect(((await get('/zone/zona-1/history?months=36')).body.history as unknown[]).length).toBe(36)
      expect(await get('/zone/zona-99/history')).toEqual({ status: 404, body: { ok: false, error: 'not_found', message: 'no zone "zona-99" in GT' } })
    })

    it('refuses an as_of in the future or before any market data with a 400 that says so', async () => {
      expect(await get('/zones?as_of=2026-05-02T00:00:00.001Z')).toEqual({
        status: 400,
        body: {
          ok: false,
          error: 'invalid_request',
          message: 'as_of 2026-05-02T00:00:00.001Z is in the future (now is 2026-05-02T00:00:00.000Z)',
          details: [{ field: 'as_of', message: 'is in the future' }],
        },
      })
      const first = on.market.records.map((r) => r.observed_at).sort()[0]!
      const before = new Date(Date.parse(first) - 1).toISOString()
      for (const path of [`/zones?as_of=${before}`, `/zone/zona-1?as_of=${before}`, `/zone/zona-1/history?as_of=${before}`]) {
        expect(await get(path)).toEqual({
          status: 400,
          body: {
            ok: false,
            error: 'invalid_request',
            message: `as_of ${before} is before any market data (the first listing event is at ${first})`,
            details: [{ field: 'as_of', message: 'is before any market data' }],
          },
        })
      }
    })

    it.each([
      ['/zones?as_of=yesterday', ['as_of']],
      ['/zones?as_of=2026-04-01', ['as_of']],
      ['/zones?as_of=2026-04-01T00:00:00', ['as_of']],
      ['/zones?as_of=2026-02-30T00:00:00Z', ['as_of']],
      ['/zone/zona-1?as_of=2026-04-01T25:00:00Z', ['as_of']],
      ['/zone/zona-1/history?months=0', ['months']],
      ['/zone/zona-1/history?months=37', ['months']],
      ['/zone/zona-1/history?months=1.5&as_of=x', ['months', 'as_of']],
      ['/zones?country=MX', ['country']],
      ['/zone/Zona_1', ['slug']],
      ['/zone/zona%201x', ['slug']],
      ['/zone/zona-01', ['slug']],
      ['/zone/zona-0?country=xx', ['slug', 'country']],
      // Out of the market's range and another bad parameter: both named at once (the range is checked
      // with the request's time and data, also when the request is refused for another parameter).
      ['/zones?country=&as_of=4170-08-17T19:23Z', ['country', 'as_of']],
      ['/zone/zona-0?as_of=1970-01-01T00:00:00Z', ['slug', 'as_of']],
      ['/zone/zona-1/history?months=0&as_of=4170-01-01T00:00:00Z', ['months', 'as_of']],
    ])('GET %s → 400 invalid_request naming %j', async (path, fields) => {
      expect(await get(path)).toEqual({ status: 400, body: invalidRequest(fields) })
    })
  })
}
