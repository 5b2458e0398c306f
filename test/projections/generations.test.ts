import { spawnSync } from 'node:child_process'
import { hostname } from 'node:os'
import { describe, expect, it } from 'vitest'
import { BuildLocks } from '../../projections/engine/build-lock.ts'
import { listingsProjection } from '../../projections/listings/projection.ts'
import { type LiveGeneration, liveTables } from '../../projections/engine/live-tables.ts'
import { type Projection, sql } from '../../projections/engine/projection.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import type { Db } from '../../src/db/port.ts'
import type { EventStore } from '../../src/eventstore/port.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { diffProjection } from '../../src/operator/projection-diff.ts'
import { generateDemoFeed } from '../../src/domain/demo/market.ts'
import { listZones } from '../support/sql-zone-answers.ts'
import { ReadyZones } from '../../projections/listings/ready-zones.ts'
import { zoneHistory, zonesAsOf } from '../../src/zones/point-in-time.ts'
import { databaseTargets } from '../support/databases.ts'
import { storeFor } from '../support/store.ts'
import { eventually } from '../support/eventually.ts'
import { buildListingsV1 } from './listings-v1-store.ts'
import { ANCHOR, aRecord } from '../support/market.ts'

const NOW = new Date(ANCHOR.getTime() + 86_400_000)

/** Four sales in Zona 40 of Panama (a zone of its own) whose exact median is 1000.00 and version 1's 1000.01. */
const centCase = [99_999.5, 100_000.5, 90_000, 110_000].map((price, i) =>
  aRecord({ source_id: `cent-${i}`, country: 'PA', zone: 'Zona 40', price, currency: 'USD', area_m2: 100, observed_at: '2026-04-01T00:00:00.000Z' }),
)

const zona1 = async (db: Db) => (await listZones(db, 'PA', NOW)).find((z) => z.zone === 'Zona 40')!.median_ppm2_usd
const tableExists = async (db: Db, table: string) =>
  (await db.query<{ present: boolean }>('select to_regclass($1) is not null as present', [table]))[0]!.present

/** Every row of every table of a generation, as text, in a stable order. */
async function rowsOf(db: Db, generation: LiveGeneration): Promise<string[]> {
  const out: string[] = []
  for (const table of Object.values(generation.tables)) {
    const rows = await db.query<{ row: string }>(`select to_jsonb(t)::text as row from ${table} t order by 1`)
    out.push(`${table.replace(/_v\d+(_b\d+)?$/, '')}: ${rows.length}`, ...rows.map((r) => r.row))
  }
  return out
}

/** A tiny read model (events per stream) whose apply throws on events flagged `poison`. */
function counter(version = 1): Projection<'counts'> {
  return {
    name: 'counter',
    version,
    categories: ['counted'],
    tables: { counts: 'counter_counts' },
    schema: (t) => [`create table if not exists ${t.counts} (stream text primary key, n integer not null)`],
    indexes: () => [],
    apply(event, t) {
      if (event.data.poison) throw new Error(`poisoned event at ${event.position}`)
      return [sql(`insert into ${t.counts} values ($1, 1) on conflict (stream) do update set n = ${t.counts}.n + 1`, event.stream)]
    },
  }
}

const appendCounted = async (store: EventStore, n: number, extra: Record<string, unknown> = {}) => {
  for (let i = 0; i < n; i += 500) {
    await store.appendMany(
      Array.from({ length: Math.min(500, n - i) }, (_, j) => ({
        stream: `counted-${i + j}`,
        events: [{ id: crypto.randomUUID(), type: 'Counted', data: { ...extra } }],
        expected: 'any' as const,
      })),
    )
  }
}

for (const target of databaseTargets('projection generations')) {
  describe(`projection generations on ${target.name}`, () => {
    describe('a store built by listings version 1', () => {
      const env = storeFor(target.open, {
        seed: async (store, db) => {
          await ingestRecords(store, [...generateDemoFeed({ seed: 'generations', listings: 300, anchor: ANCHOR }), ...centCase], DEFAULT_FX)
          await buildListingsV1(db, store)
        },
        projections: [listingsProjection],
      })

      it('is served as it is while version 5 is built, held, compared, promoted, rolled back and pruned', async () => {
        await env.runner.prepare()
        const status = await env.runner.status()
        expect(status.map((g) => [g.projection, g.generation, g.state])).toEqual([
          ['listings', 'v1.1', 'live'],
          ['listings', 'v6.1', 'building'],
        ])
        expect(status[0]!.note).toMatch(/frozen: this code projects listings v6/)
        expect(status[1]!.note).toMatch(/interrupted/)
        // Version 1's figures, from version 1's tables, until version 5 goes live.
        expect(await zona1(env.db)).toBe(1000.01)
        // Answers as of a past instant need what only version 3 records: 503 until it is live (docs/decisions.md).
        const zones = ReadyZones.follow(env.db, env.runner, () => {})
        await expect(zonesAsOf(zones, 'PA', NOW)).rejects.toMatchObject({ code: 'service_unavailable', message: expect.stringMatching(/need listings v3.*v1\.1 is live/) })
        await expect(zoneHistory(zones, 'PA', 'zona-40', 3, NOW)).rejects.toMatchObject({ code: 'service_unavailable' })

        const [built] = await env.runner.rebuild(['listings'], { hold: true })
        expect(built).toMatchObject({ projection: 'listings', generation: 'v6.1', outcome: 'held' })
        expect(await zona1(env.db)).toBe(1000.01)

        const diff = await diffProjection(env.db, listingsProjection, NOW)
        expect(diff.zones!.changes).toContainEqual({ country: 'PA', zone: 'Zona 40', field: 'median_ppm2_usd', live: 1000.01, held: 1000 })
        expect(diff.zones!.changes.every((c) => c.field.includes('median_ppm2_usd') || c.field.endsWith('pct'))).toBe(true)
        // Each listing's published price per m² was already rounded once in version 1: no public field differs.
        expect(diff.listings).toMatchObject({ changed: 0, changes: [] })
        expect(diff.summary).toMatch(/^listings v1\.1 \(live\) → v6\.1 \(held\): \d+ figure\(s\) differ in \d+ of \d+ zones; 0 of \d+ public listings differ$/)

        // A listing recorded while v6.1 is held: promote catches it up before it goes live.
        const late = aRecord({ source_id: 'late', country: 'PA', zone: 'Zona 40', price: 1_000_000, currency: 'USD', area_m2: 100, observed_at: '2026-04-02T00:00:00.000Z' })
        await ingestRecords(env.store, [late], DEFAULT_FX)
        const switched: string[] = []
        const unlisten = liveTables(env.db).onChange((projection, g) => switched.push(`${projection} ${g.id}`))
        // Readers in other processes are told by NOTIFY; this one is told directly.
        await liveTables(env.db).follow(() => {})
        try {
          expect(await env.runner.promote('listings')).toMatchObject({ from: 'v1.1', to: 'v6.1', note: null })
          expect(switched).toEqual(['listings v6.1'])
          // Five sales now: the median is the middle one, 1000.005 exactly, published 1000.01.
          expect((await listZones(env.db, 'PA', NOW)).find((z) => z.zone === 'Zona 40')).toMatchObject({ n_sale: 5, median_ppm2_usd: 1000.01 })
          // As of an instant, from version 5 once live; before the late listing, the four sales.
          expect((await zonesAsOf(zones, 'PA', NOW)).find((z) => z.zone === 'Zona 40')).toMatchObject({ n_sale: 5, median_ppm2_usd: 1000.01 })
          expect((await zonesAsOf(zones, 'PA', new Date('2026-04-01T12:00:00.000Z'))).find((z) => z.zone === 'Zona 40')).toMatchObject({ n_sale: 4, median_ppm2_usd: 1000 })

          const back = await env.runner.rollback('listings')
          expect(back).toMatchObject({ from: 'v6.1', to: 'v1.1', note: expect.stringMatching(/does not follow new events/) })
          expect(switched).toEqual(['listings v6.1', 'listings v1.1'])
          expect(await zona1(env.db)).toBe(1000.01)
          await expect(zonesAsOf(zones, 'PA', NOW)).rejects.toMatchObject({ code: 'service_unavailable' })
          expect((await listZones(env.db, 'PA', NOW)).find((z) => z.zone === 'Zona 40')!.n_sale).toBe(4)

          // Rollback switches between live and previous: again, and version 5 is back.
          expect(await env.runner.rollback('listings')).toMatchObject({ from: 'v1.1', to: 'v6.1' })
          expect((await listZones(env.db, 'PA', NOW)).find((z) => z.zone === 'Zona 40')!.n_sale).toBe(5)
          expect((await zonesAsOf(zones, 'PA', NOW)).find((z) => z.zone === 'Zona 40')!.n_sale).toBe(5)
          zones.stop()

          const pruned = await env.runner.prune('listings')
          expect(pruned).toEqual({
            projection: 'listings',
            dropped: ['v1.1'],
            tables: ['listings_v1', 'listing_history_v1', 'listing_zones_v1', 'listing_zone_touches_v1', 'listing_changes_v1'],
            kept: ['v6.1'],
          })
          expect(await tableExists(env.db, 'listings_v1')).toBe(false)
          await expect(env.runner.rollback('listings')).rejects.toMatchObject({ code: 'conflict', message: expect.stringMatching(/no previous generation/) })
          expect((await env.runner.status()).map((g) => [g.generation, g.state])).toEqual([['v6.1', 'live']])
        } finally {
          unlisten()
          await liveTables(env.db).stop()
        }
      })
    })

    describe('a rebuild of the same version', () => {
      const env = storeFor(target.open, { seed: (store) => ingestRecords(store, generateDemoFeed({ seed: 'same-version', listings: 400, anchor: ANCHOR }), DEFAULT_FX) })

      it('builds beside the live generation, which keeps serving and following; then both follow until pruned', async () => {
        const serving = new ProjectionRunner(env.db, env.store, [listingsProjection])
        await serving.start((error) => {
          throw error
        })
        const operator = new ProjectionRunner(env.db, env.store, [listingsProjection])
        try {
          const live = await liveTables(env.db).of(listingsProjection)
          const before = await rowsOf(env.db, live)
          const answer = JSON.stringify(await listZones(env.db, 'GT', NOW))
          const rebuilding = operator.rebuild(['listings'])
          // Readers keep the live generation, whole, while the new one fills its own tables.
          while (!(await Promise.race([rebuilding.then(() => true), Promise.resolve(false)]))) {
            if ((await liveTables(env.db).of(listingsProjection)).id !== 'v6.1') break
            expect(JSON.stringify(await listZones(env.db, 'GT', NOW))).toBe(answer)
            // Each read on a turn of its own, as requests arrive: a build yields between batches
            // (ApplyEngine), and a reader looping on promises alone would never let it go on.
            await new Promise((resolve) => setTimeout(resolve, 0))
          }
          const [built] = await rebuilding
          expect(built).toMatchObject({ generation: 'v6.2', outcome: 'promoted', resumed_from: 0 })
          expect(built!.events).toBeGreaterThan(800)
          const promoted = await liveTables(env.db).of(listingsProjection)
          expect(promoted.id).toBe('v6.2')
          expect(await rowsOf(env.db, promoted)).toEqual(before)

          // New events reach both the live and the previous generation (a rollback is instant and current).
          await ingestRecords(env.store, [aRecord({ source_id: 'after-promotion', observed_at: '2026-04-03T00:00:00.000Z' })], DEFAULT_FX)
          await eventually('both generations follow', async () => {
            const rows = await serving.status()
            return rows.length === 2 && rows.every((g) => g.lag_events === 0) && rows[0]!.position === rows[1]!.position
          })
          expect((await serving.status()).map((g) => [g.generation, g.state])).toEqual([
            ['v6.2', 'live'],
            ['v6.1', 'previous'],
          ])
          expect(await rowsOf(env.db, await liveTables(env.db).of(listingsProjection))).toEqual(await rowsOf(env.db, live))
        } finally {
          await serving.stop()
        }
      })
    })

    describe('builds', () => {
      const env = storeFor(target.open, { seed: (store) => appendCounted(store, 1200) })

      it('one at a time: a second builder is refused with the first one named; a dead builder\'s lock is taken over', async () => {
        const runner = new ProjectionRunner(env.db, env.store, [counter()])
        await runner.prepare()
        const elsewhere = new BuildLocks(env.db, { pid: 4242, host: 'builder-7', alive: () => true })
        const lock = await elsewhere.acquire('counter')
        await lock.describe('v1.2')
        await expect(runner.rebuild(['counter'])).rejects.toMatchObject({
          code: 'conflict',
          message: expect.stringMatching(/^counter is already being built \(v1\.2\) by process 4242 on builder-7, started at \d{4}-\d\d-\d\dT/),
        })
        await lock.release()
        expect(await runner.rebuild(['counter'])).toMatchObject([{ generation: 'v1.2', outcome: 'promoted' }])

        // A process of this host that is gone (its lease not yet run out) does not block the next build.
        const gone = spawnSync(process.execPath, ['-e', 'process.pid']).pid!
        await new BuildLocks(env.db, { pid: gone, host: hostname(), alive: () => true }).acquire('counter')
        expect(await runner.rebuild(['counter'])).toMatchObject([{ generation: 'v1.3', outcome: 'promoted' }])
      })

      it('a failing build records its error, stays building and is never promoted', async () => {
        const runner = new ProjectionRunner(env.db, env.store, [counter()])
        await appendCounted(env.store, 1, { poison: true })
        const live = (await runner.status()).find((g) => g.state === 'live' || g.state === 'catching up')!.generation
        await expect(runner.rebuild(['counter'])).rejects.toThrow('poisoned event')
        const status = await runner.status()
        expect(status.find((g) => g.generation === live)!.state).toMatch(/live|catching up/)
        expect(status.find((g) => g.state === 'building')).toMatchObject({ last_error: expect.stringMatching(/poisoned event at \d+/) })
        expect((await liveTables(env.db).of(counter())).id).toBe(live)
      })

      it('a version bump does not keep the server from serving: the old generation is served until the new one is promoted', async () => {
        const fresh = await target.open()
        const freshStore = await openSqlEventStore(fresh)
        try {
          await appendCounted(freshStore, 1500)
          await new ProjectionRunner(fresh, freshStore, [counter(1)]).catchUp()
          const bumped = new ProjectionRunner(fresh, freshStore, [counter(2)])
          let started = false
          const wentLive: { id: string; afterStart: boolean }[] = []
          liveTables(fresh).onChange((_, g) => wentLive.push({ id: g.id, afterStart: started }))
          await liveTables(fresh).follow(() => {})
          await bumped.start((error) => {
            throw error
          })
          started = true
          await eventually('version 2 goes live', () => wentLive.length > 0)
          expect(wentLive).toEqual([{ id: 'v2.1', afterStart: true }])
          await bumped.stop()
          await liveTables(fresh).stop()
        } finally {
          await freshStore.close()
          await fresh.close()
        }
      })
    })
  })
}
