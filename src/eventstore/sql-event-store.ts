import type { Db } from '../db/port.ts'
import { appendStreamByStream, type BatchGuarantee, type EventStore } from './port.ts'
import { appendAtomically, importEvents } from './sql-appends.ts'
import { APPEND_LOCK, LOCK_APPENDS, NOTIFY_CHANNEL, pollInterval, type SqlLog, wakeReaders } from './sql-log.ts'
import { CHAIN_SCHEMA, readChain, startChain, vouchChain } from './sql-chain.ts'
import { headOn, readAll, readStreams } from './sql-reads.ts'
import { subscribe } from './sql-subscribe.ts'

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

export type SqlEventStoreOptions = {
  /**
   * `stream-by-stream` makes `appendMany` and `importEvents` write one stream per transaction, as a
   * KurrentDB older than 25.1 does: a testing knob (SINGLE_STREAM_APPENDS), so that everything a
   * user does is proven on such a store without one. Default `all-or-nothing`.
   */
  batches?: BatchGuarantee
}

/**
 * The event store over the SQL port: the same statements serve PGlite and PostgreSQL. Reading
 * (sql-reads.ts), appending and importing (sql-appends.ts) and subscribing (sql-subscribe.ts) share
 * the database and the wake-ups of the live subscriptions (sql-log.ts).
 *
 * Appends are serialised by one transaction-scoped advisory lock, taken before positions are
 * drawn. Positions therefore become visible in commit order, so `readAll` can never skip an
 * event that a slower concurrent transaction commits later, and each event's chain link
 * (sql-chain.ts) can be computed from the last one at insert time.
 */
export async function openSqlEventStore(db: Db, options: SqlEventStoreOptions = {}): Promise<EventStore> {
  const batches = options.batches ?? 'all-or-nothing'
  await db.transaction(async (tx) => {
    await tx.query(LOCK_APPENDS, [APPEND_LOCK])
    for (const statement of [...SCHEMA.split(';').map((s) => s.trim()).filter(Boolean), ...CHAIN_SCHEMA]) await tx.query(statement)
    // Under the lock: of several processes opening a store recorded without the chain, one starts it.
    await startChain(tx)
  })
  const log: SqlLog = { db, wakers: new Set(), subscriptions: new Set(), pollMs: pollInterval(db) }
  const unlisten = await db.listen(NOTIFY_CHANNEL, (payload) => wakeReaders(log.wakers, payload ? payload.split(',') : []))
  return {
    batches,
    append: async (stream, events, expected) => (await appendAtomically(log, [{ stream, events, expected }]))[0]!,
    appendMany: (writes) =>
      batches === 'all-or-nothing'
        ? appendAtomically(log, writes)
        : // One at a time: the append lock serialises them anyway, and the log keeps the writes' order.
          appendStreamByStream(writes, async (write) => (await appendAtomically(log, [write]))[0]!, 1),
    readStream: async (stream) => (await readStreams(db, [stream])).get(stream)!,
    readStreams: (streams) => readStreams(db, streams),
    readAll: (after, options) => readAll(db, after, options),
    subscribe: (after, handler, options) => subscribe(log, after, handler, options),
    headPosition: () => headOn(db),
    importEvents: (events) => importEvents(log, batches, events),
    chain: 'global',
    readChain: (after, limit) => readChain(db, after, limit),
    vouchChain: (after, through) => vouchChain(db, after, through),
    async close() {
      await Promise.all([...log.subscriptions].map((s) => s.stop()))
      await unlisten()
    },
  }
}
