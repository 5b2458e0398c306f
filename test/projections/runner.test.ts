import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { liveTables } from '../../projections/engine/live-tables.ts'
import { type Projection, sql } from '../../projections/engine/projection.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import type { Db } from '../../src/db/port.ts'
import { toNumber } from '../../src/db/port.ts'
import type { EventStore, RecordedEvent } from '../../src/eventstore/port.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { databaseTargets, type SharedDatabase } from '../support/databases.ts'
import { eventually } from '../support/eventually.ts'

type Tally = { stream: string; events: number; total: number; lastEvent: string; lastPosition: number }

/**
 * A tiny read model: per stream, how many `Counted` events and the sum of their amounts, plus the
 * last event applied (so that order matters). Events flagged `poison` make `apply` throw; events
 * flagged `failing` yield a statement the database refuses.
 */
function tallyProjection(): Projection<'tally'> & { category: string; rows(db: Db): Promise<Tally[]> } {
  const label = Math.random().toString(36).slice(2, 10)
  const projection: Projection<'tally'> & { category: string } = {
    name: `tally_${label}`,
    version: 1,
    category: `tally${label}`,
    categories: [`tally${label}`],
    tables: { tally: `tally_${label}` },
    schema: (t) => [
      `create table if not exists ${t.tally} (
         stream text primary key, events integer not null, total bigint not null,
         last_event uuid not null, last_position bigint not null)`,
    ],
    indexes: () => [],
    apply(event, t) {
      if (event.data.poison) throw new Error(`poisoned event at ${event.position}`)
      if (event.data.failing) return [sql('select 1 / $1::integer', 0)]
      return [
        sql(
          `insert into ${t.tally} (stream, events, total, last_event, last_position) values ($1, 1, $2, $3, $4)
           on conflict (stream) do update set events = ${t.tally}.events + 1, total = ${t.tally}.total + excluded.total,
             last_event = excluded.last_event, last_position = excluded.last_position`,
          event.stream,
          event.data.amount,
          event.id,
          event.position,
        ),
      ]
    },
  }
  return {
    ...projection,
    async rows(db) {
      const { tables } = await liveTables(db).of(projection)
      const rows = await db.query(`select * from ${tables.tally} order by stream`)
      return rows.map((r) => ({
        stream: String(r.stream),
        events: toNumber(r.events),
        total: toNumber(r.total),
        lastEvent: String(r.last_event),
        lastPosition: toNumber(r.last_position),
      }))
    },
  }
}

/** What the tally must hold after applying `events` once each, in order. */
function expectedTally(events: readonly RecordedEvent[]): Tally[] {
  const byStream = new Map<string, Tally>()
  for (const e of events) {
    const row = byStream.get(e.stream) ?? { stream: e.stream, events: 0, total: 0, lastEvent: '', lastPosition: 0 }
    byStream.set(e.stream, {
      ...row,
      events: row.events + 1,
      total: row.total + Number(e.data.amount),
      lastEvent: e.id,
      lastPosition: e.position,
    })
  }
  return [...byStream.values()].sort((a, b) => (a.stream < b.stream ? -1 : a.stream > b.stream ? 1 : 0))
}

const counted = (amount: number, extra: Record<string, unknown> = {}) => ({
  id: crypto.randomUUID(),
  type: 'Counted',
  data: { amount, ...extra },
})

/** Appends `count` events spread over `streams` streams of `category`, in appends of `perAppend`. */
async function appendCounted(store: EventStore, category: string, count: number, streams: number, perAppend = 1) {
  for (let i = 0; i < count; i += perAppend) {
    const size = Math.min(perAppend, count - i)
    await store.append(`${category}-${i % streams}`, Array.from({ length: size }, (_, j) => counted(i + j)), 'any')
  }
}

/** The checkpoint of the live generation (`catching up` while events are pending). */
const checkpointOf = async (runner: ProjectionRunner) =>
  (await runner.status()).find((g) => g.state === 'live' || g.state === 'catching up')!.position

for (const target of databaseTargets('projection runner')) {
  describe(`projection runner on ${target.name}`, () => {
    let database: SharedDatabase
    let db: Db
    let store: EventStore

    beforeAll(async () => {
      database = await target.create()
      db = await database.connect()
      store = await openSqlEventStore(db)
    })
    afterAll(async () => {
      await store?.close()
      await db?.close()
      await database?.dispose()
    })

    const eventsOf = async (projection: { category: string }) => {
      const all: RecordedEvent[] = []
      for (let after = 0; ; ) {
        const page = await store.readAll(after, { categories: [projection.category] })
        if (page.length === 0) return all
        all.push(...page)
        after = page[page.length - 1]!.position
      }
    }

    it('catches up applying each event once, and checkpoints the last position it applied', async () => {
      const tally = tallyProjection()
      // More than one batch (1000) of its own events, interleaved with another category's.
      await appendCounted(store, tally.category, 1500, 5, 100)
      await appendCounted(store, `not${tally.category}`, 30, 3)
      const runner = new ProjectionRunner(db, store, [tally])

      await runner.catchUp()

      const events = await eventsOf(tally)
      expect(events).toHaveLength(1500)
      expect(await tally.rows(db)).toEqual(expectedTally(events))
      const head = await store.headPosition()
      expect(await runner.status()).toEqual([
        expect.objectContaining({ projection: tally.name, generation: 'v1.1', state: 'live', position: events[events.length - 1]!.position, head, lag_events: 0 }),
      ])

      await runner.catchUp()
      expect(await tally.rows(db)).toEqual(expectedTally(events))

      await appendCounted(store, tally.category, 7, 2)
      await runner.catchUp()
      const more = await eventsOf(tally)
      expect(await tally.rows(db)).toEqual(expectedTally(more))
      expect(await checkpointOf(runner)).toBe(more[more.length - 1]!.position)
    })

    it('rebuilds from position 0 into identical rows', async () => {
      const tally = tallyProjection()
      await appendCounted(store, tally.category, 300, 4, 10)
      const runner = new ProjectionRunner(db, store, [tally])
      await runner.catchUp()
      const built = await tally.rows(db)
      const checkpoint = await checkpointOf(runner)
      // Damage the read model: only a real replay from zero can repair it.
      await db.query(`update ${(await liveTables(db).of(tally)).tables.tally} set total = -1, events = 0`)

      await runner.rebuild([tally.name])

      expect(await tally.rows(db)).toEqual(built)
      expect(await checkpointOf(runner)).toBe(checkpoint)
      expect(built).toEqual(expectedTally(await eventsOf(tally)))
    })

    it('lets two live runners in separate processes share a projection, each event applied exactly once and told to both', async () => {
      const tally = tallyProjection()
      const dbB = await database.connect()
      const storeB = await openSqlEventStore(dbB)
      const errors: unknown[] = []
      const runners = [new ProjectionRunner(db, store, [tally]), new ProjectionRunner(dbB, storeB, [tally])]
      const told = runners.map((runner) => {
        const positions: number[] = []
        runner.onLiveAdvanced((_, events) => positions.push(...events.map((e) => e.position)))
        return positions
      })
      try {
        await appendCounted(store, tally.category, 100, 3, 10)
        await Promise.all(runners.map((r) => r.start((error) => errors.push(error))))
        const followedFrom = await store.headPosition()

        await Promise.all(
          Array.from({ length: 200 }, (_, i) =>
            (i % 2 === 0 ? store : storeB).append(`${tally.category}-${i % 6}`, [counted(i)], 'any'),
          ),
        )
        const events = await eventsOf(tally)
        const last = events[events.length - 1]!.position
        await eventually('the shared checkpoint reaches the last event', async () => (await checkpointOf(runners[0]!)) === last)

        expect(events).toHaveLength(300)
        expect(await tally.rows(db)).toEqual(expectedTally(events))
        // Each process is told of every event appended while it follows, whichever process applied it.
        const appended = events.filter((e) => e.position > followedFrom).map((e) => e.position)
        for (const positions of told) {
          await eventually('the runner is told of every event', () => positions.filter((p) => p > followedFrom).length >= appended.length)
          expect(positions.filter((p) => p > followedFrom).sort((a, b) => a - b)).toEqual(appended)
        }
        expect(errors).toEqual([])
      } finally {
        await Promise.all(runners.map((r) => r.stop()))
        await storeB.close()
        await dbB.close()
      }
    })

    it('leaves rows and checkpoint untouched when apply throws in the middle of a batch', async () => {
      const tally = tallyProjection()
      await appendCounted(store, tally.category, 3, 1)
      const live = new ProjectionRunner(db, store, [tally])
      const errors: unknown[] = []
      await live.start((error) => errors.push(error))
      const told: RecordedEvent[] = []
      live.onLiveAdvanced((_, events) => told.push(...events))
      const rows = await tally.rows(db)
      const checkpoint = await checkpointOf(live)
      expect(rows).toEqual(expectedTally(await eventsOf(tally)))

      // One append, so the live runner sees the three events as one batch.
      await store.append(`${tally.category}-0`, [counted(10), counted(20, { poison: true }), counted(30)], 'any')
      await eventually('the live runner reports the failure', () => errors.length > 0)
      await live.stop()

      expect(String(errors[0])).toContain('poisoned event')
      expect(told).toEqual([])
      expect(await tally.rows(db)).toEqual(rows)
      expect(await checkpointOf(live)).toBe(checkpoint)

      const catchingUp = new ProjectionRunner(db, store, [tally])
      await expect(catchingUp.catchUp()).rejects.toThrow('poisoned event')
      expect(await tally.rows(db)).toEqual(rows)
      expect(await checkpointOf(catchingUp)).toBe(checkpoint)
    })

    it('leaves rows and checkpoint untouched when the database refuses a statement in the middle of a batch', async () => {
      const tally = tallyProjection()
      await appendCounted(store, tally.category, 3, 1)
      const runner = new ProjectionRunner(db, store, [tally])
      await runner.catchUp()
      const rows = await tally.rows(db)
      const checkpoint = await checkpointOf(runner)
      // Statements before and after the refused one, in the same batch.
      await store.append(`${tally.category}-0`, [counted(10), counted(20, { failing: true }), counted(30), counted(40)], 'any')

      // The error is the refused statement's own, not one of the statements that followed it.
      await expect(runner.catchUp()).rejects.toThrow('division by zero')

      expect(await tally.rows(db)).toEqual(rows)
      expect(await checkpointOf(runner)).toBe(checkpoint)
    })
  })
}
