import { type Static, Type } from '@sinclair/typebox'
import { toIso } from '../../src/db/port.ts'
import { LISTING_RECORD, type ListingRow, type RecordColumn, type RecordEntry, recordProperties } from '../../src/domain/listings/fields.ts'
import { Country, Operation, PropertyType } from '../../src/domain/market/vocabulary.ts'

/** What GET /listings asks the inventory and what it answers: the verified broker inventory (active, verified, broker-sourced listings only). */

export const Sort = Type.Union([Type.Literal('newest'), Type.Literal('price_asc'), Type.Literal('price_desc')])
export const SORTS = Sort.anyOf.map((member) => member.const)
export const DEFAULT_LIMIT = 20
export const MAX_LIMIT = 200
export const MAX_OFFSET = 10_000

export const ListingSearch = Type.Object({
  country: Country,
  /** Zone number; filters by `Zona N`. */
  zone: Type.Union([Type.Integer(), Type.Null()]),
  operation: Type.Union([Operation, Type.Null()]),
  property_type: Type.Union([PropertyType, Type.Null()]),
  price_min: Type.Union([Type.Number(), Type.Null()]),
  price_max: Type.Union([Type.Number(), Type.Null()]),
  sort: Sort,
  limit: Type.Integer({ minimum: 1, maximum: MAX_LIMIT }),
  offset: Type.Integer({ minimum: 0, maximum: MAX_OFFSET }),
})
export type ListingSearch = Static<typeof ListingSearch>

/** A listing as /listings shows it: its fields and their order are declared in src/domain/listings/fields.ts (LISTING_RECORD). */
export const ListingRecord = Type.Object(recordProperties())
export type ListingRecord = Static<typeof ListingRecord>

export const ListingsResponse = Type.Object({
  ok: Type.Literal(true),
  count: Type.Integer(),
  total: Type.Integer(),
  limit: Type.Integer(),
  offset: Type.Integer(),
  next_offset: Type.Union([Type.Integer(), Type.Null()]),
  listings: Type.Array(ListingRecord),
})
export type ListingsResponse = Static<typeof ListingsResponse>

/** The columns a record is read from, each once, in the record's order. */
const RECORD_COLUMNS: RecordColumn[] = [
  ...new Map(Object.values(LISTING_RECORD as Record<string, RecordEntry>).flatMap((entry) => entry.columns.map((c) => [c.name, c] as const))).values(),
]
const selected = (c: RecordColumn, sql: string) => (sql === c.name ? c.name : `${sql} as ${c.name}`)

/**
 * The listings table as SQL over it names a search: the columns of a record (exact decimals as
 * text, read back by `recordRow`) and of each filter and order. For searches written in SQL (the
 * reference the in-memory inventory is checked against).
 */
export const LISTING_COLUMNS = {
  record: RECORD_COLUMNS.map((c) => selected(c, c.kind === 'decimal' ? `${c.sql}::text` : c.sql)).join(', '),
  /** The same columns with their SQL values (decimals as numbers), to compare two tables' records. */
  compared: RECORD_COLUMNS.map((c) => selected(c, c.sql)).join(', '),
  /** Active, verified and broker-sourced: what /listings may show. */
  isPublic: 'public',
  id: 'listing_id',
  country: 'country',
  zone: 'zone_no',
  operation: 'operation',
  propertyType: 'property_type',
  price: 'price_usd',
  listedAt: 'listed_at',
} as const

/** A row selected by LISTING_COLUMNS.record, its times as ISO strings and its decimals as numbers. */
export function recordRow(row: Record<string, unknown>): ListingRow {
  const decoded: ListingRow = {}
  for (const c of RECORD_COLUMNS) {
    const value = row[c.name]
    decoded[c.name] = value === null || value === undefined || c.kind === 'value' ? value : c.kind === 'time' ? toIso(value) : Number(value)
  }
  return decoded
}

/** The record's fields that depend on the row only (not on the time of the request), in order. */
const FROM_ROW = Object.entries(LISTING_RECORD as Record<string, RecordEntry>).filter(([, entry]) => !entry.perRequest)

/** The record of a row `recordRow` decoded, without what depends on the time of the request. */
export function recordOf(row: ListingRow): Record<string, unknown> {
  const record: Record<string, unknown> = {}
  for (const [name, entry] of FROM_ROW) record[name] = entry.from(row)
  return record
}
