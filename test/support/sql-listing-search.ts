import { listingsProjection } from '../../projections/listings/projection.ts'
import { liveTables } from '../../projections/engine/live-tables.ts'
import { type Db, type Row, toIso, toNumber } from '../../src/db/port.ts'
import { LISTING_COLUMNS as c, type ListingRecord, type ListingSearch, type ListingsResponse, MAX_OFFSET } from '../../projections/listings/search.ts'
import type { Country, Currency, Operation, PropertyType } from '../../src/domain/market/vocabulary.ts'
import { isKnowableZoneNumber, zoneName, zoneSlug } from '../../src/domain/market/zone-name.ts'
import { daysOnMarket } from '../../src/domain/market/statistics.ts'

/**
 * GET /listings as SQL answers it from the live generation of the listings read model: the search
 * the API ran per request before it served from memory (projections/listings/inventory.ts), kept as
 * the oracle that the in-memory inventory must equal byte for byte at the same checkpoint. Columns
 * come from the read model's own list (LISTING_COLUMNS): only its folder spells them.
 */

/**
 * Each order ends with the unique id, so that pages neither overlap nor skip. Columns are qualified:
 * the select list has text aliases of the same names, which must not be what is sorted.
 */
const ORDER: Record<ListingSearch['sort'], string> = {
  newest: `l.${c.listedAt} desc, l.${c.id} desc`,
  price_asc: `l.${c.price} asc, l.${c.id} asc`,
  price_desc: `l.${c.price} desc, l.${c.id} desc`,
}

type ListingRow = Row & {
  listing_id: string
  country: Country
  zone_no: number
  operation: Operation
  property_type: PropertyType
  title: string
  price_usd: string
  price_local: number
  currency: Currency
  area_m2: number
  price_per_m2_usd: string
  bedrooms: number
  bathrooms: number
  broker_id: string
  broker_name: string
  verified_at: unknown
  listed_at: unknown
  url: string | null
}

/** A page of the inventory and the number of all matches. `now` gives days on market. */
export async function sqlListingSearch(db: Db, search: ListingSearch, now: Date): Promise<ListingsResponse> {
  if (search.zone !== null && !isKnowableZoneNumber(search.zone)) {
    return { ok: true, count: 0, total: 0, limit: search.limit, offset: search.offset, next_offset: null, listings: [] }
  }
  const params: unknown[] = [search.country]
  const where = [c.isPublic, `${c.country} = $1`]
  const filter = (condition: (placeholder: string) => string, value: unknown) => {
    params.push(value)
    where.push(condition(`$${params.length}`))
  }
  if (search.zone !== null) filter((p) => `${c.zone} = ${p}`, search.zone)
  if (search.operation !== null) filter((p) => `${c.operation} = ${p}`, search.operation)
  if (search.property_type !== null) filter((p) => `${c.propertyType} = ${p}`, search.property_type)
  if (search.price_min !== null) filter((p) => `${c.price} >= ${p}::numeric`, String(search.price_min))
  if (search.price_max !== null) filter((p) => `${c.price} <= ${p}::numeric`, String(search.price_max))
  const condition = where.join(' and ')
  const n = params.length
  const table = (await liveTables(db).of(listingsProjection)).tables.listings
  const [rows, [counted]] = await Promise.all([
    db.query<ListingRow>(
      `select ${c.record} from ${table} l where ${condition} order by ${ORDER[search.sort]} limit $${n + 1} offset $${n + 2}`,
      [...params, search.limit, search.offset],
    ),
    db.query<{ total: unknown }>(`select count(*) as total from ${table} where ${condition}`, params),
  ])
  const total = toNumber(counted?.total ?? 0)
  const nowMs = now.getTime()
  const listings = rows.map((r): ListingRecord => {
    const listedAt = toIso(r.listed_at)
    return {
      id: r.listing_id,
      country: r.country,
      zone: zoneName(r.zone_no),
      zone_slug: zoneSlug(r.zone_no),
      operation: r.operation,
      property_type: r.property_type,
      title: r.title,
      price_usd: Number(r.price_usd),
      price_local: r.price_local,
      currency: r.currency,
      area_m2: r.area_m2,
      price_per_m2_usd: Number(r.price_per_m2_usd),
      bedrooms: r.bedrooms,
      bathrooms: r.bathrooms,
      broker: { id: r.broker_id, name: r.broker_name },
      verified_at: toIso(r.verified_at),
      listed_at: listedAt,
      days_on_market: daysOnMarket(nowMs, Date.parse(listedAt)),
      url: r.url,
    }
  })
  const end = search.offset + listings.length
  // Beyond MAX_OFFSET a next page could not be asked for: narrower filters reach those listings.
  return {
    ok: true,
    count: listings.length,
    total,
    limit: search.limit,
    offset: search.offset,
    next_offset: end < total && end <= MAX_OFFSET ? end : null,
    listings,
  }
}
