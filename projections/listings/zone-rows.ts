import type { ListingsTables } from './projection.ts'
import { ACTIVE_FIGURES } from './rows.ts'
import type { LiveGeneration } from '../engine/live-tables.ts'
import type { Row, Sql } from '../../src/db/port.ts'
import { toIso, toNumber } from '../../src/db/port.ts'
import type { ComparableListing } from '../../src/domain/market/comparable.ts'
import { ListingColumns, type StatisticsListing } from '../../src/domain/market/listing-columns.ts'
import type { Country } from '../../src/domain/market/vocabulary.ts'
import type { CountryZoneFacts, Figures, ZoneNow, ZoneSeen, ZoneThen } from '../../src/domain/market/zone-statistics.ts'
import { changeWindowStart, zoneFactsOf, zoneNow, zoneThen } from '../../src/domain/market/zone-statistics.ts'

/**
 * The rows the zone statistics are computed from, selected from a generation of the listings read
 * model: the zones seen, the market's clock, the active listings (now, or the history intervals
 * open at an instant), and the public ones an estimate compares with at an instant. SQL only
 * selects rows and counts nothing; every figure is computed by src/domain/market/zone-statistics.ts. The API serves them prepared in memory (ready-zones.ts) or,
 * as of a past instant, from the history in memory (history-index.ts); this module answers the same
 * from SQL: before that history is loaded, for `audit answer`, `projections diff` and the tests.
 */

/** The generation to read: the live one unless one is given. */
export type ListingsGeneration = LiveGeneration<keyof ListingsTables>

/** A timestamptz column as whole microseconds since the epoch. */
export const micros = (column: string) => `(extract(epoch from ${column}) * 1000000)::int8`

/** The listings selected, in columns, with the slots of each zone of each country. */
export type SelectedListings = { columns: ListingColumns; zones: ReadonlyMap<string, ReadonlyMap<number, Int32Array>> }

/**
 * What is read of each listing: everything (`now`), or what the side "then" of the 30-day change
 * counts (`then`: the operation and the price per m²; half the text to build and decode at a million
 * listings, and every preparation reads it again). Per reading: the columns rows are grouped by (fewer
 * rows to decode), then a listing's fields after its group's, as text.
 */
const READINGS = {
  now: {
    group: ACTIVE_FIGURES.group,
    fields: `concat_ws(',', ${micros('listed_at')}, (price_usd * 100)::int8, ppm2_usd)`,
  },
  then: { group: 'country, zone_no, operation', fields: 'ppm2_usd::text' },
} as const
type Reading = keyof typeof READINGS
type GroupRow = Row & {
  country: string
  zone_no: number
  operation: string
  source?: string
  property_type?: string
  bedrooms?: number
  listings: string
}

/** A group's listing whose fields are overwritten per listing (a million listings, no million objects). */
function listingOf(group: GroupRow): StatisticsListing {
  // Read `then`, a listing's source, type and bedrooms are not selected: zoneThen does not read them.
  const { operation, source = 'broker', property_type: propertyType = '', bedrooms = 0 } = group
  return { operation, source, propertyType, bedrooms: toNumber(bedrooms), listedMicros: 0, cents: 0, ppm2: '' }
}

/**
 * The listings of `from` (a table and its condition) in columns: rows grouped by what they share,
 * ordered by country and zone so that each zone's slots follow each other.
 */
async function selectListings(sql: Sql, reading: Reading, from: string, params: readonly unknown[]): Promise<SelectedListings> {
  const { group: by, fields } = READINGS[reading]
  const groups = await sql.query<GroupRow>(
    `select ${by}, string_agg(${fields}, ',') as listings from ${from} group by ${by} order by country, zone_no`,
    [...params],
  )
  const columns = new ListingColumns()
  const zones = new Map<string, Map<number, Int32Array>>()
  let slot = 0
  let zoneStart = 0
  groups.forEach((group, i) => {
    const values = group.listings.split(',')
    columns.grow(slot + values.length / (reading === 'then' ? 1 : 3))
    const listing = listingOf(group)
    if (reading === 'then') {
      for (const ppm2 of values) {
        listing.ppm2 = ppm2
        columns.set(slot++, listing)
      }
    } else {
      for (let f = 0; f + 2 < values.length; f += 3) {
        listing.listedMicros = Number(values[f])
        listing.cents = Number(values[f + 1])
        listing.ppm2 = values[f + 2]!
        columns.set(slot++, listing)
      }
    }
    const next = groups[i + 1]
    if (next && next.country === group.country && toNumber(next.zone_no) === toNumber(group.zone_no)) return
    const country = zones.get(group.country) ?? new Map<number, Int32Array>()
    zones.set(group.country, country)
    country.set(toNumber(group.zone_no), Int32Array.from({ length: slot - zoneStart }, (_, k) => zoneStart + k))
    zoneStart = slot
  })
  return { columns, zones }
}

/** The active listings of `country` now (only of `zones` when given). */
export function activeListings(sql: Sql, t: ListingsTables, country: Country, zones?: readonly number[]): Promise<SelectedListings> {
  const zoneFilter = zones ? 'and zone_no = any($2::int[])' : ''
  return selectListings(sql, 'now', `${t.listings} where country = $1 and status = 'active' ${zoneFilter}`, zones ? [country, zones] : [country])
}

/**
 * The listings active at the instant `at` (every event observed at or before it): the history
 * intervals open then; of `country` and zone `zoneNo` when given; read for `reading`.
 */
export function listingsActiveAt(sql: Sql, t: ListingsTables, at: Date, reading: Reading, country?: Country, zoneNo?: number): Promise<SelectedListings> {
  const params: unknown[] = [at.toISOString()]
  const countryFilter = country === undefined ? '' : `and country = $${params.push(country)}`
  const zoneFilter = zoneNo === undefined ? '' : `and zone_no = $${params.push(zoneNo)}`
  return selectListings(
    sql,
    reading,
    `${t.history} where valid_from <= $1::timestamptz and (valid_to is null or valid_to > $1::timestamptz) ${countryFilter} ${zoneFilter}`,
    params,
  )
}

/** Per zone of `country`, what its selected listings say now (`zoneNow`). */
export function zonesNow(selected: SelectedListings, country: Country, figures: Figures = 'detail'): Map<number, ZoneNow> {
  const now = new Map<number, ZoneNow>()
  for (const [zoneNo, slots] of selected.zones.get(country) ?? []) now.set(zoneNo, zoneNow(selected.columns, slots, figures))
  return now
}

/** Per country and zone, the 30-day comparison's side "then" (`zoneThen`) of the listings selected (read `then`). */
export function zonesThen(selected: SelectedListings): Map<string, Map<number, ZoneThen>> {
  const then = new Map<string, Map<number, ZoneThen>>()
  for (const [country, zones] of selected.zones) {
    then.set(country, new Map([...zones].map(([zoneNo, slots]) => [zoneNo, zoneThen(selected.columns, slots)])))
  }
  return then
}

/** The market's clock: the time of the latest listing event anywhere (the 30-day change counts back from it). */
export async function marketClock(sql: Sql, t: ListingsTables): Promise<string | null> {
  const [row] = await sql.query<{ clock: unknown }>(`select max(updated_at) as clock from ${t.zones}`)
  return row?.clock == null ? null : toIso(row.clock)
}

/** The instant "then" of the 30-day change for the market's clock `clock`. */
export const thenOf = (clock: string): Date => new Date(changeWindowStart(Date.parse(clock)))

/** The zones of `country` ever seen, by zone number, with the time of the latest listing event of each. */
export async function zonesOf(sql: Sql, t: ListingsTables, country: Country): Promise<ZoneSeen[]> {
  const rows = await sql.query<{ zone_no: number; updated_at: unknown }>(
    `select zone_no, updated_at from ${t.zones} where country = $1 order by zone_no`,
    [country],
  )
  return rows.map((row) => ({ zoneNo: toNumber(row.zone_no), updatedAt: toIso(row.updated_at) }))
}

/** The time of the first listing event recorded (null on a store without any): no market is known before it. */
export async function firstListingEvent(sql: Sql, t: ListingsTables): Promise<string | null> {
  const [row] = await sql.query<{ first: unknown }>(`select min(at) as first from ${t.touches}`)
  return row?.first == null ? null : toIso(row.first)
}

/**
 * The statistics of the zones of `country` as the market stood at the instant `at` (every event
 * observed at or before it): the zones seen by then (only `zoneNo` when given), each with the time
 * of its latest event by then; "30 days ago" counts from the market's clock at `at`. Only `figures`
 * are computed (see Figures).
 */
export async function countryZoneFactsAt(
  sql: Sql,
  t: ListingsTables,
  country: Country,
  at: Date,
  zoneNo?: number,
  figures: Figures = 'detail',
): Promise<CountryZoneFacts> {
  const [clock] = await sql.query<{ clock: unknown }>(`select max(at) as clock from ${t.touches} where at <= $1::timestamptz`, [at.toISOString()])
  if (clock?.clock == null) return new Map()
  const rows = await sql.query<{ zone_no: number; updated_at: unknown }>(
    `select zone_no, max(at) as updated_at from ${t.touches}
      where country = $1 and at <= $2::timestamptz ${zoneNo === undefined ? '' : 'and zone_no = $3'}
      group by zone_no order by zone_no`,
    zoneNo === undefined ? [country, at.toISOString()] : [country, at.toISOString(), zoneNo],
  )
  const seen = rows.map((row) => ({ zoneNo: toNumber(row.zone_no), updatedAt: toIso(row.updated_at) }))
  const now = zonesNow(await listingsActiveAt(sql, t, at, 'now', country, zoneNo), country, figures)
  const then = figures === 'history' ? new Map() : zonesThen(await listingsActiveAt(sql, t, thenOf(toIso(clock.clock)), 'then', country, zoneNo)).get(country)
  return zoneFactsOf(country, seen, now, then ?? new Map())
}

/** The statistics of every zone of `country` in the tables `t`, now. */
export async function countryZoneFacts(sql: Sql, t: ListingsTables, country: Country): Promise<CountryZoneFacts> {
  const clock = await marketClock(sql, t)
  const then = clock === null ? undefined : zonesThen(await listingsActiveAt(sql, t, thenOf(clock), 'then', country)).get(country)
  return zoneFactsOf(country, await zonesOf(sql, t, country), zonesNow(await activeListings(sql, t, country), country), then ?? new Map())
}
