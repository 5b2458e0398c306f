import { afterAll, beforeAll } from 'vitest'
import type { Projection } from '../../projections/engine/projection.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import type { Db } from '../../src/db/port.ts'
import type { EventStore } from '../../src/eventstore/port.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'

/** `runner`: only when `projections` were given. */
export type StoreEnv = { db: Db; store: EventStore; runner: ProjectionRunner }

/**
 * For the enclosing describe block: a database from `open` and the event store on it, `seed`ed, then
 * a (not yet started) runner of `projections` on them; ready in its tests, stopped and closed after.
 */
export function storeFor(open: () => Promise<Db>, setup: { seed?: (store: EventStore, db: Db) => Promise<unknown>; projections?: readonly Projection[] } = {}): StoreEnv {
  const env = {} as StoreEnv
  beforeAll(async () => {
    env.db = await open()
    env.store = await openSqlEventStore(env.db)
    await setup.seed?.(env.store, env.db)
    if (setup.projections) env.runner = new ProjectionRunner(env.db, env.store, setup.projections)
  })
  afterAll(async () => {
    await env.runner?.stop()
    await env.store?.close()
    await env.db?.close()
  })
  return env
}
