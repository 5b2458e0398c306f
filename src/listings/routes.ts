import { Elysia } from 'elysia'
import type { Db } from '../db/port.ts'
import type { Gate } from '../http/gate.ts'
import type { Clock } from '../shared/random.ts'
import { ListingSearchQuery, ListingsResponse, parseListingSearch, searchListings } from './search.ts'

/** GET /listings, relative to the API prefix. */
export function listingRoutes(deps: { gate: Gate; db: Db; clock: Clock }) {
  return new Elysia({ name: 'listings' }).use(deps.gate).get(
    '/listings',
    ({ query }) => searchListings(deps.db, parseListingSearch(query), deps.clock()),
    { scope: 'read', query: ListingSearchQuery, response: { 200: ListingsResponse } },
  )
}
