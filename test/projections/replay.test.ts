import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { allProjections } from '../../src/storage.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import { openPglite } from '../../src/db/pglite.ts'
import type { Db } from '../../src/db/port.ts'
import { DEMO_DEFAULTS } from '../../src/domain/demo/market.ts'
import { seedDemo } from '../../src/demo/seed.ts'
import type { BatchGuarantee, NewEvent, RecordedEvent } from '../../src/eventstore/port.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { type TestSystem, startTestSystem } from '../support/app.ts'
import { databaseTargets } from '../support/databases.ts'
import { ANCHOR } from '../support/market.ts'
import { readModelRows } from '../support/read-models.ts'

/**
 * Deterministic replay: the whole demo history (the demo market, owners, keys, revocations, tier
 * changes, briefings generated and served from cache) is replayed into separate databases, each
 * projecting it from position 0 in large batches; every read-model table must come out the same
 * row for row, in each, and as the live system built it event by event as they happened.
 */

async function allEvents(system: TestSystem): Promise<RecordedEvent[]> {
  const events: RecordedEvent[] = []
  for (let after = 0; ; ) {
    const page = await system.storage.store.readAll(after, { limit: 5000 })
    if (page.length === 0) return events
    events.push(...page)
    after = page[page.length - 1]!.position
  }
}

/**
 * Appends `events` to an empty store in order, so that each gets the same position again (in one
 * transaction per batch, or per stream as on KurrentDB before 25.1), and projects them from 0.
 */
async function replayInto(db: Db, events: readonly RecordedEvent[], batches: BatchGuarantee): Promise<string[]> {
  const store = await openSqlEventStore(db, { batches })
  try {
    let writes: { stream: string; events: NewEvent[]; expected: 'any' }[] = []
    const streams = new Set<string>()
    const flush = async () => {
      if (writes.length > 0) await store.appendMany(writes)
      writes = []
      streams.clear()
    }
    for (const e of events) {
      const event = { id: e.id, type: e.type, data: e.data, metadata: e.metadata }
      // Consecutive events of a stream make one write; appendMany takes a stream once, so a stream
      // seen again starts the next call.
      if (writes.at(-1)?.stream === e.stream) {
        writes.at(-1)!.events.push(event)
        continue
      }
      if (writes.length >= 500 || streams.has(e.stream)) await flush()
      streams.add(e.stream)
      writes.push({ stream: e.stream, events: [event], expected: 'any' })
    }
    await flush()
    const replayed = await store.readAll(0, { limit: events.length + 1 })
    expect(replayed.map((e) => [e.position, e.id])).toEqual(events.map((e) => [e.position, e.id]))
    await new ProjectionRunner(db, store, allProjections).catchUp()
    return await readModelRows(db)
  } finally {
    await store.close()
  }
}

describe('deterministic replay of the full demo history', () => {
  let system: TestSystem
  let events: RecordedEvent[]

  beforeAll(async () => {
    system = await startTestSystem(await openPglite())
    await seedDemo(system.storage.store, { seed: DEMO_DEFAULTS.seed, listings: DEMO_DEFAULTS.listings, anchor: ANCHOR })
    const acme = await system.ownerWithKey('acme', 'enterprise')
    const client = await system.ownerWithKey('client', 'pro')
    const brief = (key: string, zone: string) =>
      system.request('/api/v1/briefings/investor', {
        key,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ zone, profile: 'balanced', language: 'en' }),
      })
    for (const zone of ['Zona 1', 'Zona 2', 'Zona 3']) expect((await brief(client.key, zone)).status).toBe(200)
    expect((await brief(acme.key, 'Zona 1')).status).toBe(200) // a cache hit
    await system.run('owner set-tier', { id: 'client', tier: 'enterprise', actor: 'root' })
    await system.run('key revoke', { key_id: acme.keyId, actor: 'acme', reason: 'rotated' })
    await system.run('owner deactivate', { id: 'client', actor: 'root' })
    await system.settle()
    events = await allEvents(system)
  })
  afterAll(async () => system?.close())

  const replicas: { name: string; open: () => Promise<Db>; batches: BatchGuarantee }[] = [
    { name: 'PGlite', open: () => openPglite(), batches: 'all-or-nothing' },
    { name: 'PGlite, appended stream by stream', open: () => openPglite(), batches: 'stream-by-stream' },
    ...databaseTargets('deterministic replay')
      .filter((t) => t.name === 'postgres')
      .map((t) => ({ ...t, batches: 'all-or-nothing' as const })),
  ]

  it.each(replicas)('replays into $name with the live read models, table by table and row by row', async (replica) => {
    expect(events.length).toBeGreaterThan(4000)
    expect(new Set(events.map((e) => e.stream.split('-')[0]))).toEqual(new Set(['listing', 'owner', 'apikey', 'quota', 'cachehit']))
    const live = await readModelRows(system.storage.db)
    const db = await replica.open()
    try {
      const replayed = await replayInto(db, events, replica.batches)
      expect(replayed.filter((line) => line.endsWith(' rows'))).toEqual(live.filter((line) => line.endsWith(' rows')))
      expect(replayed).toEqual(live)
    } finally {
      await db.close()
    }
    // Slow by nature: the whole demo history projected from zero (seconds on a quiet machine, a minute beside heavy load).
  }, 240_000)
})
