import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import type { Db } from '../../src/db/port.ts'
import { GroupedAppends } from '../../src/eventstore/grouped-appends.ts'
import type { EventStore, ExpectedRevision, NewEvent } from '../../src/eventstore/port.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { watchedEventStore } from '../../src/eventstore/watched.ts'
import { asRequest, Dependency } from '../../src/runtime/dependency.ts'

const anEvent = (n: number): NewEvent => ({ id: crypto.randomUUID(), type: 'Noted', data: { n } })
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

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

  it('runs each append on a budget of its own: a chain of appends longer than one request\'s budget refuses no caller', async () => {
    // Each append takes 200 ms and a caller arrives while each is written: ten appends in a row,
    // 2 s together, longer than any one request may wait (REQUEST_BUDGET_MS). Run in the context of
    // the caller that started the chain, the later appends were refused (503 on a healthy database).
    const dependency = new Dependency('event store', () => {})
    const slow = watchedEventStore(
      { ...store, append: async (stream, events, expected) => (await sleep(200), store.append(stream, events, expected)) },
      dependency,
    )
    const grouped = new GroupedAppends(slow)
    const events = Array.from({ length: 10 }, (_, n) => anEvent(n))
    const outcomes = await Promise.allSettled(events.map(async (event, n) => (await sleep(n * 150), asRequest(() => grouped.append('notes-e', event)))))
    expect(outcomes.map((o) => o.status)).toEqual(events.map(() => 'fulfilled'))
    expect((await store.readStream('notes-e')).map((e) => e.data.n).sort((a, b) => Number(a) - Number(b))).toEqual(events.map((_, n) => n))
    expect(dependency.reachable).toBe(true)
  })
})
