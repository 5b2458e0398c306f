import { describe, expect, it } from 'vitest'
import { generationTables } from '../../projections/engine/generations.ts'
import { liveTables } from '../../projections/engine/live-tables.ts'
import { listingsProjection } from '../../projections/listings/projection.ts'
import { ChangeFeed } from '../../projections/listings/change-feed.ts'
import { ReadyZones } from '../../projections/listings/ready-zones.ts'
import { generateDemoFeed } from '../../src/domain/demo/market.ts'
import type { FeedRecord } from '../../src/domain/listings/feed.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { COUNTRIES } from '../../src/domain/market/vocabulary.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { diffProjection } from '../../src/operator/projection-diff.ts'
import { comparablesFromFeed, segmentsOf } from '../support/comparables-oracle.ts'
import { databaseTargets } from '../support/databases.ts'
import { ANCHOR } from '../support/market.ts'
import { storeFor } from '../support/store.ts'
import { buildListingsV3 } from './listings-v3-store.ts'

/**
 * The upgrade of a store built by listings version 3, whose history knows neither areas, bathrooms
 * nor when a listing was public: the current version is built beside it, compared, promoted. While version 3 is
 * live its zone figures are served as they were and comparables are refused (503); once the current version is
 * live, every zone figure as of any instant is the same (its intervals, also cut where only the
 * bathrooms changed, select the same listings) and the comparables are the feed's.
 */

const NOW = new Date(ANCHOR.getTime() + 86_400_000)
const demo = generateDemoFeed({ seed: 'comparables-upgrade', listings: 300, anchor: ANCHOR })
/** Twenty listings' bathrooms change, nothing else: version 4 cuts their intervals there, version 3 did not. */
const latest = [...new Map(demo.map((r) => [`${r.source}/${r.source_id}`, r])).values()]
const bathroomChanges: FeedRecord[] = latest
  .slice(0, 20)
  .map((r, i) => ({ ...r, bathrooms: r.bathrooms + 0.5, observed_at: new Date(ANCHOR.getTime() + (i + 1) * 60_000).toISOString() }))
const records = [...demo, ...bathroomChanges]

/** Instants across the feed's months, and exactly at some bathroom changes. */
const instants = [-90, -45, -30, -7, -1].map((days) => new Date(ANCHOR.getTime() + days * 86_400_000))
instants.push(...bathroomChanges.slice(0, 3).map((r) => new Date(r.observed_at)), NOW)

for (const target of databaseTargets('comparables upgrade')) {
  describe(`listings v3 → v6, for comparables as of an instant, on ${target.name}`, () => {
    const env = storeFor(target.open, {
      seed: async (store, db) => {
        await ingestRecords(store, records, DEFAULT_FX)
        await buildListingsV3(db, store)
      },
      projections: [listingsProjection],
    })

    it('refuses comparables while v3 is live, builds v6 with no figure changed, then serves the comparables of the feed', async () => {
      await env.runner.prepare()
      expect((await env.runner.status()).map((g) => [g.generation, g.state])).toEqual([
        ['v3.1', 'live'],
        ['v6.1', 'building'],
      ])
      const zones = ReadyZones.follow(env.db, env.runner, (error) => {
        throw error
      })
      const figuresAsOf = () => Promise.all(COUNTRIES.flatMap((country) => instants.map((at) => zones.factsAt(country, at))))
      const refused = { code: 'service_unavailable', message: expect.stringMatching(/^comparables as of a past instant need listings v4, being built \(v3\.1 is live\)$/) }
      // From SQL before the history is loaded, from memory after: the same refusal.
      await expect(zones.comparablesAt('GT', 1, 'Venta', 'Apartamento', NOW)).rejects.toMatchObject(refused)
      // The change feed and the export too: version 5 has the changes table.
      const feedRefused = { code: 'service_unavailable', message: 'the change feed needs listings v5, being built (v3.1 is live)' }
      await expect(new ChangeFeed(env.db).view()).rejects.toMatchObject(feedRefused)
      await zones.firstEvent()
      await zones.settled()
      await expect(zones.comparablesAt('GT', 1, 'Venta', 'Apartamento', NOW)).rejects.toMatchObject(refused)
      const before = await figuresAsOf()

      const [built] = await env.runner.rebuild(['listings'], { hold: true })
      expect(built).toMatchObject({ generation: 'v6.1', outcome: 'held' })
      const diff = await diffProjection(env.db, listingsProjection, NOW)
      expect(diff.summary).toMatch(/^listings v3\.1 \(live\) → v6\.1 \(held\): 0 figure\(s\) differ in 0 of \d+ zones; 0 of \d+ public listings differ$/)
      const intervals = async (version: number) =>
        (await env.db.query<{ n: unknown }>(`select count(*) as n from ${generationTables(listingsProjection, { version, build: 1 }).history}`))[0]!.n
      expect(Number(await intervals(listingsProjection.version)) - Number(await intervals(3))).toBe(bathroomChanges.filter((r) => r.status === 'active').length)

      await liveTables(env.db).follow(() => {})
      try {
        expect(await env.runner.promote('listings')).toMatchObject({ from: 'v3.1', to: 'v6.1' })
        await zones.settled()
        expect(await figuresAsOf()).toEqual(before)
        expect(await new ChangeFeed(env.db).view()).toMatchObject({ generation: 'v6.1' })
        let shown = 0
        for (const segment of segmentsOf(records)) {
          for (const at of instants) {
            const expected = comparablesFromFeed(records, segment, at)
            const where = `${JSON.stringify(segment)} at ${at.toISOString()}`
            expect(await zones.comparablesAt(segment.country, segment.zoneNo, segment.operation, segment.propertyType, at), where).toEqual(expected)
            shown += expected.length
          }
        }
        expect(shown).toBeGreaterThan(100)
      } finally {
        zones.stop()
        await liveTables(env.db).stop()
      }
    })
  })
}
