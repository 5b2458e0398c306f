import { Type } from '@sinclair/typebox'
import { httpInputs } from '../http/inputs.ts'
import { CountryParameter } from '../http/parameters.ts'
import { OPERATIONS, PROPERTY_TYPES } from '../domain/market/vocabulary.ts'
import { ZoneInput, zoneNumberOfName } from '../domain/market/zone-name.ts'
import { anyCaseOf, defaulted, expecting, type Parsed } from '../shared/input-schema.ts'
import { DEFAULT_LIMIT, type ListingSearch, MAX_LIMIT, MAX_OFFSET, SORTS } from '../../projections/listings/search.ts'

/** The largest price filter: far above any price, and its cents stay exact in a double. */
const MAX_AMOUNT = 1_000_000_000_000

const Amount = (description: string, examples: number[] = []) =>
  expecting(
    Type.Number({ minimum: 0, maximum: MAX_AMOUNT, description, ...(examples.length ? { examples } : {}) }),
    `Expected an amount from 0 to ${MAX_AMOUNT} in decimal digits, e.g. 150000 or 1999.99`,
  )

/**
 * The query of GET /listings: what the OpenAPI document shows and what reads the query string
 * (src/http/inputs.ts), names, types, ranges, defaults and letter case alike.
 */
export const ListingSearchQuery = Type.Object({
  country: CountryParameter,
  zone: Type.Optional(ZoneInput),
  operation: Type.Optional(anyCaseOf(OPERATIONS, { description: 'Venta (sale) or Renta (monthly rent)' })),
  property_type: Type.Optional(anyCaseOf(PROPERTY_TYPES, { description: 'property type' })),
  price_min: Type.Optional(Amount('lowest price in USD, inclusive; not above price_max (else 400)', [150000])),
  price_max: Type.Optional(Amount('highest price in USD, inclusive; not below price_min (else 400)')),
  sort: defaulted(anyCaseOf(SORTS, { description: 'newest first, or by price' }), 'newest'),
  limit: defaulted(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, description: 'page size' }), DEFAULT_LIMIT),
  offset: defaulted(Type.Integer({ minimum: 0, maximum: MAX_OFFSET, description: 'listings to skip' }), 0),
})

export const listingSearchInputs = httpInputs({
  query: ListingSearchQuery,
  refine: ({ price_min, price_max }) =>
    price_min !== undefined && price_max !== undefined && price_min > price_max ? [{ field: 'price_min', message: 'Expected at most price_max' }] : [],
})

/**
 * The listing search of a request URL (everything after its first `?`), or of parameters given one
 * by one (as a query string would carry them); invalid_request names every bad parameter.
 */
export function listingSearchOf(request: string | Readonly<Record<string, string>>): ListingSearch {
  const url = typeof request === 'string' ? request : `?${new URLSearchParams(request)}`
  return listingSearchFrom(listingSearchInputs.read(url).query)
}

/** The listing search of a query already read by `listingSearchInputs`. */
export function listingSearchFrom(query: Parsed<typeof ListingSearchQuery>): ListingSearch {
  return {
    country: query.country,
    zone: query.zone === undefined ? null : zoneNumberOfName(query.zone),
    operation: query.operation ?? null,
    property_type: query.property_type ?? null,
    price_min: query.price_min ?? null,
    price_max: query.price_max ?? null,
    sort: query.sort,
    limit: query.limit,
    offset: query.offset,
  }
}
