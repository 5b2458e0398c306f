import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { type Verification, verifyLog as verifyWhole } from '../../src/audit/verify.ts'
import type { Db } from '../../src/db/port.ts'
import type { EventStore, NewEvent } from '../../src/eventstore/port.ts'
import { contentDigest } from '../../src/eventstore/sql-chain.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { BATCH_GUARANTEES, databaseTargets } from '../support/databases.ts'

/**
 * `audit verify` on the SQL stores: someone with write access to the events table changes one byte
 * of an event, deletes one, inserts one or swaps two, straight in SQL; the verification names the
 * first position at fault and its stream. An untouched log verifies; its head digest, recorded, is
 * checked later.
 */

const event = (n: number, extra: Record<string, unknown> = {}): NewEvent => ({
  id: crypto.randomUUID(),
  type: 'NoteTaken',
  data: { n, note: `note ${n}`, ...extra },
  metadata: { actor: 'test' },
})

/** Positions 1…8 over three streams, by single appends and by a batch (as the system writes). */
async function recordEight(store: EventStore): Promise<void> {
  await store.append('notes-a', [event(1), event(2)], 'no_stream')
  await store.append('notes-b', [event(3)], 'no_stream')
  await store.appendMany([
    { stream: 'notes-a', events: [event(4)], expected: 1 },
    { stream: 'notes-c', events: [event(5), event(6)], expected: 'no_stream' },
  ])
  await store.append('notes-b', [event(7, { nested: { deep: [1, 2.5, 'x'] } }), event(8)], 0)
}

const COLUMNS = 'global_position, event_id, stream_name, stream_revision, category, event_type, data, metadata, recorded_at, chain'

/** Gives the rows `where` selects the position `to` (an expression of the old one), as an editor of the table would: out and back in. */
async function moveRows(db: Db, where: string, to: string): Promise<void> {
  await db.exec(`
    create temp table moved as select ${COLUMNS} from mirador_events where ${where};
    delete from mirador_events where ${where};
    insert into mirador_events (${COLUMNS}) overriding system value select ${to}, ${COLUMNS.replace('global_position, ', '')} from moved;
    drop table moved;`)
}

/** The fault `verifyLog` reports, as a user reads it: position, stream, kind, message. */
const faultOf = (v: Verification) => v.fault && { position: v.fault.position, stream: v.fault.stream, kind: v.fault.kind }

/**
 * The SQL stores vouch for the chain range by range on their side (one row back per range), and an
 * unvouched range is read event by event: with ranges of 3 positions, every fault below lies past
 * ranges vouched for, or in a range read after one.
 */
const RANGES = [{ name: 'one range', range: undefined }, { name: 'ranges of 3 positions', range: 3 }]

for (const target of databaseTargets('audit verify')) {
  for (const [batches, { name, range }] of BATCH_GUARANTEES.flatMap((b) => RANGES.map((r) => [b, r] as const))) {
    const verifyLog = (store: EventStore, options: { expect?: string } = {}) => verifyWhole(store, { ...options, range })
    describe(`audit verify on ${target.name} (${batches}, ${name})`, () => {
      let db: Db
      let store: EventStore
      beforeEach(async () => {
        db = await target.open()
        store = await openSqlEventStore(db, { batches })
        await recordEight(store)
      })
      afterEach(async () => {
        await store.close()
        await db.close()
      })

      test('an untouched log is whole: every event verified, and a head digest POSITION:HEX16', async () => {
        const verified = await verifyLog(store)
        expect(verified).toMatchObject({ chain: 'global', events: 8, fault: null })
        expect(verified.head).toMatch(/^8:[0-9a-f]{16}$/)
      })

      test('one byte of one event\'s data changed: that position and its stream are named', async () => {
        await db.query(`update mirador_events set data = replace(data::text, 'note 5', 'note 6')::jsonb where global_position = 5`)
        const verified = await verifyLog(store)
        expect(faultOf(verified)).toEqual({ position: 5, stream: 'notes-c', kind: 'altered' })
        expect(verified.fault!.message).toBe('position 5 (NoteTaken in stream notes-c at revision 0) does not chain on position 4: it was altered, inserted or moved')
        expect(verified.events).toBe(5)
      })

      test('a change to the metadata, the type or the recording time is caught as well', async () => {
        await db.query(`update mirador_events set metadata = '{"actor":"tset"}' where global_position = 2`)
        expect(faultOf(await verifyLog(store))).toEqual({ position: 2, stream: 'notes-a', kind: 'altered' })
        await db.query(`update mirador_events set metadata = '{"actor":"test"}' where global_position = 2`)
        expect((await verifyLog(store)).fault).toBeNull()
        await db.query(`update mirador_events set recorded_at = recorded_at + interval '1 microsecond' where global_position = 7`)
        expect(faultOf(await verifyLog(store))).toEqual({ position: 7, stream: 'notes-b', kind: 'altered' })
      })

      test('an event deleted: its position is named as missing', async () => {
        await db.query('delete from mirador_events where global_position = 4')
        const verified = await verifyLog(store)
        expect(faultOf(verified)).toEqual({ position: 4, stream: 'notes-c', kind: 'missing' })
        expect(verified.fault!.message).toMatch(/^position 4: missing — the log skips from position 3 to position 5 \(NoteTaken in stream notes-c/)
      })

      test('the last event deleted: the log verifies, and only the head digest recorded before tells', async () => {
        const recorded = (await verifyLog(store)).head!
        await db.query('delete from mirador_events where global_position = 8')
        const verified = await verifyLog(store, { expect: recorded })
        expect(verified.fault).toBeNull()
        expect(verified.expected).toEqual({
          digest: recorded,
          matches: false,
          message: 'the log no longer reaches position 8 (its last event is at 7): events were deleted since that digest was recorded',
        })
      })

      test('an event inserted between two (the later ones moved up a position): the inserted position is named', async () => {
        await moveRows(db, 'global_position > 3', 'global_position + 1')
        await db.query(
          `insert into mirador_events (${COLUMNS}) overriding system value
           select 4, gen_random_uuid(), 'notes-z', 0, 'notes', event_type, data, metadata, recorded_at, chain from mirador_events where global_position = 3`,
        )
        expect(faultOf(await verifyLog(store))).toEqual({ position: 4, stream: 'notes-z', kind: 'altered' })
      })

      test('an event inserted after the last, without a link: named as written around Mirador', async () => {
        await db.query(
          `insert into mirador_events (event_id, stream_name, stream_revision, category, event_type, data)
           values (gen_random_uuid(), 'notes-z', 0, 'notes', 'NoteTaken', '{"n":9}')`,
        )
        const verified = await verifyLog(store)
        expect(faultOf(verified)).toEqual({ position: 9, stream: 'notes-z', kind: 'unchained' })
        expect(verified.fault!.message).toContain('carries no chain link')
      })

      test('two events swapped: the first of the two positions is named', async () => {
        await moveRows(db, 'global_position in (3, 6)', '9 - global_position')
        expect(faultOf(await verifyLog(store))).toEqual({ position: 3, stream: 'notes-c', kind: 'altered' })
      })

      test('a head digest recorded earlier still checks after later appends; a forged history that re-links every event does not', async () => {
        const recorded = (await verifyLog(store)).head!
        await store.append('notes-d', [event(9)], 'no_stream')
        expect((await verifyLog(store, { expect: recorded })).expected).toMatchObject({ matches: true })
        // Rewritten with its links recomputed, the log is whole again; only the digest kept elsewhere tells.
        await db.query(`update mirador_events set data = '{"n": 2, "note": "forged"}' where global_position = 2`)
        await db.query(`update mirador_events set chain = null`)
        const rows = await db.query<{ global_position: unknown }>('select global_position from mirador_events order by global_position')
        for (const row of rows) {
          await db.query(
            `update mirador_events e set chain = mirador_chain_step(null, coalesce((select chain from mirador_events p where p.global_position = e.global_position - 1), decode(repeat('00', 32), 'hex')),
               ${contentDigest('')}) where global_position = $1`,
            [row.global_position],
          )
        }
        const forged = await verifyLog(store, { expect: recorded })
        expect(forged.fault).toBeNull()
        expect(forged.expected!.matches).toBe(false)
        expect(forged.expected!.message).toMatch(/^the log gives 8:[0-9a-f]{16} at position 8, not 8:[0-9a-f]{16}: the events up to it were altered/)
      })

      test('positions that skip because the store drew them so (a sequence restarted further on) are no fault', async () => {
        await db.query('alter table mirador_events alter column global_position restart with 50000')
        await store.append('notes-e', [event(9), event(10)], 'no_stream')
        const verified = await verifyLog(store)
        expect(verified).toMatchObject({ events: 10, fault: null })
        expect(verified.head).toMatch(/^50001:/)
      })

      test('an --expect that is not a head digest is refused as bad input', async () => {
        await expect(verifyLog(store, { expect: 'yesterday' })).rejects.toMatchObject({ code: 'invalid_request' })
      })
    })
  }
}
