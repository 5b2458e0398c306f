import { describe, expect, it } from 'vitest'
import { lacksMarketData, seedDemo } from '../../src/demo/seed.ts'
import { ingestLines } from '../../src/listings/ingest.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import type { RecordedEvent } from '../../src/eventstore/port.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { databaseTargets } from '../support/databases.ts'
import { aLine, ANCHOR } from '../support/market.ts'

describe('demo seeding', () => {
  it('records the same events for the same seed in any store, and nothing when seeded again', async () => {
    const targets = databaseTargets('demo seeding')
    // Two stores: PGlite and PostgreSQL when available, else two PGlite instances.
    const chosen = targets.length > 1 ? targets : [targets[0]!, targets[0]!]
    const stores = await Promise.all(
      chosen.map(async (target) => {
        const db = await target.open()
        return { db, store: await openSqlEventStore(db) }
      }),
    )
    const options = { seed: 'same', listings: 120, anchor: ANCHOR }
    const progress: [number, number][] = []
    const first = await seedDemo(stores[0]!.store, options, (done, total) => progress.push([done, total]))
    await seedDemo(stores[1]!.store, options)

    const events = await Promise.all(stores.map(({ store }) => store.readAll(0, { limit: 100_000 })))
    const comparable = (list: RecordedEvent[]) => list.map(({ recordedAt: _at, ...event }) => event)
    expect(comparable(events[0]!)).toEqual(comparable(events[1]!))
    expect(first).toMatchObject({ listings: 120, new: 120, unchanged: 0 })
    expect(progress[progress.length - 1]).toEqual([first.read, first.read])

    expect(await seedDemo(stores[0]!.store, options)).toMatchObject({ new: 0, changed: 0, unchanged: first.read })
    expect(await stores[0]!.store.headPosition()).toBe(events[0]!.length)
    for (const { store, db } of stores) {
      await store.close()
      await db.close()
    }
  })
})

describe('demo seeding on a store that appends stream by stream (KurrentDB before 25.1)', () => {
  it('records the very events of a store that records batches all or nothing, and nothing when seeded again', async () => {
    const target = databaseTargets('demo seeding')[0]!
    const [atomic, byStream] = await Promise.all(
      (['all-or-nothing', 'stream-by-stream'] as const).map(async (batches) => {
        const db = await target.open()
        return { db, store: await openSqlEventStore(db, { batches }) }
      }),
    )
    const options = { seed: 'streams', listings: 120, anchor: ANCHOR }
    const first = await seedDemo(byStream!.store, options)
    await seedDemo(atomic!.store, options)
    const comparable = (list: RecordedEvent[]) => list.map(({ recordedAt: _at, ...event }) => event)
    expect(comparable(await byStream!.store.readAll(0, { limit: 100_000 }))).toEqual(comparable(await atomic!.store.readAll(0, { limit: 100_000 })))
    expect(await seedDemo(byStream!.store, options)).toMatchObject({ new: 0, changed: 0, unchanged: first.read })
    for (const { store, db } of [atomic!, byStream!]) {
      await store.close()
      await db.close()
    }
  })
})

describe('when the demo market is due', () => {
  it('while the store holds no listing event, whatever else it holds; not once a feed or the demo was ingested', async () => {
    const db = await databaseTargets('demo seeding')[0]!.open()
    const store = await openSqlEventStore(db)
    try {
      expect(await lacksMarketData(store)).toBe(true)
      const at = '2026-05-01T00:00:00.000Z'
      await store.append('owner-acme-corp', [{ id: crypto.randomUUID(), type: 'OwnerRegistered', data: { owner_id: 'acme-corp', tier: 'pro', by: 'operator', at } }], 'no_stream')
      await store.append('quota-acme-corp-2026-05', [{ id: crypto.randomUUID(), type: 'BriefingGenerated', data: { owner_id: 'acme-corp' } }], 'no_stream')
      expect(await lacksMarketData(store)).toBe(true)
      await ingestLines(store, [JSON.stringify(aLine())], { fx: DEFAULT_FX, now: new Date(at) })
      expect(await lacksMarketData(store)).toBe(false)
    } finally {
      await store.close()
      await db.close()
    }
  })
})
