import { type Static, Type } from '@sinclair/typebox'
import { Country, Currency, Operation, PropertyType } from '../../src/domain/market/vocabulary.ts'

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

/**
 * The listings table as SQL over it names a search: the columns of a record (price per m² rounded
 * once, half away from zero, from the exact quotient) and of each filter and order. For searches
 * written in SQL (the reference the in-memory inventory is checked against).
 */
export const LISTING_COLUMNS = {
  record: `listing_id, country, zone_no, operation, property_type, title, price_usd::text as price_usd, price_local,
  currency, area_m2, round(ppm2_usd, 2)::text as ppm2_usd, bedrooms, bathrooms, broker_id, broker_name, verified_at, listed_at, url`,
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
