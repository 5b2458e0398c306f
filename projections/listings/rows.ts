import type { ListingDetails, ListingPrice } from '../../src/domain/listings/listing.ts'
import { toIso } from '../../src/db/port.ts'
import { type Column, columnsWriter, fieldsOf, LISTING_FIELDS, readColumns, STATISTICAL_FIELDS } from '../../src/domain/listings/fields.ts'
import type { Tables } from '../engine/projection.ts'

/**
 * The rows the listings read model's statements read: each statement takes one parameter, a JSON
 * array of rows, shaped here for both ways of writing (statement rounds in projection.ts, the fold
 * of fold.ts), so that both write the same values.
 */
export type ListingsTables = Tables<'listings' | 'history' | 'zones' | 'touches' | 'changes'>

export { EXACT_PPM2 } from '../../src/domain/listings/fields.ts'

/**
 * The active listings as the zone statistics read them now (zone-rows.ts, `activeListings`): grouped
 * by `group`, each listing's `figures`. The listings table's index `_active_figures` (projection.ts)
 * holds exactly these, so that reading is an index-only scan in group order (decision 0127).
 */
export const ACTIVE_FIGURES = { group: 'country, zone_no, operation, source, property_type, bedrooms', figures: 'listed_at, price_usd, ppm2_usd' } as const

/** Fields of a listing the history carries (zone statistics, comparables): changing one closes its history interval. */
export const STATISTICAL: readonly (keyof ListingDetails)[] = STATISTICAL_FIELDS as (keyof ListingDetails)[]

/**
 * Row changes are multi-row statements: each takes one parameter, a JSON array with one object per
 * event, read as the relation `x` with the columns below (`at` is the event's observed_at, `revision`
 * its stream revision). Every event of one statement belongs to a different listing.
 */
// `json`, not `jsonb`: the text is read once, where jsonb first builds a binary copy (about three times the work for a batch).
export const input = (columns: string) => `x as (select * from json_to_recordset($1::text::json) as x(${columns}))`
const DETAILS = fieldsOf('details')
const PRICE = fieldsOf('price')
const columnsOf = (fields: typeof DETAILS): Column[] => fields.flatMap(([, field]) => field.columns.filter((c) => !c.generated))

/** A column as `x` reads it from JSON: its type without precision (a numeric(16, 2) arrives as any numeric). */
const typed = (columns: readonly Column[]) => columns.map((c) => `${c.name} ${c.type.replace(/\(.*\)/, '')}`).join(', ')
/** The columns of the details and of the price as `input` reads them, and their names as statements list them. */
export const DETAIL_COLUMNS = typed(columnsOf(DETAILS))
export const PRICE_COLUMNS = typed(columnsOf(PRICE))
const DETAIL_LIST = columnsOf(DETAILS).map((c) => c.name)
export const DETAIL_NAMES = DETAIL_LIST.join(', ')
/** `column = x.column` for every details column: an update to the details of `x`. */
export const DETAIL_UPDATE = DETAIL_LIST.map((name) => `${name} = x.${name}`).join(', ')
const PRICE_LIST = columnsOf(PRICE).map((c) => c.name)
export const PRICE_NAMES = PRICE_LIST.join(', ')
export const PRICE_UPDATE = PRICE_LIST.map((name) => `${name} = x.${name}`).join(', ')

const LISTING_COLUMN_LIST = Object.values(LISTING_FIELDS).flatMap((field) => field.columns as readonly Column[])
/** The listings table's columns defined as in it, one a line: with its primary key, or only those written (no key, nothing generated). */
export const listingColumnDefinitions = (kind: 'table' | 'written') => {
  const definition = (c: Column) =>
    `${c.name} ${c.type}${c.primary && kind === 'table' ? ' primary key' : c.generated ? ` generated always as (${c.generated}) stored` : c.nullable ? '' : ' not null'}`
  return LISTING_COLUMN_LIST.filter((c) => kind === 'table' || !c.generated)
    .map(definition)
    .join(',\n    ')
}
/** The columns of the listings table a statement writes (the others it generates), in table order. */
export const WRITTEN_COLUMNS: readonly string[] = LISTING_COLUMN_LIST.filter((c) => !c.generated).map((c) => c.name)

/** The listings table, column for column from the fields' declaration (one column a line: the read-model-tables test reads it so). */
export const listingsTable = (name: string) => `create table if not exists ${name} (\n    ${listingColumnDefinitions('table')}\n  )`

/** The details columns of an event's details (a field the event lacks takes its `absent`). */
export const detailsRow: (d: ListingDetails) => Record<string, unknown> = columnsWriter(DETAILS)

/** The details a row of the listings table holds (the way back from detailsRow), its times as ISO strings. */
export function detailsOfRow(row: Record<string, unknown>): Required<ListingDetails> {
  const decoded = { ...row }
  for (const c of columnsOf(DETAILS)) if (c.type === 'timestamptz' && decoded[c.name] != null) decoded[c.name] = toIso(decoded[c.name])
  return readColumns(DETAILS, decoded) as Required<ListingDetails>
}

/** A price as recorded, and in USD recomputed exactly from it (the event's own `price_usd` is not read). */
export const priceRow: (p: ListingPrice) => Record<string, unknown> = columnsWriter(PRICE)

