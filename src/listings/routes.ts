import { Elysia } from 'elysia'
import type { Db } from '../db/port.ts'
import type { Gate } from '../http/gate.ts'
import { operation } from '../http/openapi.ts'
import type { Clock } from '../shared/random.ts'
import { ListingSearchParameters, ListingsResponse, parseListingSearch, searchListings } from './search.ts'

/** GET /listings, relative to the API prefix. */
export function listingRoutes(deps: { gate: Gate; db: Db; clock: Clock }) {
  return new Elysia({ name: 'listings' }).use(deps.gate).get(
    '/listings',
    ({ query }) => searchListings(deps.db, parseListingSearch(query), deps.clock()),
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
