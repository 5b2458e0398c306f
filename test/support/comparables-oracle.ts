import type { FeedRecord } from '../../src/domain/listings/feed.ts'
import { listingId } from '../../src/domain/listings/listing.ts'
import type { ComparableListing } from '../../src/domain/market/comparable.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import type { Country } from '../../src/domain/market/vocabulary.ts'
import { usdCents } from './half-cents.ts'

/** What an estimate's candidates share: a country's zone, an operation and a property type. */
export type Segment = { country: Country; zoneNo: number; operation: string; propertyType: string }

const zoneNoOf = (record: FeedRecord) => Number(record.zone.slice('Zona '.length))
const segmentOf = (r: FeedRecord): Segment => ({ country: r.country, zoneNo: zoneNoOf(r), operation: r.operation, propertyType: r.property_type })

/**
 * The brute force of `comparablesAt`, from the raw feed lines alone (no events, no projection, no
 * SQL). Each line is a full snapshot of its listing and a listing's lines come in time order, so its
 * state at `at` is its last line observed at or before it. It is public then when that line says
 * active and broker and some line by then gave a verification time: a verification is never
 * withdrawn (a later line without one records nothing: decideListing). Its figures are that line's,
 * the price in whole USD cents at the reference rates, halves up. In listing id order.
 */
export function comparablesFromFeed(records: readonly FeedRecord[], segment: Segment, at: Date): ComparableListing[] {
  const states = new Map<string, { last: FeedRecord; verified: boolean }>()
  for (const record of records) {
    if (Date.parse(record.observed_at) > at.getTime()) continue
    const id = listingId(record.source, record.source_id)
    states.set(id, { last: record, verified: (states.get(id)?.verified ?? false) || record.verified_at !== null })
  }
  const inSegment = (r: FeedRecord) =>
    r.country === segment.country && zoneNoOf(r) === segment.zoneNo && r.operation === segment.operation && r.property_type === segment.propertyType
  return [...states]
    .filter(([, { last, verified }]) => verified && last.source === 'broker' && last.status === 'active' && inSegment(last))
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([id, { last }]) => ({
      id,
      areaM2: last.area_m2,
      bedrooms: last.bedrooms,
      bathrooms: last.bathrooms,
      cents: usdCents(last.price, DEFAULT_FX[last.currency]),
    }))
}

/** Every segment some line of `records` names. */
export function segmentsOf(records: readonly FeedRecord[]): Segment[] {
  return [...new Set(records.map((r) => JSON.stringify(segmentOf(r))))].map((text) => JSON.parse(text) as Segment)
}

/** Every instant a line of `records` was observed at, in order, each with the millisecond before it (the market just before the line). */
export function instantsAround(records: readonly FeedRecord[]): Date[] {
  const times = [...new Set(records.map((r) => Date.parse(r.observed_at)))].sort((a, b) => a - b)
  return times.flatMap((time) => [new Date(time - 1), new Date(time)])
}
