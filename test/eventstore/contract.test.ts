import type { Db, Sql } from '../../src/db/port.ts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BatchGuarantee, EventStore, RecordedEvent } from '../../src/eventstore/port.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { type DatabaseTarget, databaseTargets } from '../support/databases.ts'
import { type CommitStall, type EventStoreUnderTest, eventStoreContract } from './contract.ts'

/**
 * Wraps a connection so that a test can hold its next transaction open after the work is done,
 * just before commit: a process that is slow to commit, without touching the store's code.
 */
function withCommitStall(db: Db): { db: Db; stallNextCommit(): CommitStall } {
  let armed: { reached: () => void; opened: Promise<void> } | null = null
  const transaction = <R>(work: (tx: Sql) => Promise<R>) =>
    db.transaction(async (tx) => {
      const result = await work(tx)
      const stall = armed
      armed = null
      if (stall) {
        stall.reached()
        await stall.opened
      }
      return result
    })
  return {
    db: { ...db, transaction },
    stallNextCommit() {
      let reached!: () => void
      let release!: () => void
      const stall: CommitStall = {
        reached: new Promise<void>((resolve) => (reached = resolve)),
        release: () => release(),
      }
      armed = { reached, opened: new Promise<void>((resolve) => (release = resolve)) }
      return stall
    },
  }
}

async function sqlEventStore(target: DatabaseTarget, batches: BatchGuarantee = 'all-or-nothing'): Promise<EventStoreUnderTest> {
  const database = await target.create()
  const open: { store: EventStore; db: Db }[] = []
  const openOn = async (db: Db) => {
    const store = await openSqlEventStore(db, { batches })
    open.push({ store, db })
    return store
  }
  const closeAll = async () => {
    for (const { store, db } of open.splice(0).reverse()) {
      await store.close()
      await db.close()
    }
  }
  let store = await openOn(await database.connect())
  return {
    get store() {
      return store
    },
    keepsImportedPositions: true,
    openPeer: async () => openOn(await database.connect()),
    async openStallingPeer() {
      const stalling = withCommitStall(await database.connect())
      return { store: await openOn(stalling.db), stallNextCommit: stalling.stallNextCommit }
    },
    async restart() {
      await closeAll()
      store = await openOn(await database.connect())
    },
    async close() {
      await closeAll()
      await database.dispose()
    },
  }
}

for (const target of databaseTargets('event store contract')) {
  eventStoreContract(`sql event store on ${target.name}`, () => sqlEventStore(target), 'all-or-nothing')
  // The testing knob SINGLE_STREAM_APPENDS: the same store appending one stream per transaction, as
  // a KurrentDB older than 25.1 does.
  eventStoreContract(`sql event store on ${target.name}`, () => sqlEventStore(target, 'stream-by-stream'), 'stream-by-stream')

  describe(`sql event store on ${target.name}: imported positions`, () => {
    let sut: EventStoreUnderTest
    beforeAll(async () => {
      sut = await sqlEventStore(target)
    })
    afterAll(async () => {
      await sut?.close()
    })

    it('keeps them only above the head and growing, refusing the whole call otherwise', async () => {
      const at = (position: number, stream: string, revision = 0): RecordedEvent => ({
        id: crypto.randomUUID(),
        stream,
        revision,
        position,
        type: 'Imported',
        data: {},
        metadata: {},
        recordedAt: '2024-01-01T00:00:00.000Z',
      })
      await sut.store.importEvents([at(5, 'p-a'), at(9, 'p-b')])
      for (const refused of [[at(9, 'p-c')], [at(3, 'p-c')], [at(20, 'p-c'), at(15, 'p-d')]]) {
        await expect(sut.store.importEvents(refused)).rejects.toThrow(/is not above/)
      }
      expect((await sut.store.readAll(0)).map((e) => [e.stream, e.position])).toEqual([
        ['p-a', 5],
        ['p-b', 9],
      ])
      expect((await sut.store.append('p-a', [{ id: crypto.randomUUID(), type: 'Next', data: {} }], 0)).position).toBe(10)
    })
  })
}
