import { describe, expect, it } from 'vitest'
import { listingsProjection } from '../../projections/listings/projection.ts'
import { detailsRow } from '../../projections/listings/rows.ts'
import { parseFeedLine } from '../../src/domain/listings/feed.ts'
import { LISTING_RECORD } from '../../src/domain/listings/fields.ts'
import { decideListing, evolveListing, type ListingEvent, type ObserveListing, untracked } from '../../src/domain/listings/listing.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { aRecord } from '../support/market.ts'

/**
 * The listing record is declared once (src/domain/listings/fields.ts). A field added later is
 * optional on a feed line and missing from the events recorded before it: both read as the value
 * the field declares for its absence. `url` (absent: null) stands for such a field here.
 */

const observe = (record = aRecord()): ObserveListing => ({ type: 'ObserveListing', record, fx: DEFAULT_FX })
/** The first sighting of a listing as an event recorded before `url` existed. */
type Ingested = Extract<ListingEvent, { type: 'ListingIngested' }>
function ingestedWithoutUrl(): Ingested {
  const [event] = decideListing(observe(aRecord({ url: null })), untracked) as Ingested[]
  const { url: _url, ...data } = event!.data
  return { type: 'ListingIngested', data: data as Ingested['data'] }
}

describe('the listing record, declared once', () => {
  it('reads an event that lacks a field with the value declared for its absence, and then records no change', () => {
    const state = evolveListing(untracked, ingestedWithoutUrl())
    expect(state.status === 'active' && state.details.url).toBeNull()
    expect(decideListing(observe(aRecord({ url: null })), state)).toEqual([])
  })

  it('writes the row of such an event with that value', () => {
    expect(detailsRow(ingestedWithoutUrl().data)).toMatchObject({ url: null, zone_no: 10, broker_id: 'gt-brk-01' })
  })

  it('accepts a feed line that leaves out an optional field, with the value declared for it', () => {
    const { url: _url, broker: _broker, ...line } = aRecord({ source: 'scraped' })
    const parsed = parseFeedLine(JSON.stringify(line), 1, new Date('2026-03-02T00:00:00Z'))
    expect(parsed.ok && { url: parsed.record.url, broker: parsed.record.broker }).toEqual({ url: null, broker: null })
  })

  it('shows in a /listings record only columns the listings table has', () => {
    const [ddl] = listingsProjection.schema(listingsProjection.tables)
    const columns = [...ddl!.matchAll(/^\s+(\w+) /gm)].map((m) => m[1])
    const read = Object.values(LISTING_RECORD).flatMap((entry) => entry.columns.map((c) => c.sql.replace(/^round\((\w+), 2\)$/, '$1')))
    expect(read.filter((column) => !columns.includes(column))).toEqual([])
  })
})
