import type { Row, Sql } from '../db/port.ts'
import { toNumber } from '../db/port.ts'
import { type AppendResult, type BatchGuarantee, categoryOf, checkBatch, checkExpected, IdempotencyConflict, type RecordedEvent, type StreamWrite } from './port.ts'
import { APPEND_LOCK, LOCK_APPENDS, NOTIFY_CHANNEL, type SqlLog, wakeReaders } from './sql-log.ts'
import { type ChainedRow, insertChained } from './sql-chain.ts'
import { headOn } from './sql-reads.ts'

/** The highest revision of each stream named in $1 (a JSON array), null for a stream that has none. */
const HEADS = `select s.name as stream_name, (select max(stream_revision) from mirador_events where stream_name = s.name) as revision
  from jsonb_array_elements_text($1::text::jsonb) as s(name)`
/** The events among the ids in $1 (a JSON array) that are recorded already. */
const SEEN = `select e.* from jsonb_array_elements_text($1::text::jsonb) as i(id)
  cross join lateral (select event_id, stream_name, stream_revision, global_position from mirador_events
    where event_id = i.id::uuid offset 0) as e`

type SeenRow = Row & { event_id: string; stream_name: string; stream_revision: unknown; global_position: unknown }

/** The last revision of each of `streams` that has any (read under the append lock, it cannot move). */
async function headsOf(tx: Sql, streams: readonly string[]): Promise<Map<string, number>> {
  const heads = await tx.query<{ stream_name: string; revision: unknown }>(HEADS, [JSON.stringify(streams)])
  return new Map(heads.filter((row) => row.revision !== null).map((row) => [row.stream_name, toNumber(row.revision)]))
}

/** Tells the subscriptions of this process and, through the database, of the others that `categories` were appended to. */
async function notify(tx: Sql, categories: readonly string[]): Promise<void> {
  await tx.query('select pg_notify($1, $2)', [NOTIFY_CHANNEL, categories.join(',')])
}

/**
 * What each write comes to, given the events of its ids recorded before (`recorded`, by write) and
 * the streams' last revisions: a duplicate's result, or the rows to insert for it (its position
 * known once they are). Throws IdempotencyConflict or WrongExpectedRevision for the first write at fault.
 */
function planAppends(writes: readonly StreamWrite[], recorded: readonly SeenRow[][], headOf: ReadonlyMap<string, number>) {
  const results: AppendResult[] = []
  const rows: ChainedRow[] = []
  writes.forEach(({ stream, events, expected }, w) => {
    const seen = recorded[w]!
    if (seen.length > 0) {
      if (seen.length !== events.length || seen.some((row) => row.stream_name !== stream)) throw new IdempotencyConflict(stream)
      results.push({
        revision: Math.max(...seen.map((r) => toNumber(r.stream_revision))),
        position: Math.max(...seen.map((r) => toNumber(r.global_position))),
        duplicate: true,
      })
      return
    }
    const current = headOf.get(stream) ?? null
    checkExpected(stream, expected, current)
    const first = current === null ? 0 : current + 1
    const category = categoryOf(stream)
    for (const [i, e] of events.entries()) {
      rows.push({ n: rows.length, event_id: e.id, stream_name: stream, stream_revision: first + i, category, event_type: e.type, data: e.data, metadata: e.metadata ?? {} })
    }
    // The position is known once inserted.
    results.push({ revision: first + events.length - 1, position: 0, duplicate: false })
  })
  return { results, rows }
}

/** Inserts `rows` in their order, chained; returns the position of each stream's last event. */
async function insertRows(tx: Sql, rows: readonly ChainedRow[]): Promise<Map<string, number>> {
  const inserted = await insertChained(tx, rows, false)
  const lastPosition = new Map<string, number>()
  for (const row of inserted) {
    lastPosition.set(row.stream_name, Math.max(lastPosition.get(row.stream_name) ?? 0, toNumber(row.global_position)))
  }
  return lastPosition
}

/** The writes in one transaction: all or nothing. */
export async function appendAtomically(log: SqlLog, writes: readonly StreamWrite[]): Promise<AppendResult[]> {
  if (writes.length === 0) return []
  // Checks that need no database, so that a malformed call touches nothing.
  checkBatch(writes)
  const writeOfId = new Map(writes.flatMap(({ events }, w) => events.map((event) => [event.id.toLowerCase(), w] as const)))
  /** The categories of the events this transaction appended (none when all were recorded before). */
  let appended: string[] = []
  const results = await log.db.transaction(async (tx): Promise<AppendResult[]> => {
    await tx.query(LOCK_APPENDS, [APPEND_LOCK])
    const seen = await tx.query<SeenRow>(SEEN, [JSON.stringify([...writeOfId.keys()])])
    const seenByWrite = writes.map((): SeenRow[] => [])
    for (const row of seen) seenByWrite[writeOfId.get(row.event_id.toLowerCase())!]!.push(row)
    const { results, rows } = planAppends(writes, seenByWrite, await headsOf(tx, writes.map((write) => write.stream)))
    if (rows.length === 0) return results
    const lastPosition = await insertRows(tx, rows)
    writes.forEach(({ stream }, w) => {
      if (!results[w]!.duplicate) results[w]!.position = lastPosition.get(stream)!
    })
    appended = [...new Set(writes.filter((_, w) => !results[w]!.duplicate).map((write) => categoryOf(write.stream)))]
    await notify(tx, appended)
    return results
  })
  if (appended.length > 0) wakeReaders(log.wakers, appended)
  return results
}

/** EventStore.importEvents: all or nothing, or each run of consecutive events of one stream in its own transaction. */
export async function importEvents(log: SqlLog, batches: BatchGuarantee, events: readonly RecordedEvent[]): Promise<void> {
  if (batches === 'all-or-nothing') return importAtomically(log, events)
  for (let start = 0; start < events.length; ) {
    let end = start + 1
    while (end < events.length && events[end]!.stream === events[start]!.stream) end += 1
    await importAtomically(log, events.slice(start, end))
    start = end
  }
}

async function importAtomically(log: SqlLog, events: readonly RecordedEvent[]): Promise<void> {
  if (events.length === 0) return
  await log.db.transaction(async (tx) => {
    await tx.query(LOCK_APPENDS, [APPEND_LOCK])
    let last = await headOn(tx)
    for (const event of events) {
      if (event.position <= last) throw new Error(`import: position ${event.position} is not above ${last}, the store's head or the previous event`)
      last = event.position
    }
    const seen = await tx.query<SeenRow>(SEEN, [JSON.stringify(events.map((e) => e.id))])
    if (seen.length > 0) throw new IdempotencyConflict(seen[0]!.stream_name)
    const headOf = await headsOf(tx, [...new Set(events.map((e) => e.stream))])
    for (const event of events) {
      const current = headOf.get(event.stream) ?? null
      checkExpected(event.stream, event.revision === 0 ? 'no_stream' : event.revision - 1, current)
      headOf.set(event.stream, event.revision)
    }
    await insertChained(
      tx,
      events.map((e, n) => ({
        n,
        global_position: e.position,
        event_id: e.id,
        stream_name: e.stream,
        stream_revision: e.revision,
        category: categoryOf(e.stream),
        event_type: e.type,
        data: e.data,
        metadata: e.metadata,
        recorded_at: e.recordedAt,
      })),
      true,
    )
    // Appends after the import continue above the imported positions.
    await tx.query(`select setval(pg_get_serial_sequence('mirador_events', 'global_position'), $1)`, [last])
    await notify(tx, [...new Set(events.map((e) => categoryOf(e.stream)))])
  })
  wakeReaders(log.wakers, [...new Set(events.map((e) => categoryOf(e.stream)))])
}
