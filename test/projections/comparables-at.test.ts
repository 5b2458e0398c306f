import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generationTables } from '../../projections/engine/generations.ts'
import { liveTables } from '../../projections/engine/live-tables.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import { listingsProjection, type ListingsTables } from '../../projections/listings/projection.ts'
import { ZoneHistory } from '../../projections/listings/zone-history.ts'
import { comparablesAt } from '../../projections/listings/comparable-rows.ts'
import type { FeedRecord } from '../../src/domain/listings/feed.ts'
import { listingId } from '../../src/domain/listings/listing.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { comparablesFromFeed, instantsAround, type Segment, segmentsOf } from '../support/comparables-oracle.ts'
import { databaseTargets } from '../support/databases.ts'
import { aRecord } from '../support/market.ts'
import { storeFor } from '../support/store.ts'

/**
 * The listings an estimate as of an instant compares with (docs/statistics.md, "Estimates"): those
 * public then (active, verified, broker) in a country's zone, of an operation and a property type,
 * with their area, bedrooms, bathrooms and USD cents as they stood. Served from the history in memory
 * (ZoneHistory → HistoryIndex.comparablesAt) and by SQL (zone-rows.ts `comparablesAt`), both equal
 * to a brute force from the raw feed lines (test/support/comparables-oracle.ts).
 */

const T0 = Date.parse('2026-02-01T00:00:00.000Z')
const MINUTE = 60_000
const iso = (ms: number) => new Date(ms).toISOString()
/** Verification times lines give (a listing verified again at another time is a new ListingVerified). */
const VERIFIED = [iso(T0 - 86_400_000), iso(T0 + 3 * 86_400_000)]

/** A change a later line of a listing makes; several may come in one line. */
const change: fc.Arbitrary<Partial<FeedRecord>> = fc.oneof(
  fc.record({ price: fc.integer({ min: 5_000_00, max: 900_000_00 }).map((cents) => cents / 100) }),
  fc.record({ area_m2: fc.oneof(fc.integer({ min: 2_000, max: 40_000 }).map((n) => n / 100), fc.constantFrom(100.000000000001, 72.3)) }),
  // Halves fit a byte of the history in memory; 1.25 and 2.3 are kept aside, exactly.
  fc.record({ bathrooms: fc.constantFrom(0, 1, 1.5, 2, 3.5, 100, 1.25, 2.3) }),
  fc.record({ bedrooms: fc.integer({ min: 0, max: 6 }) }),
  fc.record({ verified_at: fc.constantFrom(...VERIFIED) }),
  // A line without a verification time withdraws nothing.
  fc.constant({ verified_at: null }),
  fc.constant({ status: 'delisted' as const }),
  fc.constant({ status: 'active' as const }),
  fc.record({ zone: fc.constantFrom('Zona 1', 'Zona 2') }),
  fc.record({ operation: fc.constantFrom('Venta' as const, 'Renta' as const) }),
  fc.record({ property_type: fc.constantFrom('Apartamento' as const, 'Casa' as const) }),
  fc.record({ title: fc.constantFrom('Renovado', 'Con vista') }),
)

/** A line's changes and how long after the line before it (often the same instant). */
const step = fc.record({
  after: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 3 * 1440 })),
  changes: fc.array(change, { minLength: 1, maxLength: 3 }),
})

/** A listing: its first line's changes, its later lines, and how many lines are recorded before the rest (so that both ways of writing run). */
const listing = fc.record({
  scraped: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
  country: fc.constantFrom('GT' as const, 'CR' as const),
  localCurrency: fc.boolean(),
  start: fc.integer({ min: 0, max: 10 * 1440 }),
  first: fc.array(change, { maxLength: 3 }),
  steps: fc.array(step, { maxLength: 5 }),
  cut: fc.integer({ min: 1, max: 6 }),
})
type GeneratedListing = typeof listing extends fc.Arbitrary<infer T> ? T : never

let listingsFed = 0
/** A generated listing's feed lines (each the whole record as of its time, in time order) and how many are recorded first. */
function linesOf(l: GeneratedListing): { lines: FeedRecord[]; cut: number } {
  const source = l.scraped ? 'scraped' : 'broker'
  let at = T0 + l.start * MINUTE
  let line: FeedRecord = Object.assign(
    aRecord({
      source,
      source_id: `generated-${++listingsFed}`,
      country: l.country,
      zone: 'Zona 1',
      currency: l.localCurrency ? (l.country === 'GT' ? 'GTQ' : 'CRC') : 'USD',
      broker: source === 'broker' ? aRecord().broker : null,
      observed_at: iso(at),
    }),
    ...l.first,
  )
  const lines = [line]
  for (const { after, changes } of l.steps) {
    at += after * MINUTE
    line = Object.assign({}, line, ...changes, { observed_at: iso(at) })
    lines.push(line)
  }
  return { lines, cut: Math.min(l.cut, lines.length) }
}

const RUNS = 20

for (const target of databaseTargets('comparables as of an instant')) {
  describe(`the listings an estimate compares with as of an instant, on ${target.name}`, () => {
    const env = storeFor(target.open, { projections: [listingsProjection] })
    /** Every line recorded, in order. */
    const fed: FeedRecord[] = []
    let history: ZoneHistory
    let t: ListingsTables
    beforeAll(async () => {
      await env.runner.catchUp()
      t = (await liveTables(env.db).of(listingsProjection)).tables as ListingsTables
      history = ZoneHistory.follow(env.db, env.runner, (error) => {
        throw error
      })
    })
    afterAll(() => history?.stop())

    /** Records `lines` and waits until the history in memory has followed them. */
    const feed = async (lines: FeedRecord[]) => {
      await ingestRecords(env.store, lines, DEFAULT_FX)
      fed.push(...lines)
      await env.runner.catchUp()
      await history.settled()
    }
    const fromMemory = (from: ZoneHistory, s: Segment, at: Date) => from.comparablesAt(s.country, s.zoneNo, s.operation, s.propertyType, at)
    const fromSql = (s: Segment, at: Date) => comparablesAt(env.db, t, s.country, s.zoneNo, s.operation, s.propertyType, at)

    it('shows a broker listing from the instant its verification is observed to its delisting; never a scraped or unverified one', async () => {
      const day = (n: number) => iso(T0 + (60 + n) * 86_400_000)
      const story = { source_id: 'story', zone: 'Zona 9', currency: 'USD' as const, price: 150_000, area_m2: 80.5, bedrooms: 3, bathrooms: 2 }
      await feed([
        aRecord({ ...story, observed_at: day(0) }),
        // A scraped listing with a verification time, and a broker listing never verified.
        aRecord({ ...story, source: 'scraped', broker: null, verified_at: day(0), observed_at: day(0) }),
        aRecord({ ...story, source_id: 'never-verified', observed_at: day(0) }),
        aRecord({ ...story, verified_at: day(0), observed_at: day(1) }),
        aRecord({ ...story, verified_at: null, bathrooms: 2.5, observed_at: day(2) }),
        aRecord({ ...story, status: 'delisted', observed_at: day(3) }),
        aRecord({ ...story, bathrooms: 2.5, observed_at: day(4) }),
        aRecord({ ...story, bathrooms: 2.5, zone: 'Zona 8', observed_at: day(5) }),
      ])
      const zone = (zoneNo: number): Segment => ({ country: 'GT', zoneNo, operation: 'Venta', propertyType: 'Apartamento' })
      const shown = (bathrooms: number) => [{ id: listingId('broker', 'story'), areaM2: 80.5, bedrooms: 3, bathrooms, cents: 15_000_000 }]
      const expected: [Segment, string, unknown[]][] = [
        [zone(9), day(0), []],
        [zone(9), iso(Date.parse(day(1)) - 1), []],
        // Exactly at the instant the verification was observed, and on.
        [zone(9), day(1), shown(2)],
        // A later line without a verification time leaves it verified; its bathrooms change.
        [zone(9), day(2), shown(2.5)],
        [zone(9), day(3), []],
        [zone(9), day(4), shown(2.5)],
        [zone(9), day(5), []],
        [zone(8), day(5), shown(2.5)],
      ]
      for (const [segment, at, listings] of expected) {
        expect(await fromMemory(history, segment, new Date(at)), `${segment.zoneNo} at ${at}`).toEqual(listings)
        expect(await fromSql(segment, new Date(at)), `${segment.zoneNo} at ${at}`).toEqual(listings)
        expect(comparablesFromFeed(fed, segment, new Date(at)), `${segment.zoneNo} at ${at}`).toEqual(listings)
      }
    })

    it('equals a brute force from the feed lines at every instant a line was observed and the millisecond before, in memory and in SQL', async () => {
      let shown = 0
      await fc.assert(
        fc.asyncProperty(fc.array(listing, { minLength: 1, maxLength: 6 }), async (generated) => {
          const listings = generated.map(linesOf)
          await feed(listings.flatMap((l) => l.lines.slice(0, l.cut)))
          await feed(listings.flatMap((l) => l.lines.slice(l.cut)))
          const lines = listings.flatMap((l) => l.lines)
          for (const segment of segmentsOf(lines)) {
            for (const at of instantsAround(lines)) {
              const expected = comparablesFromFeed(fed, segment, at)
              const where = `${JSON.stringify(segment)} at ${at.toISOString()}`
              expect(await fromMemory(history, segment, at), where).toEqual(expected)
              // SQL at the lines' own instants (a query each: the millisecond before adds little to them).
              if (at.getTime() % MINUTE === 0) expect(await fromSql(segment, at), where).toEqual(expected)
              shown += expected.length
            }
          }
        }),
        { numRuns: RUNS },
      )
      expect(shown, 'comparables shown across the runs').toBeGreaterThan(RUNS)
    })

    it('loaded whole from the tables, the history in memory answers the same', async () => {
      const loaded = ZoneHistory.follow(env.db, env.runner, (error) => {
        throw error
      })
      try {
        for (const segment of segmentsOf(fed)) {
          for (const at of instantsAround(fed)) expect(await fromMemory(loaded, segment, at)).toEqual(comparablesFromFeed(fed, segment, at))
        }
      } finally {
        loaded.stop()
      }
    })

    it('foldListing and the statements of one event at a time write the same history for these feeds', async () => {
      const oneByOne = new ProjectionRunner(env.db, env.store, [{ ...listingsProjection, applyBatch: undefined }])
      try {
        const [built] = await oneByOne.rebuild(['listings'], { hold: true })
        const [version, build] = built!.generation.slice(1).split('.').map(Number)
        const held = generationTables(listingsProjection, { version: version!, build: build! })
        const rows = (table: string) => env.db.query(`select * from ${table} order by listing_id, since_revision`)
        const written = await rows(t.history)
        expect(written.length).toBeGreaterThan(RUNS)
        expect(await rows(held.history)).toEqual(written)
      } finally {
        await oneByOne.stop()
      }
    })
  })
}
