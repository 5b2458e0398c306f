import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { verifyLog } from '../../src/audit/verify.ts'
import type { Db } from '../../src/db/port.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { databaseTargets, type SharedDatabase } from '../support/databases.ts'

/**
 * A store recorded before the chain existed (the events table as it was, rows inserted as appends
 * inserted them) is upgraded when a version with the chain opens it: no row is rewritten, one
 * `LogChainStarted` event records the digest of everything before it, and later events chain on it.
 */

/** The events table and an append's insert as they were before the chain (decision 0115). */
const LEGACY_SCHEMA = `
create table mirador_events (
  global_position bigint generated always as identity primary key,
  event_id uuid not null unique,
  stream_name text not null,
  stream_revision bigint not null,
  category text not null,
  event_type text not null,
  data jsonb not null,
  metadata jsonb not null default '{}'::jsonb,
  recorded_at timestamptz not null default clock_timestamp(),
  unique (stream_name, stream_revision)
);
create index mirador_events_by_category on mirador_events (category, global_position);`

async function recordLegacy(db: Db, count: number): Promise<void> {
  await db.exec(LEGACY_SCHEMA)
  for (let n = 0; n < count; n++) {
    await db.query(
      `insert into mirador_events (event_id, stream_name, stream_revision, category, event_type, data, metadata)
       values ($1, $2, $3, 'owner', 'OwnerRegistered', $4::text::jsonb, '{}')`,
      [crypto.randomUUID(), `owner-o${n % 3}`, Math.floor(n / 3), JSON.stringify({ owner_id: `o${n % 3}`, n })],
    )
  }
}

for (const target of databaseTargets('the chain\'s upgrade')) {
  describe(`a store recorded without the chain, on ${target.name}`, () => {
    let shared: SharedDatabase
    let dbs: Db[]
    beforeEach(async () => {
      shared = await target.create()
      dbs = [await shared.connect()]
      await recordLegacy(dbs[0]!, 6)
    })
    afterEach(async () => {
      for (const db of dbs) await db.close()
      await shared.dispose()
    })

    test('two processes open it at once: one LogChainStarted is recorded, no earlier row changes, and the log verifies', async () => {
      const before = await dbs[0]!.query('select global_position, event_id, data::text, recorded_at from mirador_events order by 1')
      dbs.push(await shared.connect())
      const stores = await Promise.all(dbs.map((db) => openSqlEventStore(db)))
      const started = await stores[0]!.readStream('log-chain')
      expect(started).toHaveLength(1)
      expect(started[0]).toMatchObject({ position: 7, type: 'LogChainStarted', revision: 0, data: { through: 6, events: 6 } })
      expect(started[0]!.data.digest).toMatch(/^[0-9a-f]{64}$/)
      expect(await dbs[0]!.query('select global_position, event_id, data::text, recorded_at from mirador_events where global_position <= 6 order by 1')).toEqual(before)

      await stores[1]!.append('owner-o9', [{ id: crypto.randomUUID(), type: 'OwnerRegistered', data: { owner_id: 'o9' } }], 'no_stream')
      const verified = await verifyLog(stores[0]!)
      expect(verified).toMatchObject({ events: 8, fault: null })
      expect(verified.head).toMatch(/^8:/)
      for (const store of stores) await store.close()
    })

    test('two processes appending at once, batches and single events, leave a whole chain', async () => {
      dbs.push(await shared.connect())
      const stores = await Promise.all(dbs.map((db) => openSqlEventStore(db)))
      const event = (n: number) => ({ id: crypto.randomUUID(), type: 'OwnerRegistered', data: { owner_id: `p${n}` } })
      await Promise.all(
        stores.map(async (store, p) => {
          for (let round = 0; round < 10; round++) {
            await store.appendMany([1, 2, 3].map((k) => ({ stream: `owner-p${p}-${round}-${k}`, events: [event(k)], expected: 'no_stream' as const })))
            await store.append(`owner-p${p}-${round}-single`, [event(round), event(round + 1)], 'no_stream')
          }
        }),
      )
      expect(await verifyLog(stores[0]!)).toMatchObject({ events: 6 + 1 + 2 * 10 * 5, fault: null })
      for (const store of stores) await store.close()
    })

    test('opened again later, it is not upgraded a second time', async () => {
      await (await openSqlEventStore(dbs[0]!)).close()
      const store = await openSqlEventStore(dbs[0]!)
      expect(await store.readStream('log-chain')).toHaveLength(1)
      expect((await verifyLog(store)).fault).toBeNull()
      await store.close()
    })

    test('an event recorded before the upgrade, changed afterwards: caught at the upgrade\'s event, which names the range it covers', async () => {
      const store = await openSqlEventStore(dbs[0]!)
      await dbs[0]!.query(`update mirador_events set data = jsonb_set(data, '{n}', '30') where global_position = 3`)
      const verified = await verifyLog(store)
      expect(verified.fault).toMatchObject({ position: 7, stream: 'log-chain', kind: 'before-upgrade' })
      expect(verified.fault!.message).toContain('one of positions 1…6 was altered, inserted, deleted or reordered')
      await store.close()
    })

    test('an event recorded before the upgrade, deleted afterwards: caught as well', async () => {
      const store = await openSqlEventStore(dbs[0]!)
      await dbs[0]!.query('delete from mirador_events where global_position = 1')
      expect((await verifyLog(store)).fault).toMatchObject({ position: 7, kind: 'before-upgrade' })
      await store.close()
    })
  })
}
