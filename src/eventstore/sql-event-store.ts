import type { Db, Row } from '../db/port.ts'
import { toIso, toNumber } from '../db/port.ts'
import {
  type AppendResult,
  categoryOf,
  type EventStore,
  type ExpectedRevision,
  IdempotencyConflict,
  type NewEvent,
  type ReadAllOptions,
  type RecordedEvent,
  type SubscribeOptions,
  type Subscription,
  WrongExpectedRevision,
} from './port.ts'

const NOTIFY_CHANNEL = 'mirador_events'
/** Arbitrary constant naming the advisory lock that serialises appends (see docs/architecture.md). */
const APPEND_LOCK = 727_001
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

function checkExpected(stream: string, expected: ExpectedRevision, current: number | null) {
  const ok =
    expected === 'any' ||
    (expected === 'no_stream' && current === null) ||
    (expected === 'stream_exists' && current !== null) ||
    expected === current
  if (!ok) throw new WrongExpectedRevision(stream, expected, current ?? 'no_stream')
}

/**
 * The event store over the SQL port: the same statements serve PGlite and PostgreSQL.
 *
 * Appends are serialised by one transaction-scoped advisory lock, taken before positions are
 * drawn. Positions therefore become visible in commit order, so `readAll` can never skip an
 * event that a slower concurrent transaction commits later.
 */
export async function openSqlEventStore(db: Db): Promise<EventStore> {
  await db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1)', [APPEND_LOCK])
    for (const statement of SCHEMA.split(';').map((s) => s.trim()).filter(Boolean)) await tx.query(statement)
  })

  const wakers = new Set<() => void>()
  const wakeAll = () => {
    for (const wake of wakers) wake()
  }
  const unlisten = await db.listen(NOTIFY_CHANNEL, wakeAll)
  const subscriptions = new Set<Subscription>()

  async function append(stream: string, events: readonly NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (events.length === 0) throw new Error('append needs at least one event')
    if (new Set(events.map((e) => e.id)).size !== events.length) throw new IdempotencyConflict(stream)
    const category = categoryOf(stream)
    const result = await db.transaction(async (tx): Promise<AppendResult> => {
      await tx.query('select pg_advisory_xact_lock($1)', [APPEND_LOCK])
      const ids = JSON.stringify(events.map((e) => e.id))
      const seen = await tx.query<{ stream_name: string; stream_revision: unknown; global_position: unknown }>(
        `select stream_name, stream_revision, global_position from mirador_events
          where event_id in (select jsonb_array_elements_text($1::text::jsonb)::uuid)`,
        [ids],
      )
      if (seen.length > 0) {
        if (seen.length !== events.length || seen.some((row) => row.stream_name !== stream)) {
          throw new IdempotencyConflict(stream)
        }
        return {
          revision: Math.max(...seen.map((r) => toNumber(r.stream_revision))),
          position: Math.max(...seen.map((r) => toNumber(r.global_position))),
          duplicate: true,
        }
      }
      const [head] = await tx.query<{ revision: unknown }>(
        'select max(stream_revision) as revision from mirador_events where stream_name = $1',
        [stream],
      )
      const current = head?.revision == null ? null : toNumber(head.revision)
      checkExpected(stream, expected, current)
      const first = current === null ? 0 : current + 1
      const rows = JSON.stringify(
        events.map((e, i) => ({
          event_id: e.id,
          stream_revision: first + i,
          event_type: e.type,
          data: e.data,
          metadata: e.metadata ?? {},
        })),
      )
      const inserted = await tx.query<{ global_position: unknown }>(
        `insert into mirador_events (event_id, stream_name, stream_revision, category, event_type, data, metadata)
         select x.event_id, $2, x.stream_revision, $3, x.event_type, x.data, x.metadata
           from jsonb_to_recordset($1::text::jsonb)
             as x(event_id uuid, stream_revision bigint, event_type text, data jsonb, metadata jsonb)
          order by x.stream_revision
         returning global_position`,
        [rows, stream, category],
      )
      await tx.query('select pg_notify($1, $2)', [NOTIFY_CHANNEL, stream])
      return {
        revision: first + events.length - 1,
        position: Math.max(...inserted.map((r) => toNumber(r.global_position))),
        duplicate: false,
      }
    })
    wakeAll()
    return result
  }

  async function readStream(stream: string): Promise<RecordedEvent[]> {
    const rows = await db.query<EventRow>(
      `select ${COLUMNS} from mirador_events where stream_name = $1 order by stream_revision`,
      [stream],
    )
    return rows.map(toRecorded)
  }

  async function readAll(after: number, options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const limit = options.limit ?? DEFAULT_BATCH
    const rows = options.categories
      ? await db.query<EventRow>(
          `select ${COLUMNS} from mirador_events
            where global_position > $1 and category in (select jsonb_array_elements_text($3::text::jsonb))
            order by global_position limit $2`,
          [after, limit, JSON.stringify(options.categories)],
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
    const waker = () => wake()
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

  async function headPosition(): Promise<number> {
    const [row] = await db.query<{ head: unknown }>('select coalesce(max(global_position), 0) as head from mirador_events')
    return toNumber(row?.head ?? 0)
  }

  async function close() {
    await Promise.all([...subscriptions].map((s) => s.stop()))
    await unlisten()
  }

  return { append, readStream, readAll, subscribe, headPosition, close }
}
