import { type ListingsTables, listingsProjection } from '../../projections/listings/projection.ts'
import { type Projection, sql } from '../../projections/engine/projection.ts'
import type { FeedRecord } from '../../src/domain/listings/feed.ts'
import { type Listing, listingDecider, type ListingEvent, listingEventId, listingStream, untracked } from '../../src/domain/listings/listing.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import type { EventStore, RecordedEvent } from '../../src/eventstore/port.ts'

/**
 * A store as the code before exact money left it: listing events whose `price_usd` the ingestion
 * rounded in floating point (`priceLocal * 100 / rate`), and version 2 of the listings read model,
 * which took each event's `price_usd` as recorded (built with version 4's tables: version 2's, plus
 * what versions 3 and 4 added for answers as of a past instant, which the comparison does not read).
 */

/** The conversion before exact money (src/domain/market/fx.ts then). */
export function floatUsd(priceLocal: number, rate: number): number {
  const quotient = (priceLocal * 100) / rate
  return (Math.sign(quotient) * Math.round(Math.abs(quotient))) / 100
}

const withFloatUsd = (event: ListingEvent): ListingEvent =>
  event.type === 'ListingIngested' || event.type === 'ListingPriceChanged'
    ? ({ ...event, data: { ...event.data, price_usd: floatUsd(event.data.price_local, event.data.fx_rate) } } as ListingEvent)
    : event

/** Records feed lines (each listing's in order, all new to the store) as the ingestion before exact money did. */
export async function recordWithFloatUsd(store: EventStore, records: readonly FeedRecord[]): Promise<void> {
  const byStream = new Map<string, FeedRecord[]>()
  for (const r of records) {
    const stream = listingStream(r.source, r.source_id)
    byStream.set(stream, [...(byStream.get(stream) ?? []), r])
  }
  const writes = [...byStream].map(([stream, lines]) => {
    let listing: Listing = untracked
    const events: ListingEvent[] = []
    for (const record of lines) {
      const decided = listingDecider.decide({ type: 'ObserveListing', record, fx: DEFAULT_FX }, listing).map(withFloatUsd)
      events.push(...decided)
      listing = decided.reduce(listingDecider.evolve, listing)
    }
    return {
      stream,
      events: events.map((event, i) => ({ id: listingEventId(stream, i, event), type: event.type, data: event.data })),
      expected: 'no_stream' as const,
    }
  })
  for (let i = 0; i < writes.length; i += 500) await store.appendMany(writes.slice(i, i + 500))
}

const isPriced = (event: RecordedEvent) => event.type === 'ListingIngested' || event.type === 'ListingPriceChanged'
type Priced = { listing_id: string; price_local: number; fx_rate: number; price_usd: number }

/** Version 3's statements over prices in USD at rate 1 (so its exact conversion keeps the recorded `price_usd`), then the recorded local price and rate put back. */
function v2Batch(events: readonly RecordedEvent[], t: ListingsTables) {
  const recorded = new Map<string, Omit<Priced, 'price_usd'>>()
  const asUsd = events.map((event) => {
    if (!isPriced(event)) return event
    const data = event.data as Priced
    recorded.set(data.listing_id, { listing_id: data.listing_id, price_local: data.price_local, fx_rate: data.fx_rate })
    return { ...event, data: { ...event.data, price_local: data.price_usd, fx_rate: 1 } }
  })
  const restore = sql(
    `update ${t.listings} l set price_local = x.price_local, fx_rate = x.fx_rate
       from jsonb_to_recordset($1::text::jsonb) as x(listing_id text, price_local double precision, fx_rate double precision)
      where l.listing_id = x.listing_id`,
    JSON.stringify([...recorded.values()]),
  )
  return [...listingsProjection.applyBatch!(asUsd, t), ...(recorded.size > 0 ? [restore] : [])]
}

export const listingsV2: Projection<keyof ListingsTables> = {
  ...listingsProjection,
  version: 2,
  apply: (event, t) => v2Batch([event], t),
  applyBatch: v2Batch,
}
