import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import type { Db } from '../../src/db/port.ts'

/**
 * PGlite runs a statement synchronously and resolves its promise at once: without a turn of the event
 * loop between statements, a long chain of them (a projection catching up during an ingest) kept the
 * server from answering any request, or reading any socket, until it ended (decision 0126). Whoever
 * runs statements back to back lets the event loop turn at least every 10 ms of them.
 */
describe('the embedded store lets the process answer while statements run back to back', () => {
  let db: Db
  beforeAll(async () => {
    db = await openPglite()
  })
  afterAll(() => db?.close())

  /** Runs `statement` over and over for `ms`; how many times a callback queued behind them got to run meanwhile. */
  async function turnsWhile(ms: number, statement: () => Promise<unknown>): Promise<{ turns: number; statements: number }> {
    let turns = 0
    let statements = 0
    let turning = true
    const turn = () => {
      turns++
      if (turning) setImmediate(turn)
    }
    setImmediate(turn)
    const until = performance.now() + ms
    while (performance.now() < until) {
      await statement()
      statements++
    }
    turning = false
    // What `turn` saw while the statements ran, not after.
    return { turns, statements }
  }

  test('statements on their own', async () => {
    const { turns, statements } = await turnsWhile(100, () => db.query('select 1 as one'))
    expect(statements).toBeGreaterThan(1)
    // At least one turn per 10 ms of statements, whatever the machine's speed: 100 ms of them give several.
    expect(turns).toBeGreaterThanOrEqual(5)
  })

  test('statements inside one transaction', async () => {
    const { turns } = await db.transaction(async (tx) => turnsWhile(100, () => tx.query('select 1 as one')))
    expect(turns).toBeGreaterThanOrEqual(5)
  })
})
