import type { Db } from '../../src/db/port.ts'
import { toNumber } from '../../src/db/port.ts'
import type { ListingsTables } from './projection.ts'
import { LISTING_COLUMNS } from './search.ts'

/**
 * What the benchmarks and their checks measure of the listings tables (bench/): sizes, the public
 * listings serialised by PostgreSQL alone (the floor an export is compared with), and change rows
 * in a form two loads of the same market can be compared in. Here, so that SQL naming the read
 * model's tables stays in its folder.
 */

/** Listings in the tables `t` (0 when they do not exist yet). */
export async function listingCount(db: Db, t: ListingsTables): Promise<number> {
  const [exists] = await db.query<{ present: boolean }>('select to_regclass($1) is not null as present', [t.listings])
  if (!exists?.present) return 0
  const [row] = await db.query<{ n: unknown }>(`select count(*) as n from ${t.listings}`)
  return toNumber(row?.n ?? 0)
}

/** Disk taken by the listings and their history, with indexes, for people (`1234 MB`). */
export async function listingsSize(db: Db, t: ListingsTables): Promise<string> {
  const [row] = await db.query<{ size: string }>(
    'select pg_size_pretty(pg_total_relation_size($1::regclass) + pg_total_relation_size($2::regclass)) as size',
    [t.listings, t.history],
  )
  return row!.size
}

/** PostgreSQL alone: the bytes of every public listing's record as JSON lines, in id order, in one query. */
export async function publicRecordsJsonBytes(db: Db, t: ListingsTables): Promise<number> {
  const [row] = await db.query<{ bytes: unknown }>(
    `select sum(length(row_to_json(r)::text) + 1) as bytes from (select ${LISTING_COLUMNS.record} from ${t.listings} where public order by listing_id) r`,
  )
  return toNumber(row!.bytes)
}

/**
 * The rows of `table` in `schema` as two loads of one market compare them: as they are, except change
 * rows (`changesTable`), whose positions differ between loads: a change row is compared by its place
 * among its listing's changes instead (`columns`: the change row's columns).
 */
export function comparedRows(schema: string, table: string, changesTable: string, columns: readonly string[]): string {
  if (table !== changesTable) return `select * from ${schema}.${table}`
  const kept = columns.filter((name) => name !== 'position')
  return `select ${kept.join(', ')}, row_number() over (partition by listing_id order by position) as nth from ${schema}.${table}`
}
