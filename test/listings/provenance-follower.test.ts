import { describe, expect, it } from 'vitest'
import type { LiveAdvancing } from '../../projections/engine/follow.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import { ListingInventory } from '../../projections/listings/inventory.ts'
import { listingsProjection } from '../../projections/listings/projection.ts'
import { ReadyZones } from '../../projections/listings/ready-zones.ts'
import { generateDemoFeed } from '../../src/domain/demo/market.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { zonesAt } from '../../src/domain/market/zone-statistics.ts'
import type { RecordedEvent } from '../../src/eventstore/port.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { listingSearchOf } from '../../src/listings/search-query.ts'
import { databaseTargets } from '../support/databases.ts'
import { ANCHOR, aRecord } from '../support/market.ts'
import { sqlListingSearch } from '../support/sql-listing-search.ts'

const NOW = new Date(ANCHOR.getTime() + 86_400_000)

/** Notices of applied batches that the test hands over itself: some events applied are told of late, or not yet. */
function toldByHand(): LiveAdvancing & { tell(events: readonly RecordedEvent[]): void } {
  const listeners = new Set<(projection: string, events: readonly RecordedEvent[]) => void>()
  return {
    onLiveAdvanced(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    tell(events) {
      for (const listener of listeners) listener(listingsProjection.name, events)
    },
  }
}

const newcomer = (n: number, zone: string) =>
  aRecord({
    source_id: `told-late-${n}`,
    zone,
    listed_at: '2026-05-01T06:00:00.000Z',
    verified_at: '2026-05-01T06:00:00.000Z',
    observed_at: '2026-05-01T06:00:00.000Z',
    url: `https://gt-brk-01.example/propiedades/told-late-${n}`,
  })

/**
 * The in-memory states behind the answers are exact at the position they name even when the read
 * model already holds events they were not told of (applied by another process first): docs/decisions/0117.
 */
for (const target of databaseTargets('provenance of the in-memory answers')) {
  describe(`provenance of the in-memory answers on ${target.name}`, () => {
    it('told of one new listing while two were applied, the zone answers and the inventory show both, at the checkpoint', async () => {
      const db = await target.open()
      const store = await openSqlEventStore(db)
      const runner = new ProjectionRunner(db, store, [listingsProjection])
      const advancing = toldByHand()
      const failures: unknown[] = []
      try {
        await ingestRecords(store, generateDemoFeed({ seed: 'told-late', listings: 120, anchor: ANCHOR }), DEFAULT_FX)
        await runner.catchUp()
        const zones = ReadyZones.follow(db, advancing, (error) => failures.push(error))
        await zones.settled()
        const inventory = await ListingInventory.open(db, advancing, { onError: (error) => failures.push(error) })
        const search = listingSearchOf({ country: 'GT', limit: '200' })
        const before = await inventory.searchBytes(search, NOW)

        const head = await store.headPosition()
        await ingestRecords(store, [newcomer(1, 'Zona 10'), newcomer(2, 'Zona 3')], DEFAULT_FX)
        await runner.catchUp()
        const applied = await store.readAll(head, { limit: 10 })
        expect(applied.length).toBeGreaterThanOrEqual(2)
        // Only the first listing's events are told of: the second's were applied all the same.
        advancing.tell(applied.filter((event) => (event.data as { listing_id: string }).listing_id === (applied[0]!.data as { listing_id: string }).listing_id))
        await zones.settled()
        await inventory.settled()

        const checkpoint = (await runner.status()).find((g) => g.projection === 'listings' && g.state === 'live')!
        const after = await inventory.searchBytes(search, NOW)
        expect(before.at.position).toBe(head)
        expect(after.at).toEqual({ position: checkpoint.position, generation: checkpoint.generation })
        expect(new TextDecoder().decode(after.bytes)).toBe(JSON.stringify(await sqlListingSearch(db, search, NOW)))

        const prepared = await zones.preparedFacts('GT')
        expect(prepared.at).toEqual({ position: checkpoint.position, generation: checkpoint.generation })
        const fresh = ReadyZones.follow(db, advancing, (error) => failures.push(error))
        await fresh.settled()
        expect(zonesAt(prepared.facts, NOW)).toEqual(zonesAt(await fresh.facts('GT'), NOW))
        fresh.stop()
        zones.stop()
        inventory.stop()
        expect(failures).toEqual([])
      } finally {
        await runner.stop()
        await store.close()
        await db.close()
      }
    })
  })
}
