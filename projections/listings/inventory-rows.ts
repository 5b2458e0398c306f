import { type Row, toNumber } from '../../src/db/port.ts'
import { LISTING_RECORD, type RecordEntry } from '../../src/domain/listings/fields.ts'
import type { ListingKey } from './inventory-index.ts'
import { LISTING_COLUMNS, type ListingRecord, recordOf, recordRow } from './search.ts'

/** How the inventory's rows are read and decoded (inventory.ts): a group row per place and kind, a key row, a record row. */

/** A listing's record without what depends on the request time; `used` orders evictions. */
export type CachedListing = Omit<ListingRecord, 'days_on_market'> & { listedMs: number; used: number }

/** A row of LISTING_COLUMNS.record. */
export type RecordRow = Row & { listing_id: string }
export type KeyRow = Row & {
  listing_id: string
  country: string
  zone_no: number
  operation: string
  property_type: string
  listed_us: unknown
  cents: unknown
  area_m2: unknown
  bedrooms: unknown
  bathrooms: unknown
}

export const RECORD_COLUMNS = LISTING_COLUMNS.record
/** listed_at to the microsecond (timestamptz precision, exact below 2^53) and the price in whole cents. */
export const LISTED_US = '(extract(epoch from listed_at) * 1000000)::int8'
export const CENTS = '(price_usd * 100)::int8'

/** Per listing in a group row, after its id: listed_us, cents, area, bedrooms, bathrooms (doubles as their shortest text: exact). */
export const GROUP_FIELDS = `${LISTED_US} || ',' || ${CENTS} || ',' || area_m2 || ',' || bedrooms || ',' || bathrooms`
const FIELD_COUNT = 6

/**
 * A whole generation arrives as one row per country, zone, operation and property type, its
 * listings as `id,listed_us,cents,area,bedrooms,bathrooms,…`: far fewer rows to decode than one per listing, and less
 * memory while loading.
 */
export type GroupRow = Row & { country: string; zone_no: number; operation: string; property_type: string; listings: string }

export function* keysOfGroups(groups: readonly GroupRow[]): Generator<ListingKey> {
  for (const group of groups) {
    const fields = group.listings.split(',')
    for (let i = 0; i + FIELD_COUNT - 1 < fields.length; i += FIELD_COUNT) {
      yield {
        id: fields[i]!,
        country: group.country,
        zone: group.zone_no,
        operation: group.operation,
        propertyType: group.property_type,
        listedMicros: Number(fields[i + 1]),
        priceCents: Number(fields[i + 2]),
        areaM2: Number(fields[i + 3]),
        bedrooms: Number(fields[i + 4]),
        bathrooms: Number(fields[i + 5]),
      }
    }
  }
}

export const keyOf = (row: KeyRow): ListingKey => ({
  id: row.listing_id,
  country: row.country,
  zone: row.zone_no,
  operation: row.operation,
  propertyType: row.property_type,
  listedMicros: toNumber(row.listed_us),
  priceCents: toNumber(row.cents),
  areaM2: toNumber(row.area_m2),
  bedrooms: toNumber(row.bedrooms),
  bathrooms: toNumber(row.bathrooms),
})

/**
 * One copy of each value the record fields marked `repeated` take (vocabulary words, zone names,
 * brokers): every row read brings its own copy, and at 50,000 cached records (and more waiting for
 * their query under a miss-heavy load) six strings and an object per record add up. A broker is
 * one object per id and name (a few per market).
 */
const REPEATED = Object.entries(LISTING_RECORD as Record<string, RecordEntry>).flatMap(([name, entry]) => (entry.repeated ? [name] : []))
const KEPT = new Map<string, unknown>()
function kept(value: unknown): unknown {
  const key = typeof value === 'string' ? value : JSON.stringify(value)
  const copy = KEPT.get(key)
  if (copy !== undefined) return copy
  KEPT.set(key, value)
  return value
}

export const cachedOf = (row: RecordRow): CachedListing => {
  const record = recordOf(recordRow(row))
  for (const name of REPEATED) record[name] = kept(record[name])
  return { ...(record as Omit<ListingRecord, 'days_on_market'>), listedMs: Date.parse(record.listed_at as string), used: 0 }
}
