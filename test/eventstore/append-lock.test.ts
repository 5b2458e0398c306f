import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Db } from '../../src/db/port.ts'
import { openPostgres } from '../../src/db/postgres.ts'
import type { EventStore } from '../../src/eventstore/port.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { uniqueSchema } from '../support/databases.ts'
import { eventually, sleep } from '../support/eventually.ts'

const DATABASE_URL = process.env.DATABASE_URL
if (!DATABASE_URL) console.warn('[skipped] append lock across schemas: DATABASE_URL is not set')

/**
 * Two stacks on one PostgreSQL database, each in its own schema (README: `?search_path=`): the
 * lock that serialises appends is their events table's, so one stack's append never waits for the
 * other's. With one lock for the whole database, a long append of one stack held every other's.
 */
describe.skipIf(!DATABASE_URL)('the append lock, two stacks on one database', () => {
  const schemas = [uniqueSchema('lock'), uniqueSchema('lock')]
  let dbs: Db[] = []
  let stores: EventStore[] = []
  let holder: Db
  beforeAll(async () => {
    dbs = await Promise.all(schemas.map((schema) => openPostgres(DATABASE_URL!, { schema })))
    stores = await Promise.all(dbs.map((db) => openSqlEventStore(db)))
    holder = await openPostgres(DATABASE_URL!, { schema: schemas[0], max: 1 })
  })
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()))
    await Promise.all(dbs.map((db) => db.close()))
    await holder.exec(schemas.map((schema) => `drop schema if exists ${schema} cascade;`).join('\n'))
    await holder.close()
  })

  it("appends to one schema while an append to the other holds that schema's lock", async () => {
    let release = () => {}
    const released = new Promise<void>((resolve) => (release = resolve))
    let locked: (pid: number) => void = () => {}
    const holderPid = new Promise<number>((resolve) => (locked = resolve))
    // The first stack's append takes its lock, then waits for its table, held here.
    const holding = holder.transaction(async (tx) => {
      await tx.query('lock table mirador_events in exclusive mode')
      const [row] = await tx.query<{ pid: number }>('select pg_backend_pid() as pid')
      locked(Number(row!.pid))
      await released
    })
    const pid = await holderPid
    const held = stores[0]!.append('notes-a', [{ id: crypto.randomUUID(), type: 'Noted', data: { n: 1 } }], 'any')
    await eventually('the first append waits for the table', async () => (await dbs[0]!.query('select 1 from pg_stat_activity where $1 = any(pg_blocking_pids(pid))', [pid])).length > 0)

    // The other stack is not held (the generous limit only keeps a regression from hanging the suite).
    const other = await Promise.race([
      stores[1]!.append('notes-b', [{ id: crypto.randomUUID(), type: 'Noted', data: { n: 2 } }], 'any'),
      sleep(15_000).then(() => 'still waiting for the other schema'),
    ]).finally(release)
    expect(other).toMatchObject({ revision: 0, duplicate: false })

    await holding
    expect(await held).toMatchObject({ revision: 0, duplicate: false })
    expect((await stores[0]!.readStream('notes-a')).map((e) => e.data)).toEqual([{ n: 1 }])
  })
})
