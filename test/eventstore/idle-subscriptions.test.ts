import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Db } from '../../src/db/port.ts'
import { openPglite } from '../../src/db/pglite.ts'
import type { EventStore, RecordedEvent } from '../../src/eventstore/port.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { eventually, sleep } from '../support/eventually.ts'

/** `db`, counting the reads of the log that subscriptions make (their `readAll`). */
function countingReads(db: Db): { db: Db; reads: () => number } {
  let reads = 0
  const counted = (text: string) => {
    // readAll by category (sql-reads.ts): its range starts after the position given.
    if (/from mirador_events/.test(text) && /\(category, global_position\) > \(c\.category, \$1/.test(text)) reads += 1
  }
  return {
    db: {
      ...db,
      query: (text, params) => {
        counted(text)
        return db.query(text, params)
      },
    },
    reads: () => reads,
  }
}

/**
 * Decision 0122: the embedded store has one process, which holds its data directory, so every append
 * wakes its live subscriptions; an idle subscription reads the log only as a safety net, every 5 s,
 * instead of four times a second (the CPU of an idle embedded server, on the thread that answers).
 */
describe('live subscriptions on the embedded store, idle', () => {
  let raw: Db
  let counting: ReturnType<typeof countingReads>
  let store: EventStore
  beforeAll(async () => {
    raw = await openPglite()
    counting = countingReads(raw)
    store = await openSqlEventStore(counting.db)
  })
  afterAll(async () => {
    await store.close()
    await raw.close()
  })

  it('read the log once when they start and not again while nothing is appended', async () => {
    const received: RecordedEvent[] = []
    const before = counting.reads()
    const subscription = store.subscribe(0, async (events) => void received.push(...events), { categories: ['idle'] })
    await sleep(1500)
    // One read at the start; four a second (the PostgreSQL interval) would be six here.
    expect(counting.reads() - before).toBe(1)

    // An append wakes it (the store's contract suite shows the wake-up itself on every store).
    await store.append('idle-1', [{ id: crypto.randomUUID(), type: 'Noted', data: { n: 1 } }], 'no_stream')
    await eventually('the subscription hands the event over', () => received.length === 1)
    expect(received.map((event) => event.stream)).toEqual(['idle-1'])
    await subscription.stop()
  })
})
