import { type Static, Type } from '@sinclair/typebox'
import { CHANGE_KINDS } from '../domain/listings/changes.ts'
import { ListingRecord } from '../../projections/listings/search.ts'

/** A listing as the export and the change feed carry it: the /listings record without `days_on_market` (recompute it from `listed_at`). */
export const ExportedListing = Type.Omit(ListingRecord, ['days_on_market'])

export const ListingChange = Type.Object({
  cursor: Type.String({ description: 'the position of this change: `after=` it to read what follows' }),
  kind: Type.Union(CHANGE_KINDS.map((kind) => Type.Literal(kind))),
  listing_id: Type.String(),
  at: Type.String({ description: 'when the source was seen saying so (the event\'s observed_at), UTC ISO' }),
  fields: Type.Optional(Type.Array(Type.String(), { description: 'updated and price_changed: the record\'s fields that changed (zone_slug and price_per_m2_usd follow zone, price_usd and area_m2)' })),
  price: Type.Optional(Type.Object({ old_usd: Type.Number(), new_usd: Type.Number() }, { description: 'price_changed: the price before and after' })),
  reason: Type.Optional(Type.Union([Type.Literal('delisted'), Type.Literal('moved_out')], { description: 'removed: delisted, or moved out of the country or zone followed' })),
  listing: Type.Optional({ ...ExportedListing, description: 'listed, updated and price_changed: the listing after the change, whole' }),
})
export type ListingChange = Static<typeof ListingChange>

export const ChangesResponse = Type.Object({
  ok: Type.Literal(true),
  changes: Type.Array(ListingChange),
  next_cursor: Type.String({ description: 'where the next answer starts: pass it as `after`' }),
  more: Type.Boolean({ description: 'true: more changes are there already, ask again at once; false: caught up, ask again later' }),
})
export type ChangesResponse = Static<typeof ChangesResponse>
