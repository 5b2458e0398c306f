import { describe, expect, it } from 'vitest'
import type { FeedRecord } from '../../src/domain/listings/feed.ts'
import { type ListingDetails, type ListingEvent, listingDecider, listingEventId, listingId, listingStream, type ObserveListing } from '../../src/domain/listings/listing.ts'
import { DEFAULT_FX, type FxTable } from '../../src/domain/market/fx.ts'
import { specify } from '../support/given-when-then.ts'
import { aRecord } from '../support/market.ts'

const LATER = '2026-03-05T12:00:00.000Z'
const id = listingId('broker', 'brk-1')
const listing = specify(listingDecider)

/** The attributes of aRecord() as a listing holds them. */
const DETAILS: ListingDetails = {
  country: 'GT',
  zone: 'Zona 10',
  operation: 'Venta',
  property_type: 'Apartamento',
  title: 'Apartamento en venta, Zona 10',
  area_m2: 100,
  bedrooms: 2,
  bathrooms: 2,
  broker: { id: 'gt-brk-01', name: 'Inmobiliaria Los Altos' },
  url: 'https://gt-brk-01.example/propiedades/brk-1',
  listed_at: '2026-03-01T10:00:00.000Z',
}

const observe = (record: FeedRecord, fx: FxTable = DEFAULT_FX): ObserveListing => ({ type: 'ObserveListing', record, fx })
/** The events of a listing's first sighting. */
const ingested = (record = aRecord()) => listingDecider.decide(observe(record), listingDecider.initialState)
const types = (...expected: ListingEvent['type'][]) => (events: ListingEvent[]) => expect(events.map((e) => e.type)).toEqual(expected)

describe('listing decisions', () => {
  it('records a first sighting with all attributes, the local price, the FX rate and the USD price', () => {
    listing.given().when(observe(aRecord())).then([
      {
        type: 'ListingIngested',
        data: {
          listing_id: id,
          source: 'broker',
          source_id: 'brk-1',
          ...DETAILS,
          price_local: 1_550_000,
          currency: 'GTQ',
          fx_rate: 7.75,
          price_usd: 200_000,
          observed_at: '2026-03-01T12:00:00.000Z',
        },
      },
    ])
  })

  it('records a first sighting that is already verified or already delisted as such', () => {
    listing
      .given()
      .when(observe(aRecord({ verified_at: '2026-03-01T11:00:00.000Z', status: 'delisted' })))
      .then((events) => {
        types('ListingIngested', 'ListingVerified', 'ListingDelisted')(events)
        expect(events[1]!.data).toEqual({ listing_id: id, verified_by: 'feed', verified_at: '2026-03-01T11:00:00.000Z', observed_at: '2026-03-01T12:00:00.000Z' })
      })
  })

  it('records nothing for an identical line, even observed later or converted with another FX table', () => {
    listing.given(ingested()).when(observe(aRecord())).thenNothing()
    listing.given(ingested()).when(observe(aRecord({ observed_at: LATER }))).thenNothing()
    listing.given(ingested()).when(observe(aRecord({ observed_at: LATER }), { ...DEFAULT_FX, GTQ: 8 })).thenNothing()
  })

  it('records a price change with the previous price, at the time it was observed', () => {
    listing.given(ingested()).when(observe(aRecord({ price: 1_472_500, observed_at: LATER }))).then([
      {
        type: 'ListingPriceChanged',
        data: {
          listing_id: id,
          price_local: 1_472_500,
          currency: 'GTQ',
          fx_rate: 7.75,
          price_usd: 190_000,
          previous_price_local: 1_550_000,
          previous_currency: 'GTQ',
          previous_price_usd: 200_000,
          observed_at: LATER,
        },
      },
    ])
    listing.given(ingested()).when(observe(aRecord({ price: 200_000, currency: 'USD', observed_at: LATER }))).then(types('ListingPriceChanged'))
  })

  it('ignores a line older than what is recorded (a stale re-delivery)', () => {
    listing.given(ingested(aRecord({ observed_at: LATER }))).when(observe(aRecord({ price: 1, observed_at: '2026-03-02T00:00:00.000Z' }))).thenNothing()
  })

  it('records verification once per verification time; a line without it does not withdraw it', () => {
    const verified = aRecord({ verified_at: '2026-03-02T00:00:00.000Z', observed_at: LATER })
    listing.given(ingested()).when(observe(verified)).then(types('ListingVerified'))
    const history = [...ingested(), ...listingDecider.decide(observe(verified), ingested().reduce(listingDecider.evolve, listingDecider.initialState))]
    listing.given(history).when(observe(verified)).thenNothing()
    listing.given(history).when(observe(aRecord({ observed_at: LATER }))).thenNothing()
    listing.given(history).when(observe(aRecord({ verified_at: '2026-03-04T00:00:00.000Z', observed_at: LATER }))).then(types('ListingVerified'))
  })

  it('delists before and relists after the other changes of the same line', () => {
    const delisting = observe(aRecord({ status: 'delisted', price: 1_472_500, observed_at: LATER }))
    listing.given(ingested()).when(delisting).then(types('ListingDelisted', 'ListingPriceChanged'))
    const delisted = [...ingested(), ...listingDecider.decide(delisting, ingested().reduce(listingDecider.evolve, listingDecider.initialState))]
    listing
      .given(delisted)
      .when(observe(aRecord({ status: 'active', price: 1_400_000, observed_at: '2026-03-06T00:00:00.000Z' })))
      .then(types('ListingPriceChanged', 'ListingRelisted'))
  })

  it('records changed details with the complete new details and the names of the changed fields', () => {
    listing
      .given(ingested())
      .when(observe(aRecord({ title: 'Nuevo título', bedrooms: 3, observed_at: LATER })))
      .then((events) => {
        expect(events).toHaveLength(1)
        expect(events[0]).toMatchObject({
          type: 'ListingDetailsChanged',
          data: { listing_id: id, changed: ['title', 'bedrooms'], title: 'Nuevo título', bedrooms: 3, zone: 'Zona 10', observed_at: LATER },
        })
      })
    listing.given(ingested()).when(observe(aRecord({ broker: { id: 'gt-brk-02', name: 'Punto Hogar' }, observed_at: LATER }))).then(types('ListingDetailsChanged'))
  })

  it('compares a stored broker by value, whatever the order of its keys', () => {
    const [first] = ingested()
    const reloaded = JSON.parse(
      JSON.stringify(first).replace('{"id":"gt-brk-01","name":"Inmobiliaria Los Altos"}', '{"name":"Inmobiliaria Los Altos","id":"gt-brk-01"}'),
    ) as ListingEvent
    listing.given([reloaded]).when(observe(aRecord({ observed_at: LATER }))).thenNothing()
  })

  it('evolves into the state the events describe', () => {
    listing
      .given(ingested())
      .when(observe(aRecord({ verified_at: '2026-03-02T00:00:00.000Z', price: 1_472_500, observed_at: LATER })))
      .thenState({
        status: 'active',
        id,
        details: DETAILS,
        verifiedAt: '2026-03-02T00:00:00.000Z',
        observedAt: LATER,
        price: { price_local: 1_472_500, currency: 'GTQ', fx_rate: 7.75, price_usd: 190_000 },
      })
  })
})

describe('listing identity', () => {
  it('derives a safe stream name and id from any source id, distinct per source', () => {
    const odd = 'ID with spaces/ümlauts-and-dashes\n#1'
    expect(listingStream('broker', odd)).toMatch(/^listing-[0-9a-f]{24}$/)
    expect(listingId('broker', odd)).toMatch(/^lst_[0-9a-f]{24}$/)
    expect(listingStream('broker', 'a')).not.toBe(listingStream('scraped', 'a'))
    expect(listingStream('broker', 'a')).toBe(listingStream('broker', 'a'))
  })

  it('derives event ids from stream, revision and content: retries repeat them, other decisions do not', () => {
    const [event] = ingested()
    const stream = listingStream('broker', 'brk-1')
    const eventId = listingEventId(stream, 0, event!)
    expect(eventId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(listingEventId(stream, 0, event!)).toBe(eventId)
    expect(listingEventId(stream, 1, event!)).not.toBe(eventId)
    const [other] = ingested(aRecord({ price: 1 }))
    expect(listingEventId(stream, 0, other!)).not.toBe(eventId)
  })
})
