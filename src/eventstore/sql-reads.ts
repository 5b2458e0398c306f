import type { Row, Sql } from '../db/port.ts'
import { toIso, toNumber } from '../db/port.ts'
import type { ReadAllOptions, RecordedEvent } from './port.ts'

const DEFAULT_BATCH = 1000

/** A row of mirador_events as the driver hands it over: positions, revisions and times in its own types. */
type EventRow = Row &
  Record<'global_position' | 'stream_revision' | 'recorded_at', unknown> &
  Record<'event_id' | 'stream_name' | 'event_type', string> &
  Record<'data' | 'metadata', Record<string, unknown>>

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

/*
 * Reads by stream or event id are written as one index lookup per name (a lateral subquery kept
 * apart by `offset 0`, or a scalar subquery), never as `in (select …)`: without statistics on
 * mirador_events (PGlite never gathers any; autovacuum comes late on a busy PostgreSQL) the planner
 * turned that into a hash join over a scan of the whole log, once per batch of an ingest, so the
 * cost of a line grew with the store (bench/results.md, "Ingestion and demo seeding").
 */

/** EventStore.readStreams on the SQL port. */
export async function readStreams(db: Sql, streams: readonly string[]): Promise<Map<string, RecordedEvent[]>> {
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

/** EventStore.readAll on the SQL port. */
export async function readAll(db: Sql, after: number, options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
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

/** The position of the newest event (0 when none), as `sql` (the store, or a transaction) sees it. */
export async function headOn(sql: Sql): Promise<number> {
  const [row] = await sql.query<{ head: unknown }>('select coalesce(max(global_position), 0) as head from mirador_events')
  return toNumber(row?.head ?? 0)
}
