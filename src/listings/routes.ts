import type { Gate } from '../http/gate.ts'
import { mountOperations } from '../http/operation.ts'
import { type ListingDeps, searchListings } from './search-listings.ts'

export const LISTING_OPERATIONS = [searchListings]

/** GET /listings alone behind `gate`, relative to the API prefix (as the listing specs serve it). */
export const listingRoutes = (deps: ListingDeps & { gate: Gate }) => mountOperations('listings', deps.gate, LISTING_OPERATIONS, deps)
