import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listingsProjection } from '../../projections/listings/projection.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import type { Db } from '../../src/db/port.ts'
import { generateDemoFeed } from '../../src/domain/demo/market.ts'
import type { EventStore } from '../../src/eventstore/port.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import type { FeedRecord } from '../../src/domain/listings/feed.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { COUNTRIES, type Country } from '../../src/domain/market/vocabulary.ts'
import { countryZoneFacts } from '../../projections/listings/zone-rows.ts'
import { type CountryZoneFacts, zoneDetailAt, zonesAt } from '../../src/domain/market/zone-statistics.ts'
import { listZones } from '../support/sql-zone-answers.ts'
import { liveTables } from '../../projections/engine/live-tables.ts'
import { ReadyZones } from '../../projections/listings/ready-zones.ts'
import { databaseTargets, type SharedDatabase } from '../support/databases.ts'
import { eventually } from '../support/eventually.ts'
import { ANCHOR, aRecord } from '../support/market.ts'

/**
 * The zone answers the API serves from memory are, byte for byte, what SQL computes from the live
 * read model at the same checkpoint: after every kind of listing event, whichever process applied
 * it, and across a promotion and a rollback.
 */

const NOW = new Date(ANCHOR.getTime() + 5 * 86_400_000)

/** Every answer of GET /zones and GET /zone/{slug} as JSON text, from `read`. */
async function allAnswers(read: {
  zones(country: (typeof COUNTRIES)[number]): Promise<unknown[]>
  zone(country: (typeof COUNTRIES)[number], slug: string): Promise<unknown>
}): Promise<string[]> {
  const answers: string[] = []
  for (const country of COUNTRIES) {
    const zones = (await read.zones(country)) as { slug: string }[]
    answers.push(JSON.stringify(zones))
    for (const { slug } of zones) answers.push(JSON.stringify(await read.zone(country, slug)))
    answers.push(JSON.stringify(await read.zone(country, 'zona-999')))
  }
  return answers
}

const servedBy = (ready: ReadyZones) =>
  allAnswers({ zones: (c) => ready.zones(c, NOW), zone: (c, slug) => ready.zone(c, slug, NOW) })
/** The same answers computed afresh from the whole live read model (each country once). */
async function computedIn(db: Db): Promise<string[]> {
  const { tables } = await liveTables(db).of(listingsProjection)
  const facts = new Map<Country, CountryZoneFacts>()
  for (const country of COUNTRIES) facts.set(country, await countryZoneFacts(db, tables, country))
  return allAnswers({ zones: async (c) => zonesAt(facts.get(c)!, NOW), zone: async (c, slug) => zoneDetailAt(facts.get(c)!, slug, NOW) })
}

const gtZone = async (ready: ReadyZones, slug: string) => ready.zone('GT', slug, NOW)

for (const target of databaseTargets('prepared zone answers')) {
  describe(`prepared zone answers on ${target.name}`, () => {
    let shared: SharedDatabase
    let db: Db
    let store: EventStore
    let runner: ProjectionRunner
    let ready: ReadyZones
    const errors: unknown[] = []
    const records: FeedRecord[] = generateDemoFeed({ seed: 'ready', listings: 200, anchor: ANCHOR })

    beforeAll(async () => {
      shared = await target.create()
      db = await shared.connect()
      store = await openSqlEventStore(db)
      await ingestRecords(store, records, DEFAULT_FX)
      runner = new ProjectionRunner(db, store, [listingsProjection])
      await runner.catchUp()
      ready = ReadyZones.follow(db, runner, (error) => errors.push(error))
    })
    afterAll(async () => {
      ready?.stop()
      await runner?.stop()
      await store?.close()
      await db?.close()
      await shared?.dispose()
    })

    it('serves every zone list and zone detail exactly as SQL computes it', async () => {
      const served = await servedBy(ready)
      expect(served).toEqual(await computedIn(db))
      expect(served.filter((answer) => answer !== 'null').length).toBeGreaterThan(100)
    })

    it('computes days on market at the time of each request, from the same prepared answers', async () => {
      const later = new Date(NOW.getTime() + 10 * 86_400_000)
      const [today, tenDaysLater] = [await ready.zones('GT', NOW), await ready.zones('GT', later)]
      const counted = today.filter((zone) => zone.median_dom !== null)
      expect(counted.length).toBeGreaterThan(3)
      for (const zone of counted) {
        expect(tenDaysLater.find((z) => z.slug === zone.slug)!.median_dom).toBeCloseTo(zone.median_dom! + 10, 5)
      }
      expect(JSON.stringify(await ready.zones('GT', later))).toBe(JSON.stringify(await listZones(db, 'GT', later)))
    })

    it('follows new listings, price changes, verification, delisting and relisting, a new zone, a move to another country', async () => {
      const zone10Before = await gtZone(ready, 'zona-10')
      expect(await gtZone(ready, 'zona-77')).toBeNull()
      const at = (day: number) => new Date(ANCHOR.getTime() + day * 86_400_000).toISOString()
      const listing = (id: string, overrides: Partial<FeedRecord>) =>
        aRecord({ source_id: id, zone: 'Zona 77', listed_at: at(1), observed_at: at(1), ...overrides })
      const steps: FeedRecord[][] = [
        [listing('r-1', {}), listing('r-2', { price: 2_000_000 }), listing('r-3', { price: 900_000 })],
        [listing('r-1', { price: 1_200_000, observed_at: at(2) })],
        [listing('r-2', { verified_at: at(2), observed_at: at(2) })],
        [listing('r-3', { status: 'delisted', observed_at: at(3) })],
        [listing('r-3', { status: 'active', observed_at: at(4) }), listing('r-4', { zone: 'Zona 10', observed_at: at(4) })],
        // A listing moving to another country changes both.
        [listing('r-2', { country: 'SV', currency: 'USD', price: 260_000, observed_at: at(5) })],
      ]
      for (const step of steps) {
        await ingestRecords(store, step, DEFAULT_FX)
        await runner.catchUp()
        await ready.settled()
        expect(await servedBy(ready)).toEqual(await computedIn(db))
      }
      expect(await gtZone(ready, 'zona-77')).toMatchObject({ n_active: 2, n_sale: 2 })
      expect(await ready.zone('SV', 'zona-77', NOW)).toMatchObject({ n_active: 1 })
      expect((await gtZone(ready, 'zona-10'))!.n_active).toBe(zone10Before!.n_active + 1)
      expect(errors).toEqual([])
    })

    it('follows events another process applied: the answers change without this process projecting anything', async () => {
      const other = await shared.connect()
      const otherStore = await openSqlEventStore(other)
      const otherRunner = new ProjectionRunner(other, otherStore, [listingsProjection])
      await runner.start((error) => errors.push(error))
      try {
        const before = (await gtZone(ready, 'zona-77'))!.n_active
        await ingestRecords(otherStore, [aRecord({ source_id: 'elsewhere-1', zone: 'Zona 77' })], DEFAULT_FX)
        await otherRunner.catchUp()
        await eventually('the served answer counts the listing the other process projected', async () => {
          return (await gtZone(ready, 'zona-77'))!.n_active === before + 1
        })
        await ready.settled()
        expect(await servedBy(ready)).toEqual(await computedIn(db))
      } finally {
        await runner.stop()
        await otherRunner.stop()
        await otherStore.close()
        await other.close()
      }
    })

    it('switches to a promoted generation before the next answer, and back on rollback', async () => {
      // The operator's runner (as `projections rebuild|promote|rollback` uses): the serving one was stopped above.
      const operator = new ProjectionRunner(db, store, [listingsProjection])
      const live = await servedBy(ready)
      await ingestRecords(store, [aRecord({ source_id: 'after-build', zone: 'Zona 78' })], DEFAULT_FX)
      // The held build includes the new listing; the live generation is frozen meanwhile (not caught up).
      await operator.rebuild(['listings'], { hold: true })
      expect(await servedBy(ready)).toEqual(live)

      await operator.promote('listings')
      expect(await gtZone(ready, 'zona-78')).toMatchObject({ n_active: 1 })
      expect(await servedBy(ready)).toEqual(await computedIn(db))

      await operator.rollback('listings')
      const rolledBack = await servedBy(ready)
      expect(rolledBack).toEqual(await computedIn(db))
      expect(errors).toEqual([])
    })
  })
}
