import type { Db, Row, Sql } from '../db/port.ts'
import { toIso, toNumber } from '../db/port.ts'
import {
  type AppendResult,
  appendStreamByStream,
  type BatchGuarantee,
  categoryOf,
  checkExpected,
  type EventStore,
  type ExpectedRevision,
  IdempotencyConflict,
  type NewEvent,
  type ReadAllOptions,
  type RecordedEvent,
  type StreamWrite,
  type SubscribeOptions,
  type Subscription,
} from './port.ts'

const NOTIFY_CHANNEL = 'mirador_events'
/** Arbitrary constant naming the advisory lock that serialises appends (see docs/decisions.md, Event store). */
const APPEND_LOCK = 727_001
/**
 * Takes the append lock of the events table in use: advisory locks are the database's, so keyed by
 * the schema too, or every stack sharing the database (one per schema) would wait for the others' appends.
 */
const LOCK_APPENDS = 'select pg_advisory_xact_lock($1, hashtext(current_schema()))'
const DEFAULT_BATCH = 1000
/** Live subscriptions poll at this interval even without a notification (belt and braces). */
const POLL_MS = 250

const SCHEMA = `
create table if not exists mirador_events (
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
create index if not exists mirador_events_by_category on mirador_events (category, global_position);
`

/*
 * Reads by stream or event id are written as one index lookup per name (a lateral subquery kept
 * apart by `offset 0`, or a scalar subquery), never as `in (select …)`: without statistics on
 * mirador_events (PGlite never gathers any; autovacuum comes late on a busy PostgreSQL) the planner
 * turned that into a hash join over a scan of the whole log, once per batch of an ingest, so the
 * cost of a line grew with the store (bench/results.md, "Ingestion and demo seeding").
 */
/** The highest revision of each stream named in $1 (a JSON array), null for a stream that has none. */
const HEADS = `select s.name as stream_name, (select max(stream_revision) from mirador_events where stream_name = s.name) as revision
  from jsonb_array_elements_text($1::text::jsonb) as s(name)`
/** The events among the ids in $1 (a JSON array) that are recorded already. */
const SEEN = `select e.* from jsonb_array_elements_text($1::text::jsonb) as i(id)
  cross join lateral (select event_id, stream_name, stream_revision, global_position from mirador_events
    where event_id = i.id::uuid offset 0) as e`

type EventRow = Row & {
  global_position: unknown
  event_id: string
  stream_name: string
  stream_revision: unknown
  event_type: string
  data: Record<string, unknown>
  metadata: Record<string, unknown>
  recorded_at: unknown
}

type SeenRow = Row & { event_id: string; stream_name: string; stream_revision: unknown; global_position: unknown }

const COLUMNS = 'global_position, event_id, stream_name, stream_revision, event_type, data, metadata, recorded_at'

const toRecorded = (row: EventRow): RecordedEvent => ({
  id: row.event_id,
  stream: row.stream_name,
  revision: toNumber(row.stream_revision),
  position: toNumber(row.global_position),
  type: row.event_type,
  data: row.data,
  metadata: row.metadata,
  recordedAt: toIso(row.recorded_at),
})

export type SqlEventStoreOptions = {
  /**
   * `stream-by-stream` makes `appendMany` and `importEvents` write one stream per transaction, as a
   * KurrentDB older than 25.1 does: a testing knob (SINGLE_STREAM_APPENDS), so that everything a
   * user does is proven on such a store without one. Default `all-or-nothing`.
   */
  batches?: BatchGuarantee
}

/**
 * The event store over the SQL port: the same statements serve PGlite and PostgreSQL.
 *
 * Appends are serialised by one transaction-scoped advisory lock, taken before positions are
 * drawn. Positions therefore become visible in commit order, so `readAll` can never skip an
 * event that a slower concurrent transaction commits later.
 */
export async function openSqlEventStore(db: Db, options: SqlEventStoreOptions = {}): Promise<EventStore> {
  const batches = options.batches ?? 'all-or-nothing'
  await db.transaction(async (tx) => {
    await tx.query(LOCK_APPENDS, [APPEND_LOCK])
    for (const statement of SCHEMA.split(';').map((s) => s.trim()).filter(Boolean)) await tx.query(statement)
  })

  /** Each live subscription's wake-up, with the categories it reads (none: all). */
  const wakers = new Set<{ categories: readonly string[] | undefined; wake(): void }>()
  /**
   * Wakes the subscriptions that read one of `categories` (the payload of a notification: those of
   * the events appended); the others would only read nothing. An empty list wakes them all.
   */
  const wakeReaders = (categories: readonly string[]) => {
    for (const waker of wakers) {
      if (categories.length === 0 || !waker.categories || waker.categories.some((c) => categories.includes(c))) waker.wake()
    }
  }
  const unlisten = await db.listen(NOTIFY_CHANNEL, (payload) => wakeReaders(payload ? payload.split(',') : []))
  const subscriptions = new Set<Subscription>()

  /** The writes in one transaction: all or nothing. */
  async function appendAtomically(writes: readonly StreamWrite[]): Promise<AppendResult[]> {
    if (writes.length === 0) return []
    // Checks that need no database, so that a malformed call touches nothing.
    const writeOfId = new Map<string, number>()
    const streams = new Set<string>()
    writes.forEach(({ stream, events }, w) => {
      if (events.length === 0) throw new Error(`append to ${stream} needs at least one event`)
      if (streams.has(stream)) throw new Error(`appendMany: stream ${stream} is written more than once`)
      streams.add(stream)
      for (const event of events) {
        const id = event.id.toLowerCase()
        if (writeOfId.has(id)) throw new IdempotencyConflict(stream)
        writeOfId.set(id, w)
      }
    })
    /** The categories of the events this transaction appended (none when all were recorded before). */
    let appended: string[] = []
    const results = await db.transaction(async (tx): Promise<AppendResult[]> => {
      await tx.query(LOCK_APPENDS, [APPEND_LOCK])
      const seen = await tx.query<SeenRow>(SEEN, [JSON.stringify([...writeOfId.keys()])])
      const seenByWrite = writes.map((): SeenRow[] => [])
      for (const row of seen) seenByWrite[writeOfId.get(row.event_id.toLowerCase())!]!.push(row)
      const heads = await tx.query<{ stream_name: string; revision: unknown }>(HEADS, [JSON.stringify([...streams])])
      const headOf = new Map(heads.filter((row) => row.revision !== null).map((row) => [row.stream_name, toNumber(row.revision)]))

      const results: AppendResult[] = []
      const rows: object[] = []
      writes.forEach(({ stream, events, expected }, w) => {
        const recorded = seenByWrite[w]!
        if (recorded.length > 0) {
          if (recorded.length !== events.length || recorded.some((row) => row.stream_name !== stream)) {
            throw new IdempotencyConflict(stream)
          }
          results.push({
            revision: Math.max(...recorded.map((r) => toNumber(r.stream_revision))),
            position: Math.max(...recorded.map((r) => toNumber(r.global_position))),
            duplicate: true,
          })
          return
        }
        const current = headOf.get(stream) ?? null
        checkExpected(stream, expected, current)
        const first = current === null ? 0 : current + 1
        const category = categoryOf(stream)
        for (const [i, e] of events.entries()) {
          rows.push({
            n: rows.length,
            event_id: e.id,
            stream_name: stream,
            stream_revision: first + i,
            category,
            event_type: e.type,
            data: e.data,
            metadata: e.metadata ?? {},
          })
        }
        // The position is known once inserted.
        results.push({ revision: first + events.length - 1, position: 0, duplicate: false })
      })
      if (rows.length === 0) return results

      const inserted = await tx.query<{ stream_name: string; global_position: unknown }>(
        `insert into mirador_events (event_id, stream_name, stream_revision, category, event_type, data, metadata)
         select x.event_id, x.stream_name, x.stream_revision, x.category, x.event_type, x.data, x.metadata
           from json_to_recordset($1::text::json) as x(n integer, event_id uuid, stream_name text,
             stream_revision bigint, category text, event_type text, data jsonb, metadata jsonb)
          order by x.n
         returning stream_name, global_position`,
        [JSON.stringify(rows)],
      )
      const lastPosition = new Map<string, number>()
      for (const row of inserted) {
        lastPosition.set(row.stream_name, Math.max(lastPosition.get(row.stream_name) ?? 0, toNumber(row.global_position)))
      }
      writes.forEach(({ stream }, w) => {
        if (!results[w]!.duplicate) results[w]!.position = lastPosition.get(stream)!
      })
      appended = [...new Set(writes.filter((_, w) => !results[w]!.duplicate).map((write) => categoryOf(write.stream)))]
      await tx.query('select pg_notify($1, $2)', [NOTIFY_CHANNEL, appended.join(',')])
      return results
    })
    if (appended.length > 0) wakeReaders(appended)
    return results
  }

  const appendMany = (writes: readonly StreamWrite[]): Promise<AppendResult[]> =>
    batches === 'all-or-nothing'
      ? appendAtomically(writes)
      : // One at a time: the append lock serialises them anyway, and the log keeps the writes' order.
        appendStreamByStream(writes, async (write) => (await appendAtomically([write]))[0]!, 1)

  async function append(stream: string, events: readonly NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    const [result] = await appendAtomically([{ stream, events, expected }])
    return result!
  }

  async function readStreams(streams: readonly string[]): Promise<Map<string, RecordedEvent[]>> {
    const byStream = new Map(streams.map((stream) => [stream, [] as RecordedEvent[]]))
    if (byStream.size === 0) return byStream
    const rows = await db.query<EventRow>(
      `select e.* from jsonb_array_elements_text($1::text::jsonb) as s(name)
         cross join lateral (select ${COLUMNS} from mirador_events where stream_name = s.name offset 0) as e
        order by e.global_position`,
      [JSON.stringify([...byStream.keys()])],
    )
    for (const row of rows) byStream.get(row.stream_name)!.push(toRecorded(row))
    return byStream
  }

  async function readStream(stream: string): Promise<RecordedEvent[]> {
    return (await readStreams([stream])).get(stream)!
  }

  async function readAll(after: number, options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const limit = options.limit ?? DEFAULT_BATCH
    // Per category, one range of the (category, position) index, then merged. Filtering the
    // position index instead reads every event of other categories after `after`: the whole log,
    // for a subscription to a category that is rarely written. The range is written as two row
    // comparisons, which only that index can serve, so the plan does not depend on statistics
    // (PGlite never analyzes) and the scan starts at `after`, not at the category's first event.
    // The categories are a VALUES list, not a JSON array, so that the planner knows how many there
    // are: it guessed 100, costed the merge above PostgreSQL's jit_above_cost and compiled each read
    // (~60 ms a page when following or rebuilding).
    const categories = options.categories
    if (categories?.length === 0) return []
    const rows = categories
      ? await db.query<EventRow>(
          `select e.* from (values ${categories.map((_, i) => `($${i + 3}::text)`).join(', ')}) as c(category)
             cross join lateral (
               select ${COLUMNS} from mirador_events
                where (category, global_position) > (c.category, $1::bigint)
                  and (category, global_position) <= (c.category, ${Number.MAX_SAFE_INTEGER})
                order by category, global_position limit $2
             ) as e
            order by e.global_position limit $2`,
          [after, limit, ...categories],
        )
      : await db.query<EventRow>(
          `select ${COLUMNS} from mirador_events where global_position > $1 order by global_position limit $2`,
          [after, limit],
        )
    return rows.map(toRecorded)
  }

  function subscribe(
    after: number,
    handler: (events: RecordedEvent[]) => Promise<void>,
    options: SubscribeOptions = {},
  ): Subscription {
    let position = after
    let stopped = false
    let wake: () => void = () => {}
    const waker = { categories: options.categories, wake: () => wake() }
    wakers.add(waker)
    const pause = (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms)
        wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })

    const loop = (async () => {
      while (!stopped) {
        try {
          const events = await readAll(position, options)
          if (stopped) break
          if (events.length === 0) {
            await pause(POLL_MS)
            continue
          }
          await handler(events)
          position = events[events.length - 1]!.position
        } catch (error) {
          if (stopped) break
          options.onError?.(error)
          await pause(1000)
        }
      }
    })()

    const subscription: Subscription = {
      get position() {
        return position
      },
      async stop() {
        stopped = true
        wakers.delete(waker)
        wake()
        await loop
        subscriptions.delete(subscription)
      },
    }
    subscriptions.add(subscription)
    return subscription
  }

  async function headOn(sql: Sql): Promise<number> {
    const [row] = await sql.query<{ head: unknown }>('select coalesce(max(global_position), 0) as head from mirador_events')
    return toNumber(row?.head ?? 0)
  }

  const headPosition = () => headOn(db)

  async function importEvents(events: readonly RecordedEvent[]): Promise<void> {
    if (batches === 'all-or-nothing') return importAtomically(events)
    // Stream by stream: each run of consecutive events of one stream in its own transaction.
    for (let start = 0; start < events.length; ) {
      let end = start + 1
      while (end < events.length && events[end]!.stream === events[start]!.stream) end += 1
      await importAtomically(events.slice(start, end))
      start = end
    }
  }

  async function importAtomically(events: readonly RecordedEvent[]): Promise<void> {
    if (events.length === 0) return
    await db.transaction(async (tx) => {
      await tx.query(LOCK_APPENDS, [APPEND_LOCK])
      let last = await headOn(tx)
      for (const event of events) {
        if (event.position <= last) throw new Error(`import: position ${event.position} is not above ${last}, the store's head or the previous event`)
        last = event.position
      }
      const seen = await tx.query<SeenRow>(SEEN, [JSON.stringify(events.map((e) => e.id))])
      if (seen.length > 0) throw new IdempotencyConflict(seen[0]!.stream_name)
      const heads = await tx.query<{ stream_name: string; revision: unknown }>(HEADS, [JSON.stringify([...new Set(events.map((e) => e.stream))])])
      const headOf = new Map(heads.filter((row) => row.revision !== null).map((row) => [row.stream_name, toNumber(row.revision)]))
      for (const event of events) {
        const current = headOf.get(event.stream) ?? null
        checkExpected(event.stream, event.revision === 0 ? 'no_stream' : event.revision - 1, current)
        headOf.set(event.stream, event.revision)
      }
      await tx.query(
        `insert into mirador_events (global_position, event_id, stream_name, stream_revision, category, event_type, data, metadata, recorded_at)
         overriding system value
         select x.global_position, x.event_id, x.stream_name, x.stream_revision, x.category, x.event_type, x.data, x.metadata, x.recorded_at
           from json_to_recordset($1::text::json) as x(global_position bigint, event_id uuid, stream_name text,
             stream_revision bigint, category text, event_type text, data jsonb, metadata jsonb, recorded_at timestamptz)
          order by x.global_position`,
        [
          JSON.stringify(
            events.map((e) => ({
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
          ),
        ],
      )
      // Appends after the import continue above the imported positions.
      await tx.query(`select setval(pg_get_serial_sequence('mirador_events', 'global_position'), $1)`, [last])
      const categories = [...new Set(events.map((e) => categoryOf(e.stream)))]
      await tx.query('select pg_notify($1, $2)', [NOTIFY_CHANNEL, categories.join(',')])
    })
    wakeReaders([...new Set(events.map((e) => categoryOf(e.stream)))])
  }

  async function close() {
    await Promise.all([...subscriptions].map((s) => s.stop()))
    await unlisten()
  }

  return { batches, append, appendMany, readStream, readStreams, readAll, subscribe, headPosition, importEvents, close }
}
