import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listGenerations } from '../../projections/engine/generations.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import { openPglite } from '../../src/db/pglite.ts'
import type { Db } from '../../src/db/port.ts'
import { EventStoreUnavailable, type EventStore } from '../../src/eventstore/port.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { eventually } from '../support/eventually.ts'
import { tickCounter } from '../support/tick-counter.ts'

/**
 * `projections status` after an outage of the event store (issue 28, item 6): while the store does
 * not answer, the live generation shows the failure; once it answers again, the failure is gone,
 * though no event came since (before, it stayed until the next event was applied).
 */

const counter = tickCounter('outage_counter')

/** `db` as a server that can be stopped: while `down`, every call fails as an unreachable store's does. */
function stoppable(db: Db) {
  const state = { down: false }
  const unlessDown = <T>(call: () => Promise<T>): Promise<T> =>
    state.down ? Promise.reject(new EventStoreUnavailable('connect ECONNREFUSED (stopped by the spec)')) : call()
  const wrapped: Db = {
    kind: db.kind,
    query: (text, params) => unlessDown(() => db.query(text, params)),
    exec: (script) => unlessDown(() => db.exec(script)),
    transaction: (work) => unlessDown(() => db.transaction(work)),
    listen: (channel, onNotify) => db.listen(channel, onNotify),
    close: () => db.close(),
  }
  return { db: wrapped, state }
}

describe('projections status after the event store comes back', () => {
  let readModels: Db
  let events: ReturnType<typeof stoppable>
  let store: EventStore
  let runner: ProjectionRunner

  beforeAll(async () => {
    readModels = await openPglite()
    events = stoppable(await openPglite())
    store = await openSqlEventStore(events.db)
    runner = new ProjectionRunner(readModels, store, [counter])
    await store.append('tick-a', [{ id: crypto.randomUUID(), type: 'Ticked', data: {} }], 'any')
    await runner.start(() => {})
  })
  afterAll(async () => {
    await runner?.stop()
    await store?.close()
    await readModels?.close()
  })

  /** The last error `projections status` shows for the live generation (the status also reads the store, so only once it answers). */
  const statusError = async () => (await runner.status()).find((g) => g.state === 'live')!.last_error
  /** The same, as recorded in the registry, which the status shows: readable during the outage. */
  const recordedError = async () => (await listGenerations(readModels, [counter.name])).find((g) => g.state === 'live')!.lastError

  it('records the outage while it lasts, and shows nothing once the store answers, with no event in between', async () => {
    expect(await statusError()).toBeNull()
    events.state.down = true
    await eventually('the outage is recorded', async () => (await recordedError()) !== null)
    expect(await recordedError()).toBe('the event store is unavailable; retry in a moment')

    events.state.down = false
    await eventually('the status is clear again', async () => (await statusError()) === null)
    expect(await recordedError()).toBeNull()
    expect((await runner.status()).map((g) => [g.state, g.lag_events])).toEqual([['live', 0]])
  })
})
