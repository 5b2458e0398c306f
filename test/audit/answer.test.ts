import { Elysia } from 'elysia'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { errorPlugin } from '../../src/http/errors.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { runOperatorCommand } from '../../src/operator/commands.ts'
import { cryptoRandom, systemClock } from '../../src/shared/random.ts'
import { zoneRoutes } from '../../src/zones/routes.ts'
import { estimateRoutes } from '../../src/estimates/routes.ts'
import { listingRoutes } from '../../src/listings/routes.ts'
import { databaseTargets } from '../support/databases.ts'
import { adminGate } from '../support/gate.ts'
import { aRecord, type Market, openMarket } from '../support/market.ts'

/**
 * `audit answer PATH --until T [--at-position P]`: a client quotes a figure or a page the API served
 * at T; later feed lines (about the past, arriving after T) changed the answers since; the audit
 * reproduces the body served at T byte for byte from the events recorded by then, or from the events
 * up to the position the answer was computed from.
 */
const PATHS = [
  '/api/v1/zones?country=GT',
  '/api/v1/zone/zona-1?country=GT',
  '/api/v1/zone/zona-1/history?country=GT&months=8',
  '/api/v1/zones?country=GT&as_of=2026-04-25T00:00:00Z',
  '/api/v1/zone/zona-999?country=GT',
  '/api/v1/estimate?country=GT&zone=zona-1&operation=Venta&property_type=Apartamento&area_m2=100&bedrooms=2',
  '/api/v1/estimate?country=GT&zone=zona-1&operation=Venta&property_type=Apartamento&area_m2=100&as_of=2026-04-25T00:00:00Z',
  '/api/v1/listings?country=GT&zone=zona-1&sort=price_desc&limit=5',
  '/api/v1/listings?country=GT&operation=Venta&sort=newest&limit=200&offset=3',
]

/** Lines about April arriving late: three new sales in Zona 1 and one in Zona 2 of Guatemala, verified (estimates compare them). */
const late = ['late-1', 'late-2', 'late-3', 'late-4'].map((id, i) =>
  aRecord({
    source_id: id,
    zone: i === 3 ? 'Zona 2' : 'Zona 1',
    price: 3_100_000 + i * 1_000.03875,
    listed_at: '2026-04-10T00:00:00.000Z',
    verified_at: '2026-04-15T00:00:00.000Z',
    observed_at: '2026-04-20T00:00:00.000Z',
  }),
)

for (const target of databaseTargets('audit answer')) {
  describe(`audit answer on ${target.name}`, () => {
    let market: Market
    let at: Date
    const served = new Map<string, { status: number; body: string }>()
    const get = async (path: string, clock: () => Date) => {
      const { gate, authorization } = adminGate()
      const app = new Elysia()
        .use(errorPlugin({ info() {}, error() {} }))
        .group('/api/v1', (api) =>
          api
            .use(zoneRoutes({ gate, zones: market.zones, clock }))
            .use(estimateRoutes({ gate, zones: market.zones, inventory: market.inventory, clock }))
            .use(listingRoutes({ gate, inventory: market.inventory, clock })),
        )
      const response = await app.handle(new Request(`http://localhost${path}`, { headers: { authorization } }))
      return { status: response.status, body: await response.text(), position: Number(response.headers.get('mirador-position')) }
    }
    const audit = (path: string, until: string, at_position?: number) =>
      runOperatorCommand(
        { db: market.db, store: market.store, runner: market.runner, clock: systemClock, random: cryptoRandom, progress: () => {} },
        'audit answer',
        { path, until, ...(at_position === undefined ? {} : { at_position }) },
      ) as Promise<{ status: number; body: string }>

    beforeAll(async () => {
      market = await openMarket(target, 300, 'audit')
      at = new Date()
      for (const path of PATHS) served.set(path, await get(path, () => at))
      await new Promise((resolve) => setTimeout(resolve, 5))
      await ingestRecords(market.store, late, DEFAULT_FX)
      await market.settle()
    })
    afterAll(async () => market?.close())

    it('reproduces byte for byte what was served at T, after later lines changed the answers', async () => {
      const now = new Date()
      let changed = 0
      for (const path of PATHS) {
        if ((await get(path, () => at)).body !== served.get(path)!.body) changed += 1
        const reproduced = await audit(path, at.toISOString())
        expect(reproduced.status).toBe(served.get(path)!.status)
        expect(reproduced.body).toBe(served.get(path)!.body)
      }
      // The late lines changed what the same requests answer now (all but the unknown zone).
      expect(changed).toBe(PATHS.length - 1)
      // With a time after the late lines, the audit includes them.
      for (const path of PATHS) expect((await audit(path, now.toISOString())).body).toBe((await get(path, () => now)).body)
    })

    it('reproduces an answer from the position it names (Mirador-Position), whenever its events were recorded', async () => {
      const servedAt = new Date()
      const before = new Map<string, { body: string; position: number }>()
      for (const path of PATHS) before.set(path, await get(path, () => servedAt))
      // Settled: every answer names the head of the log, the position its read model reflects.
      const head = await market.store.headPosition()
      for (const path of PATHS.filter((p) => !p.includes('zona-999'))) expect(before.get(path)!.position).toBe(head)
      // A later line about Zona 1, recorded after the answers: the same requests answer otherwise now.
      await ingestRecords(market.store, [aRecord({ source_id: 'after-the-answers', zone: 'Zona 1', price: 2_000_000, verified_at: '2026-04-15T00:00:00.000Z' })], DEFAULT_FX)
      await market.settle()
      expect((await get(PATHS[1]!, () => servedAt)).position).toBeGreaterThan(head)
      expect((await get(PATHS[1]!, () => servedAt)).body).not.toBe(before.get(PATHS[1]!)!.body)

      // Only the position decides which events count: the time given is the request's.
      for (const path of PATHS.filter((p) => !p.includes('zona-999'))) {
        const { body, position } = before.get(path)!
        expect((await audit(path, servedAt.toISOString(), position)).body).toBe(body)
      }
      const later = new Date(Date.now() + 86_400_000).toISOString()
      expect((await audit(PATHS[1]!, later, head)).body).not.toBe((await get(PATHS[1]!, () => new Date(later))).body)
    })

    it('refuses a path it does not reproduce, a time without offset and a position beyond the log', async () => {
      await expect(audit('/api/v1/listings/changes?after=c1.x', at.toISOString())).rejects.toMatchObject({ code: 'invalid_request' })
      await expect(audit('/api/v1/briefings/personas', at.toISOString())).rejects.toMatchObject({ code: 'invalid_request' })
      await expect(audit('/api/v1/zones', '2026-04-01')).rejects.toMatchObject({ code: 'invalid_request' })
      const head = await market.store.headPosition()
      await expect(audit('/api/v1/zones?country=GT', at.toISOString(), head + 1)).rejects.toMatchObject({
        code: 'invalid_request',
        message: expect.stringContaining(`ends at position ${head}`),
      })
    })
  })
}
