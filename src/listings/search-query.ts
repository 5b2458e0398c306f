import { Type } from '@sinclair/typebox'
import {
  amountParam,
  choiceParam,
  CountryParameter,
  countryParam,
  integerParam,
  type Problems,
  type RawQuery,
  throwIfProblems,
} from '../http/query-params.ts'
import { OPERATIONS, Operation, PROPERTY_TYPES, PropertyType } from '../domain/market/vocabulary.ts'
import { ZONE_NAME_PATTERN } from '../domain/market/zone-name.ts'
import { DEFAULT_LIMIT, type ListingSearch, MAX_LIMIT, MAX_OFFSET, Sort, SORTS } from '../../projections/listings/search.ts'

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
