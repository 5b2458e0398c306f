import { Elysia } from 'elysia'
import { describe, expect, it } from 'vitest'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { estimateRoutes } from '../../src/estimates/routes.ts'
import { listingRoutes, syncRoutes } from '../../src/listings/routes.ts'
import { zoneRoutes } from '../../src/zones/routes.ts'
import { finishedAnswers } from '../../src/http/finish.ts'
import { databaseTargets } from '../support/databases.ts'
import { aRecord, mountedFetch, routesOnMarket } from '../support/market.ts'

/** Every data route: now, and as of an instant where it takes one. */
const DATA_PATHS = [
  '/zones?country=GT',
  '/zones?country=GT&as_of=2026-04-15T00:00:00Z',
  '/zone/zona-10?country=GT',
  '/zone/zona-10?country=GT&as_of=2026-04-15T00:00:00Z',
  '/zone/zona-10/history?country=GT&months=3',
  '/zone/zona-10/history?country=GT&months=3&as_of=2026-04-15T00:00:00Z',
  '/estimate?country=GT&zone=zona-10&operation=Venta&property_type=Apartamento&area_m2=100',
  '/estimate?country=GT&zone=zona-10&operation=Venta&property_type=Apartamento&area_m2=100&as_of=2026-04-15T00:00:00Z',
  '/listings?country=GT&zone=Zona%2010&limit=200',
]

/** The data routes, their answers finished (ETag, 304) as the app finishes them. */
const dataRoutes: Parameters<typeof mountedFetch>[1] = (deps) =>
  new Elysia().use(finishedAnswers()).use(zoneRoutes(deps)).use(estimateRoutes(deps)).use(listingRoutes(deps)).use(syncRoutes(deps))

/** The change feed and the export, which also name their position in a cursor. */
const FEED_PATHS = ['/listings/changes?country=GT', '/listings/export?country=GT']

/** A public listing (verified broker) of Zona 10 the generated market does not have, seen on the day after its history. */
const NEWCOMER = aRecord({
  source_id: 'provenance-1',
  listed_at: '2026-05-01T06:00:00.000Z',
  verified_at: '2026-05-01T06:00:00.000Z',
  observed_at: '2026-05-01T06:00:00.000Z',
  url: 'https://gt-brk-01.example/propiedades/provenance-1',
})

/**
 * What an answer was computed from (docs/api.md, "What an answer was computed from"): every data
 * answer names the log position its read model reflected and the generation it came from.
 */
for (const target of databaseTargets('answer provenance')) {
  describe(`answer provenance on ${target.name}`, () => {
    const on = routesOnMarket(target, dataRoutes)
    let mounted: ReturnType<typeof mountedFetch> | undefined
    const fetch = (path: string, headers?: Record<string, string>) => (mounted ??= mountedFetch(on.market, dataRoutes))(path, headers)
    const provenanceOf = (response: Response) => ({
      position: Number(response.headers.get('mirador-position')),
      generation: response.headers.get('mirador-generation'),
    })

    it('each data answer names the head position of the listing events applied and the live generation of `projections status`', async () => {
      await on.market.settle()
      const head = await on.market.store.headPosition()
      const live = (await on.market.runner.status()).find((g) => g.projection === 'listings' && g.state === 'live')!
      expect(live.position).toBe(head)
      for (const path of [...DATA_PATHS, ...FEED_PATHS]) {
        const response = await fetch(path)
        expect(response.status, path).toBe(200)
        expect(provenanceOf(response), path).toEqual({ position: head, generation: live.generation })
      }
    })

    it('a 304 carries them too', async () => {
      for (const path of ['/zones?country=GT', '/listings?country=GT', '/zone/zona-10/history?country=GT&months=2']) {
        const first = await fetch(path)
        const again = await fetch(path, { 'if-none-match': first.headers.get('etag')! })
        expect(again.status, path).toBe(304)
        expect(provenanceOf(again), path).toEqual(provenanceOf(first))
      }
    })

    it('after more events the position moves forward, and an answer shows a listing only from the position of its event on', async () => {
      await on.market.settle()
      const before = await Promise.all(DATA_PATHS.map((path) => fetch(path)))
      const listed = async (response: Response) => ((await response.json()) as { listings: { url: string }[] }).listings.some((l) => l.url === NEWCOMER.url)
      const zoneCount = async (response: Response) => ((await response.json()) as { n_active: number }).n_active
      const last = before.length - 1
      const oldPosition = provenanceOf(before[0]!).position
      expect(await listed(before[last]!)).toBe(false)

      await ingestRecords(on.market.store, [NEWCOMER], DEFAULT_FX)
      const [event] = await on.market.store.readAll(oldPosition, { limit: 10 })
      expect(event?.type).toBe('ListingIngested')
      await on.market.settle()

      const after = await Promise.all(DATA_PATHS.map((path) => fetch(path)))
      for (const [i, response] of after.entries()) {
        const moved = provenanceOf(response)
        expect(moved.position, DATA_PATHS[i]).toBeGreaterThanOrEqual(event!.position)
        expect(provenanceOf(before[i]!).position, DATA_PATHS[i]).toBeLessThan(event!.position)
        expect(moved.generation).toBe(provenanceOf(before[i]!).generation)
      }
      expect(await listed(after[last]!)).toBe(true)
      expect(await zoneCount(after[2]!)).toBe((await zoneCount(before[2]!)) + 1)
    })
  })
}
