import type { Gate } from '../http/gate.ts'
import { mountOperations } from '../http/operation.ts'
import { exportListings } from './export-listings.ts'
import type { ListingFeedDeps } from './feed-deps.ts'
import { listChanges } from './list-changes.ts'
import { type ListingDeps, searchListings } from './search-listings.ts'

export const LISTING_OPERATIONS = [searchListings]

/** Staying in sync: the inventory whole as of a cursor, and every change after it (docs/api.md, "Staying in sync"). */
export const SYNC_OPERATIONS = [exportListings, listChanges]

/** The export and the change feed behind `gate`, relative to the API prefix (as their specs serve them). */
export const syncRoutes = (deps: ListingFeedDeps & { gate: Gate }) => mountOperations('sync', deps.gate, SYNC_OPERATIONS, deps)

/** GET /listings alone behind `gate`, relative to the API prefix (as the listing specs serve it). */
export const listingRoutes = (deps: ListingDeps & { gate: Gate }) => mountOperations('listings', deps.gate, LISTING_OPERATIONS, deps)
