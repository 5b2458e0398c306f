import { Elysia } from 'elysia'
import type { Gate } from '../http/gate.ts'
import { operation } from '../http/openapi.ts'
import type { Clock } from '../shared/random.ts'
import type { ListingInventory } from '../../projections/listings/inventory.ts'
import { ListingsResponse } from '../../projections/listings/search.ts'
import { ListingSearchParameters, parseListingSearch } from './search-query.ts'

/** GET /listings, relative to the API prefix. */
export function listingRoutes(deps: { gate: Gate; inventory: ListingInventory; clock: Clock }) {
  return new Elysia({ name: 'listings' }).use(deps.gate).get(
    '/listings',
    ({ query }) => deps.inventory.search(parseListingSearch(query), deps.clock()),
    {
      scope: 'read',
      detail: operation({
        operationId: 'searchListings',
        tag: 'Market',
        summary: 'The verified broker inventory: active, verified, broker-sourced listings only',
        query: ListingSearchParameters,
        ok: ListingsResponse,
        errors: ['invalid_request'],
      }),
    },
  )
}
