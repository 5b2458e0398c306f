import { type Static, Type } from '@sinclair/typebox'
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
import { ZONE_NAME_PATTERN } from '../market/zone-name.ts'

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
