import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import type { Db } from '../../src/db/port.ts'
import { GroupedAppends } from '../../src/eventstore/grouped-appends.ts'
import type { EventStore, ExpectedRevision, NewEvent } from '../../src/eventstore/port.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'

const anEvent = (n: number): NewEvent => ({ id: crypto.randomUUID(), type: 'Noted', data: { n } })

describe('grouped appends (group commit)', () => {
  let db: Db
  let store: EventStore
  beforeAll(async () => {
    db = await openPglite()
    store = await openSqlEventStore(db)
  })
  afterAll(async () => {
    await store.close()
    await db.close()
  })

  /** The real store, with every append it is asked for written down. */
  const observed = () => {
    const appends: number[] = []
    return {
      appends,
      append: (stream: string, events: readonly NewEvent[], expected: ExpectedRevision) => {
        appends.push(events.length)
        return store.append(stream, events, expected)
      },
    }
  }

  it('stores every event of concurrent callers, once, in far fewer appends, each caller answered after its event is stored', async () => {
    const recorder = observed()
    const grouped = new GroupedAppends(recorder)
    const events = Array.from({ length: 200 }, (_, n) => anEvent(n))
    await Promise.all(
      events.map(async (event) => {
        await grouped.append('notes-a', event)
        const stored = await store.readStream('notes-a')
        expect(stored.map((e) => e.id)).toContain(event.id)
      }),
    )
    const stored = await store.readStream('notes-a')
    expect(stored.map((e) => e.data.n).sort((a, b) => Number(a) - Number(b))).toEqual(events.map((_, n) => n))
    expect(recorder.appends.reduce((sum, n) => sum + n, 0)).toBe(200)
    expect(recorder.appends.length).toBeLessThan(20)
  })

  it('puts the events of callers arriving in the same turn into one append', async () => {
    const recorder = observed()
    const grouped = new GroupedAppends(recorder)
    await Promise.all([1, 2, 3].map((n) => grouped.append('notes-d', anEvent(n))))
    expect(recorder.appends).toEqual([3])
  })

  it('keeps streams apart, and a failed append fails only the callers whose events it carried', async () => {
    let failNext = true
    const grouped = new GroupedAppends({
      append: (stream, events, expected) => {
        if (stream === 'notes-b' && failNext) {
          failNext = false
          return Promise.reject(new Error('disk full'))
        }
        return store.append(stream, events, expected)
      },
    })
    const first = expect(grouped.append('notes-b', anEvent(1))).rejects.toThrow('disk full')
    // The first append is written on the event loop's next turn; these come after it.
    await new Promise((resolve) => setImmediate(resolve))
    const meanwhile = [grouped.append('notes-b', anEvent(2)), grouped.append('notes-c', anEvent(3))]
    await first
    await Promise.all(meanwhile)
    expect((await store.readStream('notes-b')).map((e) => e.data.n)).toEqual([2])
    expect((await store.readStream('notes-c')).map((e) => e.data.n)).toEqual([3])
  })
})
