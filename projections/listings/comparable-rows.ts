import type { ListingsTables } from './projection.ts'
import type { Row, Sql } from '../../src/db/port.ts'
import { toNumber } from '../../src/db/port.ts'
import type { ComparableListing } from '../../src/domain/market/comparable.ts'

/**
 * The listings an estimate compares (src/domain/market/estimate.ts), selected from a generation of
 * the listings read model by SQL: now, what the inventory in memory hands the API
 * (inventory-index.ts `candidates`), for `audit answer` and the tests; as of an instant, from the
 * history (before it is loaded in memory, and for `audit answer`). Selects rows only.
 */

type ComparableRow = Row & { listing_id: string; area_m2: unknown; bedrooms: unknown; bathrooms: unknown; cents: unknown }

const comparableOf = (row: ComparableRow): ComparableListing => ({
  id: row.listing_id,
  areaM2: toNumber(row.area_m2),
  bedrooms: toNumber(row.bedrooms),
  bathrooms: toNumber(row.bathrooms),
  cents: toNumber(row.cents),
})

/** The public listings (active, verified, broker) of one country, zone, operation and property type now, by id. */
export async function publicComparables(sql: Sql, t: ListingsTables, country: string, zoneNo: number, operation: string, propertyType: string): Promise<ComparableListing[]> {
  const rows = await sql.query<ComparableRow>(
    `select listing_id, area_m2, bedrooms, bathrooms, (price_usd * 100)::int8 as cents from ${t.listings}
      where public and country = $1 and zone_no = $2 and operation = $3 and property_type = $4 order by listing_id collate "C"`,
    [country, zoneNo, operation, propertyType],
  )
  return rows.map(comparableOf)
}

/**
 * The listings public at the instant `at` of `country`'s zone `zoneNo`, of `operation` and
 * `propertyType` (the history intervals open then, public from `at` or before), in listing id order
 * (byte order, as IdTable compares), with their figures then: what HistoryIndex.comparablesAt
 * answers from memory.
 */
export async function comparablesAt(sql: Sql, t: ListingsTables, country: string, zoneNo: number, operation: string, propertyType: string, at: Date): Promise<ComparableListing[]> {
  const rows = await sql.query<ComparableRow>(
    `select listing_id, area_m2, bedrooms, bathrooms, (price_usd * 100)::int8 as cents from ${t.history}
      where country = $1 and zone_no = $2 and operation = $3 and property_type = $4
        and valid_from <= $5::timestamptz and (valid_to is null or valid_to > $5::timestamptz) and public_from <= $5::timestamptz
      order by listing_id collate "C"`,
    [country, zoneNo, operation, propertyType, at.toISOString()],
  )
  return rows.map(comparableOf)
}
