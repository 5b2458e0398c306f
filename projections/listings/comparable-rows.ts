import type { ListingsTables } from './projection.ts'
import type { Row, Sql } from '../../src/db/port.ts'
import { toNumber } from '../../src/db/port.ts'
import type { ComparableListing } from '../../src/domain/market/comparable.ts'

/**
 * The listings an estimate compares (src/domain/market/estimate.ts), selected from a generation of
 * the listings read model by SQL: what the inventory in memory hands the API
 * (inventory-index.ts `comparables`), for `audit answer` and the tests. Selects rows only.
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
      where public and country = $1 and zone_no = $2 and operation = $3 and property_type = $4 order by listing_id`,
    [country, zoneNo, operation, propertyType],
  )
  return rows.map(comparableOf)
}
