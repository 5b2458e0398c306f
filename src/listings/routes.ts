import { Elysia } from 'elysia'
import type { Db } from '../db/port.ts'
import type { Clock } from '../shared/random.ts'
import { ListingSearchQuery, ListingsResponse, parseListingSearch, searchListings } from './search.ts'

/** GET /listings, relative to the API prefix; authentication is mounted in front by the app. */
export function listingRoutes(deps: { db: Db; clock: Clock }) {
  return new Elysia({ name: 'listings' }).get(
    '/listings',
    ({ query }) => searchListings(deps.db, parseListingSearch(query), deps.clock()),
    { query: ListingSearchQuery, response: { 200: ListingsResponse } },
  )
}
