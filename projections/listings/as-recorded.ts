import type { Db } from '../../src/db/port.ts'
import type { EventStore, RecordedEvent } from '../../src/eventstore/port.ts'
import { type ListingsTables, listingsProjection } from './projection.ts'

/**
 * Which events an audit's read model is built from: those recorded by `until` (late feed lines
 * recorded after it left out), or those up to the log position `through` (what an answer's
 * `Mirador-Position` names), whatever their recording time.
 */
export type RecordedCut = { until: Date } | { through: number }

/** How far a build has come: the log position it has read through, of the last one it reads. */
export type BuildProgress = { through: number; last: number }

/** Events read from the log at a time: the build holds two such pages at most, whatever the log's size. */
const PAGE = 5000
/** Events applied in one statement list (one transaction). */
const BATCH = 2000

/**
 * Tables of this build alone, in the current schema, dropped at its end: plain tables, since a
 * session's temporary tables are not seen by the pool's other connections, and the build commits
 * page by page (see `withListingsAsRecorded`). A process killed mid-build leaves them behind, named
 * `audit_<id>_*`, holding nothing but a copy of the read model.
 */
function scratchTables(id: string): ListingsTables {
  const prefix = `audit_${id}`
  return {
    listings: `${prefix}_listings`,
    history: `${prefix}_history`,
    zones: `${prefix}_zones`,
    touches: `${prefix}_touches`,
    changes: `${prefix}_changes`,
  }
}

/**
 * The projection's `create table` as `create unlogged table`: a copy dropped at the end needs no
 * write-ahead log (writing it made the build 2.4 times slower than with temporary tables, which skip it too).
 */
const unlogged = (ddl: string) => ddl.replace(/^\s*create table/i, 'create unlogged table')

const kept = (cut: RecordedCut) =>
  'until' in cut ? (event: RecordedEvent) => Date.parse(event.recordedAt) <= cut.until.getTime() : (event: RecordedEvent) => event.position <= cut.through

/**
 * The listings read model as the events of `cut` made it, built by the projection itself into
 * scratch tables, which `use` reads (told the position they were built through); for `audit answer` (src/audit/answer.ts). The log is read a page
 * at a time, the next page while one is applied (in transactions of its own), so memory holds two
 * pages whatever the log's size; reading outside the transactions also lets the embedded store, whose
 * event store and read model share one connection, serve both.
 */
export async function withListingsAsRecorded<T>(
  db: Db,
  store: EventStore,
  cut: RecordedCut,
  use: (t: ListingsTables, through: number) => Promise<T>,
  progress: (done: BuildProgress) => void = () => {},
): Promise<T> {
  const t = scratchTables(crypto.randomUUID().replaceAll('-', '').slice(0, 12))
  const keep = kept(cut)
  const head = await store.headPosition()
  const last = 'through' in cut ? Math.min(cut.through, head) : head
  try {
    await db.transaction(async (tx) => {
      for (const ddl of listingsProjection.schema(t)) await tx.query(unlogged(ddl))
    })
    const read = async (after: number) => (after < last ? store.readAll(after, { limit: PAGE, categories: listingsProjection.categories }) : [])
    for (let next = read(0); ; ) {
      const page = await next
      if (page.length === 0) break
      const after = page.at(-1)!.position
      // The next page is read while this one is applied (on PostgreSQL, on another connection).
      next = read(after)
      next.catch(() => {})
      const applied = page.filter(keep)
      for (let i = 0; i < applied.length; i += BATCH) {
        const changes = listingsProjection.applyBatch!(applied.slice(i, i + BATCH), t)
        await db.transaction(async (tx) => {
          for (const change of changes) await tx.query(change.text, change.params)
        })
      }
      progress({ through: Math.min(after, last), last })
    }
    return await use(t, last)
  } finally {
    await db.query(`drop table if exists ${Object.values(t).join(', ')}`)
  }
}
