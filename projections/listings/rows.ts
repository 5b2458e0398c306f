import type { ListingDetails, ListingPrice } from '../../src/domain/listings/listing.ts'
import { usdText } from '../../src/domain/market/fx.ts'
import { zoneNumberOfName } from '../../src/domain/market/zone-name.ts'
import type { Tables } from '../engine/projection.ts'

/**
 * The rows the listings read model's statements read: each statement takes one parameter, a JSON
 * array of rows, shaped here for both ways of writing (statement rounds in projection.ts, the fold
 * of fold.ts), so that both write the same values.
 */
export type ListingsTables = Tables<'listings' | 'history' | 'zones' | 'touches'>

/**
 * Exact price per m² of a listing: the USD price (whole cents) over the area, in decimal with 30
 * places (correctly rounded there), far below any cent a median could be published with.
 */
export const EXACT_PPM2 = 'price_usd::numeric(46, 30) / area_m2::numeric'

/** Fields of a listing that zone statistics depend on: changing one closes its history interval. */
export const STATISTICAL: readonly (keyof ListingDetails)[] = ['country', 'zone', 'operation', 'property_type', 'bedrooms', 'area_m2', 'listed_at']

const zoneNo = (zone: string): number => {
  const n = zoneNumberOfName(zone)
  if (n === null) throw new Error(`listing event with malformed zone ${JSON.stringify(zone)}`)
  return n
}

/**
 * Row changes are multi-row statements: each takes one parameter, a JSON array with one object per
 * event, read as the relation `x` with the columns below (`at` is the event's observed_at, `revision`
 * its stream revision). Every event of one statement belongs to a different listing.
 */
// `json`, not `jsonb`: the text is read once, where jsonb first builds a binary copy (about three times the work for a batch).
export const input = (columns: string) => `x as (select * from json_to_recordset($1::text::json) as x(${columns}))`
export const DETAIL_COLUMNS = `country text, zone_no integer, operation text, property_type text, title text, area_m2 double precision,
  bedrooms integer, bathrooms double precision, broker_id text, broker_name text, url text, listed_at timestamptz`
export const PRICE_COLUMNS = 'price_local double precision, currency text, fx_rate double precision, price_usd numeric'
export const detailsRow = (d: ListingDetails) => ({
  country: d.country,
  zone_no: zoneNo(d.zone),
  operation: d.operation,
  property_type: d.property_type,
  title: d.title,
  area_m2: d.area_m2,
  bedrooms: d.bedrooms,
  bathrooms: d.bathrooms,
  broker_id: d.broker?.id ?? null,
  broker_name: d.broker?.name ?? null,
  url: d.url,
  listed_at: d.listed_at,
})

/** A price as recorded, and in USD recomputed exactly from it (the event's own `price_usd` is not read). */
export const priceRow = (p: ListingPrice) => ({
  price_local: p.price_local,
  currency: p.currency,
  fx_rate: p.fx_rate,
  price_usd: usdText(p.price_local, p.fx_rate),
})
