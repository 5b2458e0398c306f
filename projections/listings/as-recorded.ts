import type { Db, Sql } from '../../src/db/port.ts'
import type { EventStore, RecordedEvent } from '../../src/eventstore/port.ts'
import { type ListingsTables, listingsProjection } from './projection.ts'

/** Temporary tables of the session (dropped with it, or at the end of `withListingsAsRecorded`). */
const SCRATCH: ListingsTables = {
  listings: 'pg_temp.audit_listings',
  history: 'pg_temp.audit_listing_history',
  zones: 'pg_temp.audit_listing_zones',
  touches: 'pg_temp.audit_listing_zone_touches',
  changes: 'pg_temp.audit_listing_changes',
}

/**
 * The listings read model as the events recorded until `until` made it (events recorded later, such
 * as late-arriving feed lines, left out), built by the projection itself into temporary tables of
 * one transaction, which `use` reads: for `audit answer` (src/audit/answer.ts).
 */
export async function withListingsAsRecorded<T>(db: Db, store: EventStore, until: Date, use: (sql: Sql, t: ListingsTables) => Promise<T>): Promise<T> {
  // Read before the transaction: on the embedded store the event store and the read model share one connection.
  const recorded: RecordedEvent[] = []
  for (let after = 0; ; ) {
    const page = await store.readAll(after, { limit: 5000, categories: listingsProjection.categories })
    if (page.length === 0) break
    after = page.at(-1)!.position
    recorded.push(...page.filter((event) => Date.parse(event.recordedAt) <= until.getTime()))
  }
  return db.transaction(async (tx) => {
    for (const ddl of listingsProjection.schema(SCRATCH)) await tx.query(ddl)
    try {
      for (let i = 0; i < recorded.length; i += 2000) {
        for (const change of listingsProjection.applyBatch!(recorded.slice(i, i + 2000), SCRATCH)) await tx.query(change.text, change.params)
      }
      return await use(tx, SCRATCH)
    } finally {
      await tx.query(`drop table if exists ${Object.values(SCRATCH).join(', ')}`)
    }
  })
}
