import { LISTINGS_EXAMPLE } from './examples.ts'
import { jsonBytes } from '../http/errors.ts'
import { refusalOf } from '../http/openapi.ts'
import { defineOperation } from '../http/operation.ts'
import { answeredFrom, PROVENANCE_HEADERS } from '../http/provenance.ts'
import type { Clock } from '../shared/random.ts'
import type { ListingInventory } from '../../projections/listings/inventory.ts'
import { ListingsResponse } from '../../projections/listings/search.ts'
import { listingSearchFrom, listingSearchInputs, listingSearchOf } from './search-query.ts'

export type ListingDeps = { inventory: ListingInventory; clock: Clock }

/** GET /listings: a page of the public inventory, answered from memory as bytes. */
export const searchListings = defineOperation({
  method: 'GET',
  path: '/listings',
  access: 'read',
  operationId: 'searchListings',
  tag: 'Market',
  summary: 'The verified broker inventory: active, verified, broker-sourced listings only',
  description:
    'A page of the listings that are active, verified and from a broker, filtered and sorted; ties are broken by id, ' +
    'so pages never overlap. `total` counts every match and `next_offset` is the next page, or null at the end.',
  inputs: listingSearchInputs,
  ok: ListingsResponse,
  okExample: LISTINGS_EXAMPLE,
  okHeaders: PROVENANCE_HEADERS,
  errors: [refusalOf(() => listingSearchOf('?limit=0&sort=cheapest&price_min=500&price_max=100'))],
  handler: (deps: ListingDeps) => async ({ set, query }) => {
    const { bytes, at } = await deps.inventory.searchBytes(listingSearchFrom(query), deps.clock())
    answeredFrom(set, at)
    return jsonBytes(set, bytes)
  },
})
