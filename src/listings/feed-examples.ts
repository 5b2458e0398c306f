import type { Static } from '@sinclair/typebox'
import { LISTINGS_EXAMPLE } from './examples.ts'
import type { ChangesResponse, ExportedListing } from './feed-schemas.ts'

const { days_on_market: _perRequest, ...listing } = LISTINGS_EXAMPLE.listings[0]!
/** A listing as an export or a change carries it (the /listings example without days_on_market). */
const EXPORTED = listing satisfies Static<typeof ExportedListing>

/** GET /listings/export?country=GT (NDJSON), cut to one listing: each line a listing, the last the cursor. */
export const EXPORT_NDJSON_EXAMPLE = `${JSON.stringify(EXPORTED)}\n${JSON.stringify({ cursor: 'c1.MGY1YzNkOWU0YjJhMWY3OC4yMTQ3', count: 319 })}\n`

/** GET /listings/changes?after=…&limit=3 after a price change, a delisting and a new verified listing. */
export const CHANGES_EXAMPLE = {
  ok: true,
  changes: [
    {
      cursor: 'c1.MGY1YzNkOWU0YjJhMWY3OC4yMTUw',
      kind: 'price_changed',
      listing_id: EXPORTED.id,
      at: '2026-11-26T09:00:00.000Z',
      fields: ['price_usd', 'price_local'],
      price: { old_usd: 215483.87, new_usd: 206451.61 },
      listing: { ...EXPORTED, price_usd: 206451.61, price_local: 1600000, price_per_m2_usd: 2106.65 },
    },
    { cursor: 'c1.MGY1YzNkOWU0YjJhMWY3OC4yMTUx', kind: 'removed', listing_id: 'lst_0a1e4ab2e1d6f4c9f5b3b2a1', at: '2026-11-26T09:05:00.000Z', reason: 'delisted' },
    {
      cursor: 'c1.MGY1YzNkOWU0YjJhMWY3OC4yMTUz',
      kind: 'listed',
      listing_id: 'lst_7d2c9e0f41b35a6c8e9f0a1b',
      at: '2026-11-26T09:10:00.000Z',
      listing: { ...EXPORTED, id: 'lst_7d2c9e0f41b35a6c8e9f0a1b', title: 'Casa en venta, Zona 8, Ciudad de Guatemala · 3 hab.', bedrooms: 3 },
    },
  ],
  next_cursor: 'c1.MGY1YzNkOWU0YjJhMWY3OC4yMTUz',
  more: false,
} satisfies Static<typeof ChangesResponse>
