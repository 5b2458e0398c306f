import { Elysia } from 'elysia'
import { jsonBytes } from '../http/errors.ts'
import type { Gate } from '../http/gate.ts'
import { operation, refusalOf } from '../http/openapi.ts'
import type { Clock } from '../shared/random.ts'
import type { ListingInventory } from '../../projections/listings/inventory.ts'
import { ListingsResponse } from '../../projections/listings/search.ts'
import { listingSearchInputs, listingSearchOf } from './search-query.ts'

/** GET /listings, relative to the API prefix. */
export function listingRoutes(deps: { gate: Gate; inventory: ListingInventory; clock: Clock }) {
  return new Elysia({ name: 'listings' }).use(deps.gate).get(
    '/listings',
    async ({ request, set }) => jsonBytes(set, await deps.inventory.searchBytes(listingSearchOf(request.url), deps.clock())),
    {
      scope: 'read',
      detail: operation({
        operationId: 'searchListings',
        tag: 'Market',
        summary: 'The verified broker inventory: active, verified, broker-sourced listings only',
        description:
          'A page of the listings that are active, verified and from a broker, filtered and sorted; ties are broken by id, ' +
          'so pages never overlap. `total` counts every match and `next_offset` is the next page, or null at the end.',
        inputs: listingSearchInputs,
        ok: ListingsResponse,
        errors: [refusalOf(() => listingSearchOf('?limit=0&sort=cheapest&price_min=500&price_max=100'))],
      }),
    },
  )
}
