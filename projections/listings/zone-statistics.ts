import type { ListingsTables } from './projection.ts'
import type { LiveGeneration } from '../engine/live-tables.ts'
import type { Row, Sql } from '../../src/db/port.ts'
import { toIso, toNumber } from '../../src/db/port.ts'
import { BEDROOM_GROUPS, type Country, OPERATIONS, PROPERTY_TYPES } from '../../src/domain/market/vocabulary.ts'
import { isKnowableZoneNumber, zoneName, zoneNumberOfSlug, zoneSlug } from '../../src/domain/market/zone-name.ts'
import type { ZoneDetail, ZoneSummary } from '../../src/domain/market/zone-figures.ts'
import { changePct, medianDaysOnMarket, medianDaysOnMarketChangesAt, publishedMedian, sourceMix } from '../../src/domain/market/statistics.ts'

/**
 * Zone statistics of a country, from a generation of the listings read model, in two queries: one
 * over its active listings grouped per zone (and per zone and property type, bedrooms, operation),
 * one over the history intervals open 30 days ago. Medians are exact: percentile_disc gives the two
 * middle values (the same one when the count is odd) of exact values (price per m² is kept
 * unrounded, see projections/listings.ts) and their mean is taken in decimal, then rounded to cents,
 * once. The result depends only on the events applied; what depends on the request time (days on
 * market) is derived from the median listing time when an answer is served (`zonesAt`, `zoneDetailAt`).
 *
 * "30 days ago" is 30 × 24 h before the latest listing event anywhere (the market's clock), and the
 * state then is rebuilt from the listing history intervals.
 *
 * The API serves these facts from memory (ready.ts); this module is how they are computed, and
 * what `projections diff` compares generations with.
 */

const MIDDLE = 'array[0.5, 0.5000000001]::float8[]'
const middles = (expression: string, filter = 'true') =>
  `percentile_disc(${MIDDLE}) within group (order by ${expression}) filter (where ${filter})`
const mean = (middles: string) => `round((${middles}[1] + ${middles}[2]) / 2, 2)::text`
const SALE = `operation = 'Venta'`
const LISTED_MS = 'extract(epoch from listed_at) * 1000'
const thirtyDaysAgo = (t: ListingsTables) => `(select max(updated_at) - interval '720 hours' from ${t.zones})`

/** The generation to read: the live one unless one is given. */
export type ListingsGeneration = LiveGeneration<keyof ListingsTables>

/** Text from SQL numerics → number, keeping SQL nulls. */
const num = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value))

/** A zone's statistics as of the events applied: everything but what depends on the request time. */
export type ZoneFacts = Omit<ZoneDetail, 'median_dom'> & { medianListedMs: number | null }
/** Every zone ever seen in a country, by zone number. */
export type CountryZoneFacts = ReadonlyMap<number, ZoneFacts>

export type GroupRow = Row & {
  zone_no: number
  grouped: number
  property_type: string | null
  bedroom_group: string | null
  operation: string | null
  n_active: unknown
  n_sale: unknown
  n_broker: unknown
  n_scraped: unknown
  sale_ppm2: string | null
  sale_price: string | null
  own_ppm2: string | null
  own_price: string | null
  listed_ms: string | null
}

export type ThenRow = Row & { zone_no: number; n_active: unknown; n_sale: unknown; ppm2: string | null }

type SaleFigures = { n_active: number; n_sale: number; median_ppm2_usd: number | null; median_price_usd: number | null }
type OwnFigures = Omit<SaleFigures, 'n_sale'>

/** GROUPING() bit masks of the grouping sets below (a set bit = column not grouped; the zone always is). */
const ALL = 7
const BY_TYPE = 3
const BY_BEDROOMS = 5
const BY_OPERATION = 6

/** Type and bedroom groups, and the zone as a whole, use sale listings for medians (rents are monthly). */
function saleFigures(row: GroupRow | undefined): SaleFigures {
  const nSale = toNumber(row?.n_sale ?? 0)
  return {
    n_active: toNumber(row?.n_active ?? 0),
    n_sale: nSale,
    median_ppm2_usd: publishedMedian(num(row?.sale_ppm2 ?? null), nSale),
    median_price_usd: publishedMedian(num(row?.sale_price ?? null), nSale),
  }
}

/** An operation's medians are over its own listings, all `n_active` of them. */
function ownFigures(row: GroupRow | undefined): OwnFigures {
  const n = toNumber(row?.n_active ?? 0)
  return {
    n_active: n,
    median_ppm2_usd: publishedMedian(num(row?.own_ppm2 ?? null), n),
    median_price_usd: publishedMedian(num(row?.own_price ?? null), n),
  }
}

/** A country's zones: every zone ever seen, with the time of its latest listing event. */
export type ZoneRow = { zone_no: number; updated_at: unknown }
/** The grouped figures of the active listings of each zone (see `activeFigures`). */
export type ActiveFigures = ReadonlyMap<number, readonly GroupRow[]>
/** Per zone, the listings active 30 days before the market's clock. */
export type PastFigures = ReadonlyMap<number, ThenRow>

/** The market's clock: the time of the latest listing event anywhere (`thirtyDaysAgo` counts from it). */
export async function marketClock(db: Sql, t: ListingsTables): Promise<string | null> {
  const [row] = await db.query<{ clock: unknown }>(`select max(updated_at) as clock from ${t.zones}`)
  return row?.clock == null ? null : toIso(row.clock)
}

/** The zones of `country`, by zone number. */
export const zonesOf = (db: Sql, t: ListingsTables, country: Country): Promise<ZoneRow[]> =>
  db.query<ZoneRow>(`select zone_no, updated_at from ${t.zones} where country = $1 order by zone_no`, [country])

/**
 * Which figures a computation serves: `detail` every row of /zone/{slug}; `summary` the zone rows of
 * /zones (no breakdowns); `history` the zone rows and the operation rows (for the rent medians), no
 * 30-day comparison. Rows not computed read as empty: a caller reads only the figures it asked for.
 */
export type Figures = 'detail' | 'summary' | 'history'
/** Per kind of figures: the grouping sets, and the GROUPING() mask and grouped columns each row reports (see ALL, BY_TYPE, …). */
const GROUPINGS: Record<Figures, { sets: string; grouped: string; columns: string }> = {
  detail: {
    sets: '(zone_no), (zone_no, property_type), (zone_no, bedroom_group), (zone_no, operation)',
    grouped: 'grouping(property_type, bedroom_group, operation)',
    columns: 'property_type, bedroom_group, operation',
  },
  summary: { sets: '(zone_no)', grouped: '7', columns: 'null::text as property_type, null::text as bedroom_group, null::text as operation' },
  history: {
    sets: '(zone_no), (zone_no, operation)',
    grouped: '6 + grouping(operation)',
    columns: 'null::text as property_type, null::text as bedroom_group, operation',
  },
}

/**
 * The figures of the active listings of `country` per zone and per breakdown row, for the zones
 * given (every zone when none are); a zone without active listings has no rows. Active now, or at
 * the instant `at` when given (the history intervals open then: every event observed at or before it).
 */
export async function activeFigures(
  db: Sql,
  t: ListingsTables,
  country: Country,
  zones?: readonly number[],
  at?: Date,
  figures: Figures = 'detail',
): Promise<ActiveFigures> {
  const params: unknown[] = [country]
  const param = (value: unknown) => `$${params.push(value)}`
  const zoneFilter = zones ? `and zone_no in (select jsonb_array_elements_text(${param(JSON.stringify(zones))}::text::jsonb)::integer)` : ''
  const listings = at
    ? `${t.history} where country = $1 and valid_from <= ${param(at.toISOString())}::timestamptz and (valid_to is null or valid_to > $${params.length}::timestamptz)`
    : `${t.listings} where country = $1 and status = 'active'`
  const rows = await db.query<GroupRow>(
    `select zone_no, grouped, property_type, bedroom_group, operation, n_active, n_sale, n_broker, n_scraped,
            ${mean('sale_ppm2')} as sale_ppm2, ${mean('sale_price')} as sale_price,
            ${mean('own_ppm2')} as own_ppm2, ${mean('own_price')} as own_price,
            ((listed[1] + listed[2]) / 2)::text as listed_ms
       from (
         select zone_no, ${GROUPINGS[figures].grouped} as grouped, ${GROUPINGS[figures].columns},
                count(*) as n_active, count(*) filter (where ${SALE}) as n_sale,
                count(*) filter (where source = 'broker') as n_broker, count(*) filter (where source = 'scraped') as n_scraped,
                ${middles('ppm2_usd', SALE)} as sale_ppm2, ${middles('price_usd', SALE)} as sale_price,
                ${middles('ppm2_usd')} as own_ppm2, ${middles('price_usd')} as own_price,
                ${middles(LISTED_MS)} as listed
           from (select *, case when bedrooms >= 4 then '4+' else bedrooms::text end as bedroom_group
                   from ${listings} ${zoneFilter}) active
          group by grouping sets (${GROUPINGS[figures].sets})
       ) g`,
    params,
  )
  const byZone = new Map<number, GroupRow[]>()
  for (const row of rows) {
    const zoneNo = toNumber(row.zone_no)
    byZone.set(zoneNo, [...(byZone.get(zoneNo) ?? []), row])
  }
  return byZone
}

/**
 * Per country (only `country` when given) and zone, the listings active 30 days before the market's
 * clock (or at the instant `then` when given): one pass over the history.
 */
export async function pastFigures(db: Sql, t: ListingsTables, country?: Country, then?: Date): Promise<Map<Country, PastFigures>> {
  const params: unknown[] = []
  const cut = then ? `$${params.push(then.toISOString())}::timestamptz` : thirtyDaysAgo(t)
  const countryFilter = country ? `country = $${params.push(country)} and` : ''
  const rows = await db.query<ThenRow & { country: Country }>(
    `select country, zone_no, count(*) as n_active, count(*) filter (where ${SALE}) as n_sale,
            ${mean(`(${middles('ppm2_usd', SALE)})`)} as ppm2
       from ${t.history}
      where ${countryFilter} valid_from <= ${cut} and (valid_to is null or valid_to > ${cut})
      group by country, zone_no`,
    params,
  )
  const byCountry = new Map<Country, Map<number, ThenRow>>()
  for (const row of rows) {
    const zones = byCountry.get(row.country) ?? new Map<number, ThenRow>()
    zones.set(toNumber(row.zone_no), row)
    byCountry.set(row.country, zones)
  }
  return byCountry
}

/** The time of the first listing event recorded (null on a store without any): no market is known before it. */
export async function firstListingEvent(db: Sql, t: ListingsTables): Promise<string | null> {
  const [row] = await db.query<{ first: unknown }>(`select min(at) as first from ${t.touches}`)
  return row?.first == null ? null : toIso(row.first)
}

/**
 * The statistics of the zones of `country` as the market stood at the instant `at` (every event
 * observed at or before it): the zones seen by then (only `zoneNo` when given), each with the time
 * of its latest event by then; "30 days ago" counts from the market's clock at `at`. Only `figures`
 * are computed (see Figures).
 */
export async function countryZoneFactsAt(
  db: Sql,
  t: ListingsTables,
  country: Country,
  at: Date,
  zoneNo?: number,
  figures: Figures = 'detail',
): Promise<CountryZoneFacts> {
  const [clock] = await db.query<{ clock: unknown }>(`select max(at) as clock from ${t.touches} where at <= $1::timestamptz`, [at.toISOString()])
  if (clock?.clock == null) return new Map()
  const then = new Date(Date.parse(toIso(clock.clock)) - 720 * 3_600_000)
  const zones = await db.query<ZoneRow>(
    `select zone_no, max(at) as updated_at from ${t.touches}
      where country = $1 and at <= $2::timestamptz ${zoneNo === undefined ? '' : 'and zone_no = $3'}
      group by zone_no order by zone_no`,
    zoneNo === undefined ? [country, at.toISOString()] : [country, at.toISOString(), zoneNo],
  )
  const zoneNumbers = zoneNo === undefined ? undefined : [zoneNo]
  const active = await activeFigures(db, t, country, zoneNumbers, at, figures)
  const past = figures === 'history' ? new Map() : ((await pastFigures(db, t, country, then)).get(country) ?? new Map())
  return zoneFactsOf(country, zones, active, past)
}

/** The statistics of every zone of `country` in the tables `t`. */
export async function countryZoneFacts(db: Sql, t: ListingsTables, country: Country): Promise<CountryZoneFacts> {
  const past = (await pastFigures(db, t, country)).get(country) ?? new Map()
  return zoneFactsOf(country, await zonesOf(db, t, country), await activeFigures(db, t, country), past)
}

/** The published figures of every zone of `country` from what its listings say now and 30 days ago. Pure. */
export function zoneFactsOf(country: Country, zones: readonly ZoneRow[], active: ActiveFigures, past: PastFigures): CountryZoneFacts {
  const facts = new Map<number, ZoneFacts>()
  for (const zone of zones) {
    const zoneNo = toNumber(zone.zone_no)
    const own = active.get(zoneNo) ?? []
    const find = (grouped: number, column: 'property_type' | 'bedroom_group' | 'operation' | null, value: string | null) =>
      own.find((g) => toNumber(g.grouped) === grouped && (column === null || g[column] === value))
    const all = find(ALL, null, null)
    const overall = saleFigures(all)
    const then = past.get(zoneNo)
    const ppm2Then = publishedMedian(num(then?.ppm2 ?? null), toNumber(then?.n_sale ?? 0))
    facts.set(zoneNo, {
      zone: zoneName(zoneNo),
      slug: zoneSlug(zoneNo),
      country,
      n_active: overall.n_active,
      n_sale: overall.n_sale,
      median_ppm2_usd: overall.median_ppm2_usd,
      median_price_usd: overall.median_price_usd,
      by_property_type: PROPERTY_TYPES.map((type) => ({ property_type: type, ...saleFigures(find(BY_TYPE, 'property_type', type)) })),
      by_bedrooms: BEDROOM_GROUPS.map((b) => ({ bedrooms: b, ...saleFigures(find(BY_BEDROOMS, 'bedroom_group', b)) })),
      by_operation: OPERATIONS.map((o) => ({ operation: o, ...ownFigures(find(BY_OPERATION, 'operation', o)) })),
      change_30d: {
        median_ppm2_usd_now: overall.median_ppm2_usd,
        median_ppm2_usd_then: ppm2Then,
        pct: changePct(overall.median_ppm2_usd, ppm2Then),
        n_active_now: overall.n_active,
        n_active_then: toNumber(then?.n_active ?? 0),
        n_sale_now: overall.n_sale,
        n_sale_then: toNumber(then?.n_sale ?? 0),
      },
      source_mix: sourceMix({ broker: toNumber(all?.n_broker ?? 0), scraped: toNumber(all?.n_scraped ?? 0) }),
      updated_at: toIso(zone.updated_at),
      medianListedMs: all ? num(all.listed_ms) : null,
    })
  }
  return facts
}

/** The first instant after `nowMs` at which a figure of `zones` that depends on the request time (days on market) may change. Pure. */
export function zoneFactsChangeAt(zones: Iterable<ZoneFacts>, nowMs: number): number {
  let at = Number.POSITIVE_INFINITY
  for (const zone of zones) at = Math.min(at, medianDaysOnMarketChangesAt(nowMs, zone.medianListedMs, zone.n_active))
  return at
}

/** The `zones` array of GET /zones at `now`: every zone seen in the country, by zone number. Pure. */
export function zonesAt(facts: CountryZoneFacts, now: Date): ZoneSummary[] {
  const nowMs = now.getTime()
  return [...facts.values()].map((zone) => ({
    zone: zone.zone,
    slug: zone.slug,
    median_ppm2_usd: zone.median_ppm2_usd,
    n_active: zone.n_active,
    n_sale: zone.n_sale,
    median_dom: medianDaysOnMarket(nowMs, zone.medianListedMs, zone.n_active),
    median_price_usd: zone.median_price_usd,
    change_30d_pct: zone.change_30d.pct,
    updated_at: zone.updated_at,
  }))
}

/** The record of GET /zone/{slug} at `now`, or null when the country has no such zone. Pure. */
export function zoneDetailAt(facts: CountryZoneFacts, slug: string, now: Date): ZoneDetail | null {
  const zoneNo = zoneNumberOfSlug(slug)
  if (zoneNo === null || !isKnowableZoneNumber(zoneNo)) return null
  const zone = facts.get(zoneNo)
  if (!zone) return null
  return {
    zone: zone.zone,
    slug: zone.slug,
    country: zone.country,
    n_active: zone.n_active,
    n_sale: zone.n_sale,
    median_ppm2_usd: zone.median_ppm2_usd,
    median_price_usd: zone.median_price_usd,
    median_dom: medianDaysOnMarket(now.getTime(), zone.medianListedMs, zone.n_active),
    by_property_type: zone.by_property_type,
    by_bedrooms: zone.by_bedrooms,
    by_operation: zone.by_operation,
    change_30d: zone.change_30d,
    source_mix: zone.source_mix,
    updated_at: zone.updated_at,
  }
}
