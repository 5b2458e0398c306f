import { type ChangeFilter, seenThrough } from '../domain/listings/changes.ts'
import type { ChangeRow } from '../../projections/listings/change-feed.ts'
import { recordOf } from '../../projections/listings/search.ts'
import type { ListingChange } from './feed-schemas.ts'

/** A change as the reader following `filter` sees it (null: it happened elsewhere): the change feed's entries and the listing webhooks' data. */
export function changeSeen(row: ChangeRow, cursor: string, filter: ChangeFilter): ListingChange | null {
  const seen = seenThrough(row.kind, row.place, filter)
  if (!seen) return null
  const common = { cursor, kind: seen.kind, listing_id: row.row.listing_id as string, at: row.at }
  switch (seen.kind) {
    case 'removed':
      return { ...common, reason: seen.moved ? 'moved_out' : 'delisted' }
    case 'listed':
      return { ...common, listing: recordOf(row.row) as ListingChange['listing'] }
    case 'updated':
      return { ...common, fields: row.fields, listing: recordOf(row.row) as ListingChange['listing'] }
    case 'price_changed': {
      const price = { old_usd: row.oldPriceUsd!, new_usd: Number(row.row.price_usd) }
      return { ...common, fields: row.fields, price, listing: recordOf(row.row) as ListingChange['listing'] }
    }
    default: {
      const never: never = seen.kind
      throw new Error(`unknown change ${String(never)}`)
    }
  }
}

