import { type Static, Type } from '@sinclair/typebox'
import { listingsProjection } from '../../projections/listings.ts'
import { liveTables } from '../../projections/live.ts'
import { type Db, type Row, toIso, toNumber } from '../db/port.ts'
import {
  amountParam,
  choiceParam,
  CountryParameter,
  countryParam,
  integerParam,
  type Problems,
  type RawQuery,
  throwIfProblems,
} from '../market/query-params.ts'
import { Country, Currency, OPERATIONS, Operation, PROPERTY_TYPES, PropertyType } from '../market/vocabulary.ts'
import { isKnowableZoneNumber, ZONE_NAME_PATTERN, zoneName, zoneSlug } from '../market/zone-name.ts'
import { daysOnMarket } from '../zones/statistics.ts'

/** GET /listings: the verified broker inventory (active, verified, broker-sourced listings only). */

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

/**
 * The query parameters as documented (OpenAPI): names, types, ranges and defaults. The query string
 * is read by parseListingSearch, which applies exactly these rules (and takes values in any letter
 * case), naming every bad parameter at once.
 */
export const ListingSearchParameters = Type.Object({
  country: CountryParameter,
  zone: Type.Optional(Type.String({ pattern: ZONE_NAME_PATTERN, description: 'zone, form "Zona N" (any letter case)', examples: ['Zona 3'] })),
  operation: Type.Optional(Type.Union(Operation.anyOf, { description: 'Venta (sale) or Renta (monthly rent), any letter case' })),
  property_type: Type.Optional(Type.Union(PropertyType.anyOf, { description: 'any letter case' })),
  price_min: Type.Optional(Type.Number({ minimum: 0, description: 'lowest price in USD, inclusive', examples: [150000] })),
  price_max: Type.Optional(Type.Number({ minimum: 0, description: 'highest price in USD, inclusive; not below price_min' })),
  sort: Type.Optional(Type.Union(Sort.anyOf, { default: 'newest', description: 'newest first, or by price' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, description: 'page size' })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: 0, description: 'listings to skip' })),
})

export const ListingRecord = Type.Object({
  id: Type.String(),
  country: Country,
  zone: Type.String(),
  zone_slug: Type.String(),
  operation: Operation,
  property_type: PropertyType,
  title: Type.String(),
  price_usd: Type.Number(),
  price_local: Type.Number(),
  currency: Currency,
  area_m2: Type.Number(),
  price_per_m2_usd: Type.Number(),
  bedrooms: Type.Integer(),
  bathrooms: Type.Number(),
  broker: Type.Object({ id: Type.String(), name: Type.String() }),
  verified_at: Type.String(),
  listed_at: Type.String(),
  days_on_market: Type.Integer(),
  url: Type.Union([Type.String(), Type.Null()]),
})
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

/** `Zona N` in any letter case. */
const ZONE_FILTER = /^\s*zona\s+([1-9][0-9]*)\s*$/i

/** Validates the query string; throws invalid_request naming every bad parameter. */
export function parseListingSearch(raw: RawQuery): ListingSearch {
  const problems: Problems = []
  let zone: number | null = null
  if (raw.zone !== undefined) {
    const match = ZONE_FILTER.exec(raw.zone)
    if (match) zone = Number(match[1])
    else problems.push({ field: 'zone', message: 'must be "Zona N", e.g. Zona 10' })
  }
  const search: ListingSearch = {
    country: countryParam(raw, problems),
    zone,
    operation: choiceParam(raw, 'operation', OPERATIONS, problems),
    property_type: choiceParam(raw, 'property_type', PROPERTY_TYPES, problems),
    price_min: amountParam(raw, 'price_min', problems),
    price_max: amountParam(raw, 'price_max', problems),
    sort: choiceParam(raw, 'sort', SORTS, problems) ?? 'newest',
    limit: integerParam(raw, 'limit', { min: 1, max: MAX_LIMIT, fallback: DEFAULT_LIMIT }, problems),
    offset: integerParam(raw, 'offset', { min: 0, max: MAX_OFFSET, fallback: 0 }, problems),
  }
  if (search.price_min !== null && search.price_max !== null && search.price_min > search.price_max) {
    problems.push({ field: 'price_min', message: 'must not be greater than price_max' })
  }
  throwIfProblems(problems, 'query')
  return search
}

/**
 * Each order ends with the unique id, so that pages neither overlap nor skip. Columns are qualified:
 * the select list has text aliases of the same names, which must not be what is sorted.
 */
const ORDER: Record<ListingSearch['sort'], string> = {
  newest: 'l.listed_at desc, l.listing_id desc',
  price_asc: 'l.price_usd asc, l.listing_id asc',
  price_desc: 'l.price_usd desc, l.listing_id desc',
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
  ppm2_usd: string
  bedrooms: number
  bathrooms: number
  broker_id: string
  broker_name: string
  verified_at: unknown
  listed_at: unknown
  url: string | null
}

/** A page of the inventory and the number of all matches. `now` gives days on market. */
export async function searchListings(db: Db, search: ListingSearch, now: Date): Promise<ListingsResponse> {
  if (search.zone !== null && !isKnowableZoneNumber(search.zone)) {
    return { ok: true, count: 0, total: 0, limit: search.limit, offset: search.offset, next_offset: null, listings: [] }
  }
  const params: unknown[] = [search.country]
  const where = ['public', 'country = $1']
  const filter = (condition: (placeholder: string) => string, value: unknown) => {
    params.push(value)
    where.push(condition(`$${params.length}`))
  }
  if (search.zone !== null) filter((p) => `zone_no = ${p}`, search.zone)
  if (search.operation !== null) filter((p) => `operation = ${p}`, search.operation)
  if (search.property_type !== null) filter((p) => `property_type = ${p}`, search.property_type)
  if (search.price_min !== null) filter((p) => `price_usd >= ${p}::numeric`, String(search.price_min))
  if (search.price_max !== null) filter((p) => `price_usd <= ${p}::numeric`, String(search.price_max))
  const condition = where.join(' and ')
  const n = params.length
  const { tables } = await liveTables(db).of(listingsProjection)
  const [rows, [counted]] = await Promise.all([
    db.query<ListingRow>(
      `select listing_id, country, zone_no, operation, property_type, title, price_usd::text as price_usd, price_local,
              currency, area_m2, round(ppm2_usd, 2)::text as ppm2_usd, bedrooms, bathrooms, broker_id, broker_name, verified_at,
              listed_at, url
         from ${tables.listings} l where ${condition}
        order by ${ORDER[search.sort]} limit $${n + 1} offset $${n + 2}`,
      [...params, search.limit, search.offset],
    ),
    db.query<{ total: unknown }>(`select count(*) as total from ${tables.listings} where ${condition}`, params),
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
      price_per_m2_usd: Number(r.ppm2_usd),
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
