import { CHANGE_FIELDS, type ChangeKind, changeOf } from '../../src/domain/listings/changes.ts'
import type { ListingRow } from '../../src/domain/listings/fields.ts'
import { listingColumnDefinitions, type ListingsTables, WRITTEN_COLUMNS } from './rows.ts'

/**
 * The change feed's table: one row per event that changed the public inventory, at the event's log
 * position, decided by src/domain/listings/changes.ts (`changeOf`) and holding the listing's row
 * after the event (every column of the listings table a statement writes, `observed_at` being the
 * change's time; the generated ones are computed when a change is read, for the rows read only). The
 * statements of projection.ts decide it in SQL (`recordChange`, the twin of `changeOf`), the fold of
 * fold.ts in TypeScript (`changeRow`); the batch-against-one-by-one spec compares the rows both write.
 * `from_country`/`from_zone_no`: where the listing was before, when the event moved it;
 * `old_price_usd`: its price before a `price_changed`.
 */
export const changesTable = (name: string) => `create table if not exists ${name} (
    position bigint primary key,
    kind text not null,
    fields text,
    from_country text,
    from_zone_no integer,
    old_price_usd numeric(16, 2),
    ${listingColumnDefinitions('written')}
  )`

export const changesIndexes = (t: ListingsTables) => [
  // The export: each listing's latest change at or before a position, and whether it is public and where, from the
  // index alone (an index-only scan): the table's rows are wide (the whole listing), and reading one for every change
  // of every listing, to keep one per listing, was most of an export's time (v5: 144 s of queries for 697,000 listings of 1M).
  `create index if not exists ${t.changes}_latest on ${t.changes} (listing_id, position desc) include (kind, country, zone_no)`,
  // A country's changes in log order, and the rare moves out of a country or zone.
  `create index if not exists ${t.changes}_country on ${t.changes} (country, position)`,
  `create index if not exists ${t.changes}_from on ${t.changes} (from_country, from_zone_no, position) where from_country is not null`,
]

/** The columns a change row is written with: the change's own, then the listing's row (observed_at as `at`, as statements name it). */
const CHANGE_COLUMNS = ['position', 'kind', 'fields', 'from_country', 'from_zone_no', 'old_price_usd'] as const
export const CHANGE_ROW_NAMES = [...CHANGE_COLUMNS, ...WRITTEN_COLUMNS].join(', ')

const PRICE_FIELD = 'price_usd'
const fieldChanged = (field: (typeof CHANGE_FIELDS)[number]) =>
  `case when ${field.columns.map((c) => `b.${c.name} is distinct from l.${c.name}`).join(' or ')} then '${field.name}' end`
const KIND = `case when not coalesce(b.public, false) then case when l.public then 'listed' end
    when not l.public then 'removed'
    when d.fields is null then null
    when d.repriced then 'price_changed' else 'updated' end`

/**
 * The change an event recorded by a statement made, `changeOf` in SQL: the CTE `changed` inserts it
 * from `before` (b: the listing's row before the statement, absent for a new listing) and `listing`
 * (l: the row the statement returns), for the events of `x` (with their `position`).
 */
export const recordChange = (t: ListingsTables) => `changed as (
    insert into ${t.changes} (${CHANGE_ROW_NAMES})
    select x.position, c.kind, case when c.shown then d.fields end, case when c.shown and d.moved then b.country end,
      case when c.shown and d.moved then b.zone_no end, case when c.kind = 'price_changed' then b.price_usd end,
      ${WRITTEN_COLUMNS.map((name) => `l.${name}`).join(', ')}
      from listing l join x using (listing_id) left join before b using (listing_id)
      cross join lateral (select nullif(concat_ws(',', ${CHANGE_FIELDS.map(fieldChanged).join(', ')}), '') as fields,
        b.${PRICE_FIELD} is distinct from l.${PRICE_FIELD} as repriced,
        b.country is distinct from l.country or b.zone_no is distinct from l.zone_no as moved) d
      cross join lateral (select k.kind, k.kind in ('updated', 'price_changed') as shown from (select ${KIND} as kind) k) c
     where c.kind is not null)`

/** The listing's row before a statement changes it: what `recordChange` compares with. */
export const rowBefore = (t: ListingsTables) => `before as (select l.* from ${t.listings} l join x using (listing_id))`

/** A change row as the fold writes it (`at` is the listing's observed_at), or null when the event changed nothing public. */
export function changeRow(position: number, before: ListingRow | null, after: ListingRow): ListingRow | null {
  const change = changeOf(before, after)
  if (!change) return null
  const shown = change.kind === 'updated' || change.kind === 'price_changed'
  const moved = shown && (before!.country !== after.country || before!.zone_no !== after.zone_no)
  const kind: ChangeKind = change.kind
  return {
    position,
    kind,
    fields: shown ? change.fields.join(',') : null,
    from_country: moved ? before!.country : null,
    from_zone_no: moved ? before!.zone_no : null,
    old_price_usd: kind === 'price_changed' ? before![PRICE_FIELD] : null,
    ...after,
  }
}
