import type { Db } from '../../src/db/port.ts'
import { toIso, toNumber } from '../../src/db/port.ts'
import type { ChangeFilter, ChangeKind, ChangePlace } from '../../src/domain/listings/changes.ts'
import type { ListingRow } from '../../src/domain/listings/fields.ts'
import { fail } from '../../src/shared/errors.ts'
import { checkpointOf, generationTables } from '../engine/generations.ts'
import { liveTables } from '../engine/live-tables.ts'
import { EXACT_PPM2, listingsProjection, type ListingsTables } from './projection.ts'
import { LISTING_COLUMNS, recordRow } from './search.ts'

/** The first version of the listings read model with the changes table. */
const SINCE = 5

/** A change as the table holds it: where it is in the log, what it was, where, and the listing's row after it. */
export type ChangeRow = {
  position: number
  kind: ChangeKind
  fields: string[]
  place: ChangePlace
  at: string
  oldPriceUsd: number | null
  /** The listing's record columns after the change (recordRow), for `recordOf`. */
  row: ListingRow
  status: string
}

/** The live generation that serves the feed, at its checkpoint: the feed is consistent up to `position`. */
export type FeedView = { tables: ListingsTables; position: number; generation: string }

const COLUMNS = `position, kind, fields, from_country, from_zone_no, old_price_usd::text as old_price_usd, observed_at, status, ${LISTING_COLUMNS.record}`
/**
 * The change rows `rows` selects, as records: the price per m² the listings table generates is
 * computed here, for the rows read only (writing it with every change cost a rebuild a third of its time).
 */
const recordsOf = (rows: string) => `select ${COLUMNS} from (select *, ${EXACT_PPM2} as ppm2_usd from (${rows}) as chosen) as read`

const changeRow = (r: Record<string, unknown>): ChangeRow => ({
  position: toNumber(r.position),
  kind: r.kind as ChangeKind,
  fields: r.fields === null ? [] : String(r.fields).split(','),
  place: {
    country: r.country as string,
    zone_no: r.zone_no as number,
    from_country: (r.from_country as string | null) ?? null,
    from_zone_no: (r.from_zone_no as number | null) ?? null,
  },
  at: toIso(r.observed_at),
  oldPriceUsd: r.old_price_usd === null ? null : Number(r.old_price_usd),
  row: recordRow(r),
  status: r.status as string,
})

/**
 * The change feed and the snapshot, read from the live generation's changes table (change-rows.ts):
 * rows are written once, at their position, and never change, so any position at or below the
 * generation's checkpoint reads the same rows in every process, after every restart and rebuild.
 */
export class ChangeFeed {
  constructor(private readonly db: Db) {}

  /** The live generation and its checkpoint; a 503 while the live generation predates the feed. */
  async view(): Promise<FeedView> {
    const live = await liveTables(this.db).of(listingsProjection)
    if (live.version < SINCE) {
      throw fail.serviceUnavailable(`the change feed needs listings v${SINCE}, being built (${live.id} is live)`, 30)
    }
    return { tables: generationTables(listingsProjection, live), position: await checkpointOf(this.db, listingsProjection.name, live), generation: live.id }
  }

  /**
   * Up to `limit` changes with `after` < position ≤ `view.position`, in log order, that `filter`
   * sees: a change in it, or a move out of it (a change at another place whose `from_` is in it).
   */
  async page(view: FeedView, after: number, limit: number, filter: ChangeFilter): Promise<ChangeRow[]> {
    const t = view.tables.changes
    const range = 'position > $1 and position <= $2'
    if (filter.country === null) {
      const rows = await this.db.query(`${recordsOf(`select * from ${t} where ${range} order by position limit $3`)} order by position`, [
        after,
        view.position,
        limit,
      ])
      return rows.map(changeRow)
    }
    const here = filter.zone === null ? 'country = $4' : 'country = $4 and zone_no = $5'
    const from = filter.zone === null ? 'from_country = $4' : 'from_country = $4 and from_zone_no = $5'
    const params = [after, view.position, limit, filter.country, ...(filter.zone === null ? [] : [filter.zone])]
    const rows = await this.db.query(
      `${recordsOf(`select * from (
         (select * from ${t} where ${range} and ${here} order by position limit $3)
         union all
         (select * from ${t} where ${range} and ${from} and not (${here}) order by position limit $3)
       ) both_sides order by position limit $3`)} order by position`,
      params,
    )
    return rows.map(changeRow)
  }

  /**
   * The public listings as of `view.position`, `first` then `chunk` at a time in id order: each listing's latest
   * change at or before it, unless that was a removal. Each chunk is its own short query (no
   * transaction held while a client reads), and the rows it reads never change. Which change is
   * each listing's latest is decided from the `_latest` index alone (change-rows.ts: an index-only
   * scan, from v6), and only the rows chosen are then read from the table, by position.
   */
  async *snapshot(view: FeedView, filter: ChangeFilter, chunk: number, first = chunk): AsyncGenerator<ChangeRow[]> {
    const place = filter.country === null ? '' : filter.zone === null ? 'and country = $4' : 'and country = $4 and zone_no = $5'
    const params = filter.country === null ? [] : filter.zone === null ? [filter.country] : [filter.country, filter.zone]
    for (let [afterId, size] = ['', first]; ; size = chunk) {
      // The live generation's tables now (a promotion meanwhile holds the same rows up to the position).
      const { tables } = await this.view()
      const rows = await this.db.query(
        `${recordsOf(`select c.* from (
           select position from (
             select distinct on (listing_id) listing_id, position, kind, country, zone_no from ${tables.changes}
              where listing_id > $1 and position <= $2 order by listing_id, position desc
           ) latest where kind <> 'removed' ${place} order by listing_id limit $3
         ) chosen join ${tables.changes} c using (position)`)} order by listing_id`,
        [afterId, view.position, size, ...params],
      )
      if (rows.length > 0) yield rows.map(changeRow)
      if (rows.length < size) return
      afterId = rows.at(-1)!.listing_id as string
    }
  }
}
