import { createHash } from 'node:crypto'
import { type Static, Type } from '@sinclair/typebox'
import { type FxTable, toUsd } from '../market/fx.ts'
import { Currency, Source } from '../market/vocabulary.ts'
import { derivedUuid } from '../../shared/derived-uuid.ts'
import type { Decider } from '../decider.ts'
import type { Broker, FeedRecord } from './feed.ts'
import { groupProperties, withAbsent } from './fields.ts'

/**
 * A listing is one property offer as one source publishes it, identified by (source, source_id).
 * Its stream records what was observed to change, at the feed's `observed_at` (never the clock
 * of the ingesting machine), so history can be back-filled and replays are identical.
 */

const At = Type.String({ description: 'UTC ISO time' })
const ListingId = Type.String({ pattern: '^lst_[0-9a-f]{24}$' })

/** What describes the property (fields.ts, group details); a change of any of these is a ListingDetailsChanged. */
const DetailFields = groupProperties('details')
export const ListingDetails = Type.Object(DetailFields)
export type ListingDetails = Static<typeof ListingDetails>
export const DETAIL_FIELDS = Object.keys(DetailFields) as (keyof ListingDetails)[]

/** The asking price as published, and in USD at the rate recorded with it (fields.ts, group price). */
const PriceFields = groupProperties('price')
export const ListingPrice = Type.Object(PriceFields)
export type ListingPrice = Static<typeof ListingPrice>

export const ListingEventSchemas = {
  ListingIngested: Type.Object({
    listing_id: ListingId,
    source: Source,
    source_id: Type.String(),
    ...DetailFields,
    ...PriceFields,
    observed_at: At,
  }),
  ListingDetailsChanged: Type.Object({
    listing_id: ListingId,
    /** The complete new details; `changed` names the fields that differ from before. */
    changed: Type.Array(Type.String()),
    ...DetailFields,
    observed_at: At,
  }),
  ListingPriceChanged: Type.Object({
    listing_id: ListingId,
    ...PriceFields,
    previous_price_local: Type.Number(),
    previous_currency: Currency,
    previous_price_usd: Type.Number(),
    observed_at: At,
  }),
  ListingVerified: Type.Object({
    listing_id: ListingId,
    /** Who asserted the verification: `feed` when it arrived with a feed line. */
    verified_by: Type.String(),
    verified_at: At,
    observed_at: At,
  }),
  ListingDelisted: Type.Object({ listing_id: ListingId, observed_at: At }),
  ListingRelisted: Type.Object({ listing_id: ListingId, observed_at: At }),
}
type Schemas = typeof ListingEventSchemas
export type ListingEvent = { [K in keyof Schemas]: { type: K; data: Static<Schemas[K]> } }[keyof Schemas]
export type ListingEventType = ListingEvent['type']

export const isListingEvent = (event: { type: string }): event is ListingEvent => event.type in ListingEventSchemas

export type Listing =
  | { status: 'untracked' }
  | {
      status: 'active' | 'delisted'
      id: string
      details: ListingDetails
      price: ListingPrice
      verifiedAt: string | null
      /** The latest observation recorded; older feed lines are stale and change nothing. */
      observedAt: string
    }

export const untracked: Listing = { status: 'untracked' }

/** Feed line observed: the only command, whatever the line says. */
export type ObserveListing = { type: 'ObserveListing'; record: FeedRecord; fx: FxTable }

const keyOf = (source: string, sourceId: string) =>
  createHash('sha256').update(`${source}\n${sourceId}`).digest('hex').slice(0, 24)

/** Public id of a listing: derived from (source, source_id), so any source_id is safe in it. */
export const listingId = (source: string, sourceId: string) => `lst_${keyOf(source, sourceId)}`
export const listingStream = (source: string, sourceId: string) => `listing-${keyOf(source, sourceId)}`
export const LISTING_CATEGORY = 'listing'

/** The details a feed line gives, in the order of the events (a broker copied: the line's object may carry more). */
const detailsOf = (r: FeedRecord): ListingDetails => {
  const details = Object.fromEntries(DETAIL_FIELDS.map((field) => [field, r[field]])) as ListingDetails
  return withAbsent('details', { ...details, broker: r.broker ? { id: r.broker.id, name: r.broker.name } : null })
}

/** Field equality; a broker is compared by value (stored events come back with their keys reordered). */
const sameValue = (a: unknown, b: unknown): boolean => {
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') {
    const [x, y] = [a as Broker, b as Broker]
    return x.id === y.id && x.name === y.name
  }
  return a === b
}

/**
 * What a feed line tells about a listing, as events; nothing when it tells nothing new.
 * A delisting is recorded before the other changes of the same line and a relisting after them,
 * so that the listing is never active with half-updated attributes.
 */
export function decideListing(command: ObserveListing, listing: Listing): ListingEvent[] {
  const { record, fx } = command
  const at = record.observed_at
  const id = listingId(record.source, record.source_id)
  const details = detailsOf(record)
  const { price_usd, fx_rate } = toUsd(record.price, record.currency, fx)
  const price: ListingPrice = { price_local: record.price, currency: record.currency, fx_rate, price_usd }
  const verified: ListingEvent[] =
    record.verified_at !== null && (listing.status === 'untracked' || listing.verifiedAt !== record.verified_at)
      ? [{ type: 'ListingVerified', data: { listing_id: id, verified_by: 'feed', verified_at: record.verified_at, observed_at: at } }]
      : []

  if (listing.status === 'untracked') {
    return [
      {
        type: 'ListingIngested',
        data: { listing_id: id, source: record.source, source_id: record.source_id, ...details, ...price, observed_at: at },
      },
      ...verified,
      ...(record.status === 'delisted' ? [{ type: 'ListingDelisted' as const, data: { listing_id: id, observed_at: at } }] : []),
    ]
  }
  if (at < listing.observedAt) return []

  const changes: ListingEvent[] = []
  const changed = DETAIL_FIELDS.filter((field) => !sameValue(listing.details[field], details[field]))
  if (changed.length > 0) {
    changes.push({ type: 'ListingDetailsChanged', data: { listing_id: id, changed, ...details, observed_at: at } })
  }
  if (listing.price.price_local !== price.price_local || listing.price.currency !== price.currency) {
    changes.push({
      type: 'ListingPriceChanged',
      data: {
        listing_id: id,
        ...price,
        previous_price_local: listing.price.price_local,
        previous_currency: listing.price.currency,
        previous_price_usd: listing.price.price_usd,
        observed_at: at,
      },
    })
  }
  changes.push(...verified)
  if (record.status === 'delisted' && listing.status === 'active') {
    return [{ type: 'ListingDelisted', data: { listing_id: id, observed_at: at } }, ...changes]
  }
  if (record.status === 'active' && listing.status === 'delisted') {
    return [...changes, { type: 'ListingRelisted', data: { listing_id: id, observed_at: at } }]
  }
  return changes
}

export function evolveListing(listing: Listing, event: ListingEvent): Listing {
  if (event.type === 'ListingIngested') {
    const { listing_id, source: _source, source_id: _sourceId, observed_at, price_local, currency, fx_rate, price_usd, ...details } =
      event.data
    return {
      status: 'active',
      id: listing_id,
      details: withAbsent('details', details),
      price: { price_local, currency, fx_rate, price_usd },
      verifiedAt: null,
      observedAt: observed_at,
    }
  }
  if (listing.status === 'untracked') return listing
  const observedAt = event.data.observed_at
  switch (event.type) {
    case 'ListingDetailsChanged': {
      const { listing_id: _id, changed: _changed, observed_at: _at, ...details } = event.data
      return { ...listing, details: withAbsent('details', details), observedAt }
    }
    case 'ListingPriceChanged': {
      const { price_local, currency, fx_rate, price_usd } = event.data
      return { ...listing, price: { price_local, currency, fx_rate, price_usd }, observedAt }
    }
    case 'ListingVerified':
      return { ...listing, verifiedAt: event.data.verified_at, observedAt }
    case 'ListingDelisted':
      return { ...listing, status: 'delisted', observedAt }
    case 'ListingRelisted':
      return { ...listing, status: 'active', observedAt }
    default: {
      const never: never = event
      throw new Error(`unknown listing event ${JSON.stringify(never)}`)
    }
  }
}

/**
 * Event ids derived from the stream, the revision the event will take and its content: a retried
 * append of the same decision is recognised as a duplicate, while a different decision at the same
 * revision (a concurrent writer won) gets different ids and fails on the expected revision.
 */
export const listingEventId = (stream: string, revision: number, event: ListingEvent): string =>
  derivedUuid(`${stream}\n${revision}\n${event.type}\n${JSON.stringify(event.data)}`)

/** A listing's decisions: what each feed line observed about it records. */
export const listingDecider: Decider<ObserveListing, ListingEvent, Listing> = {
  decide: decideListing,
  evolve: evolveListing,
  initialState: untracked,
  is: isListingEvent,
}
