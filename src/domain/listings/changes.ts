import { isPublic, LISTING_RECORD, type ListingRow, type RecordColumn, type RecordEntry } from './fields.ts'

/**
 * What an event did to the public inventory (the listings /listings may show: active, verified,
 * broker), decided from the listing's row before and after it: the one rule of the change feed
 * (GET /listings/changes, docs/api.md "Staying in sync"). Its SQL twin, for events applied by
 * statements, is projections/listings/change-rows.ts; the listings projection's batch-against-one-
 * by-one spec compares the rows both write.
 *
 * - `listed`: the listing entered the public inventory (ingested public, verified, relisted);
 * - `removed`: it left it (delisted: no other event makes a public listing stop being public);
 * - `price_changed`: public before and after, and its `price_usd` changed (other fields may too);
 * - `updated`: public before and after, and another field of its record changed.
 * An event that changes no field of a public record, or concerns a listing public neither before
 * nor after, is no change.
 */
export type ChangeKind = 'listed' | 'updated' | 'price_changed' | 'removed'
export const CHANGE_KINDS = ['listed', 'updated', 'price_changed', 'removed'] as const satisfies readonly ChangeKind[]

export type Change = { kind: ChangeKind; fields: readonly string[] }

/**
 * The fields a change names, with the columns each is read from: the record's fields stored in
 * columns of their own. Left out: `id` (never changes), what follows from another field
 * (`zone_slug` from `zone`, `price_per_m2_usd` from `price_usd` and `area_m2`) and what depends on
 * the time of the request (`days_on_market`).
 */
export const CHANGE_FIELDS: readonly { name: string; columns: readonly RecordColumn[] }[] = (() => {
  const seen = new Set<string>()
  return Object.entries(LISTING_RECORD as Record<string, RecordEntry>).flatMap(([name, entry]) => {
    const signature = entry.columns.map((c) => c.name).join(',')
    const own = !entry.perRequest && name !== 'id' && entry.columns.length > 0 && entry.columns.every((c) => c.sql === c.name)
    if (!own || seen.has(signature)) return []
    seen.add(signature)
    return [{ name, columns: entry.columns }]
  })
})()

/** One column's value in a row written from events (times as ISO text in any offset, decimals as text or numbers), comparable. */
function comparable(column: RecordColumn, value: unknown): unknown {
  if (value === null || value === undefined) return null
  if (column.kind === 'time') return Date.parse(String(value))
  if (column.kind === 'decimal') return Number(value)
  return value
}

const differs = (field: (typeof CHANGE_FIELDS)[number], before: ListingRow, after: ListingRow) =>
  field.columns.some((c) => comparable(c, before[c.name]) !== comparable(c, after[c.name]))

/** The change an event made, from the listing's row before it (null: the listing did not exist) and after it; null when none. */
export function changeOf(before: ListingRow | null, after: ListingRow): Change | null {
  const was = before !== null && isPublic(before)
  const is = isPublic(after)
  if (!was) return is ? { kind: 'listed', fields: [] } : null
  if (!is) return { kind: 'removed', fields: [] }
  const fields = CHANGE_FIELDS.filter((field) => differs(field, before, after)).map((field) => field.name)
  if (fields.length === 0) return null
  return { kind: fields.includes('price_usd') ? 'price_changed' : 'updated', fields }
}

/** Where a change happened, as a filter sees it: the listing's place after the event, and before it when the event moved it. */
export type ChangePlace = { country: string; zone_no: number; from_country: string | null; from_zone_no: number | null }
/** A country, and optionally one of its zones: what a reader of the feed follows. */
export type ChangeFilter = { country: string | null; zone: number | null }

const inside = (filter: ChangeFilter, country: string | null, zone: number | null) =>
  country !== null && (filter.country === null || filter.country === country) && (filter.zone === null || filter.zone === zone)

/**
 * A change as a reader following `filter` sees it: a move out of what it follows is a removal, a
 * move into it a listing; null when the change happened elsewhere.
 */
export function seenThrough(kind: ChangeKind, place: ChangePlace, filter: ChangeFilter): { kind: ChangeKind; moved: boolean } | null {
  const now = inside(filter, place.country, place.zone_no)
  const moved = place.from_country !== null
  const before = moved ? inside(filter, place.from_country, place.from_zone_no) : now
  if (now && before) return { kind, moved: false }
  if (now) return { kind: kind === 'removed' ? 'removed' : 'listed', moved: true }
  if (before) return { kind: 'removed', moved: true }
  return null
}
