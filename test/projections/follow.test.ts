import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Coalesced } from '../../projections/engine/coalesce.ts'
import { followLive } from '../../projections/engine/follow.ts'
import { type LiveGeneration, liveTables } from '../../projections/engine/live-tables.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import { openPglite } from '../../src/db/pglite.ts'
import type { Db } from '../../src/db/port.ts'
import type { EventStore } from '../../src/eventstore/port.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { eventually } from '../support/eventually.ts'
import { tickCounter } from '../support/tick-counter.ts'

/** The one follow loop: Coalesced (one run at a time) and followLive (an in-memory copy of a live generation). */

describe('coalesced runs', () => {
  it('runs asked for while one runs make exactly one more, which every caller waits for', async () => {
    let runs = 0
    let finish: () => void = () => {}
    const runner = new Coalesced(
      async () => {
        runs += 1
        await new Promise<void>((resolve) => (finish = resolve))
      },
      { onError: () => {} },
    )
    const settledFirst: string[] = []
    const first = runner.request().then(() => settledFirst.push('first'))
    const during = [runner.request(), runner.request(), runner.request()]
    finish()
    await eventually('the second run starts', () => runs === 2)
    expect(settledFirst).toEqual([])
    finish()
    await Promise.all([first, ...during])
    expect(runs).toBe(2)
  })

  it('reports a failed run to its callers and to onError, and retries until a run succeeds', async () => {
    let attempts = 0
    const errors: unknown[] = []
    const runner = new Coalesced(
      async () => {
        attempts += 1
        if (attempts < 3) throw new Error(`attempt ${attempts} failed`)
      },
      { onError: (error) => errors.push(error), retryMs: 1 },
    )
    await expect(runner.request()).rejects.toThrow('attempt 1 failed')
    await eventually('a retry succeeds', () => attempts === 3)
    await runner.settled()
    expect(errors.map(String)).toEqual(['Error: attempt 1 failed', 'Error: attempt 2 failed'])
  })

  it('runs nothing more once stopped, not even a scheduled retry', async () => {
    let attempts = 0
    const runner = new Coalesced(
      async () => {
        attempts += 1
        throw new Error('down')
      },
      { onError: () => {}, retryMs: 1 },
    )
    await expect(runner.request()).rejects.toThrow('down')
    runner.stop()
    await runner.request()
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(attempts).toBe(1)
  })
})

const counter = tickCounter('follow_counter')

describe('a follower of a live generation', () => {
  let db: Db
  let store: EventStore
  let runner: ProjectionRunner
  beforeAll(async () => {
    db = await openPglite()
    store = await openSqlEventStore(db)
    runner = new ProjectionRunner(db, store, [counter])
  })
  afterAll(async () => {
    await store?.close()
    await db?.close()
  })

  const tick = (stream: string) => store.append(stream, [{ id: crypto.randomUUID(), type: 'Ticked', data: {} }], 'any')
  const countsIn = async (generation: LiveGeneration) =>
    Object.fromEntries(
      (await db.query<{ stream: string; n: number }>(`select stream, n from ${generation.tables.counts} order by stream`)).map((r) => [r.stream, r.n]),
    )

  it('answers 503 at once while its load fails, then follows every batch once a retry succeeds; firstLoaded waits for the success', async () => {
    await tick('tick-a')
    await runner.catchUp()
    let failing = true
    const errors: unknown[] = []
    const follower = followLive(
      { live: liveTables(db), advancing: runner },
      {
        projection: counter,
        what: 'tick counts',
        load: async (generation) => {
          if (failing) throw new Error('the database is down')
          return countsIn(generation)
        },
        advance: (_, _events, generation) => countsIn(generation),
      },
      (error) => errors.push(error),
    )
    let firstLoaded = false
    void follower.firstLoaded.then(() => (firstLoaded = true))
    try {
      await eventually('the first load fails', () => errors.length > 0)
      expect(firstLoaded).toBe(false)
      expect(String(errors[0])).toContain('the database is down')
      // Asked again while loads keep failing: refused at once, not left waiting for a retry.
      for (let i = 0; i < 2; i++) {
        await expect(follower.current()).rejects.toMatchObject({
          code: 'service_unavailable',
          message: 'tick counts are being loaded; retry in a moment',
          headers: { 'Retry-After': '1' },
        })
      }

      failing = false
      await eventually('a retry loads the generation', () => follower.latest() !== undefined)
      await follower.firstLoaded
      expect(await follower.current()).toEqual({ 'tick-a': 1 })

      await tick('tick-a')
      await tick('tick-b')
      await runner.catchUp()
      await follower.settled()
      expect(await follower.current()).toEqual({ 'tick-a': 2, 'tick-b': 1 })
    } finally {
      follower.stop()
    }
  })
})
