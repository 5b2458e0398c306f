import { type ListingsTables, listingsProjection } from '../../projections/listings.ts'
import { type LiveGeneration, liveTables } from '../../projections/live.ts'
import { type Db, type Row, toIso, toNumber } from '../db/port.ts'
import { BEDROOM_GROUPS, type Country, OPERATIONS, PROPERTY_TYPES } from '../market/vocabulary.ts'
import { isKnowableZoneNumber, zoneName, zoneNumberOfSlug, zoneSlug } from '../market/zone-name.ts'
import type { ZoneDetail, ZoneSummary } from './schemas.ts'
import { changePct, medianDaysOnMarket, publishedMedian, sourceMix } from './statistics.ts'

/**
 * Zone statistics, from the live generation of the listings read model (or a given one, for
 * `projections diff`). Medians are exact: percentile_disc gives the two middle values (the same one
 * when the count is odd) of exact values (price per m² is kept unrounded, see projections/listings.ts)
 * and their mean is taken in decimal, then rounded to cents, once. Results depend only on the events
 * applied, so they are memoised per generation and checkpoint (the API never rescans a country while
 * nothing changed); days on market are derived from the median listing time at each request, so
 * they never go stale.
 *
 * "30 days ago" is 30 × 24 h before the latest listing event anywhere (the market's clock), and the
 * state then is rebuilt from the listing history intervals.
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
const generationOf = (db: Db, given?: ListingsGeneration) => (given ? Promise.resolve(given) : liveTables(db).of(listingsProjection))

/** Text from SQL numerics → number, keeping SQL nulls. */
const num = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value))

// ---- memo per generation and checkpoint ---------------------------------------------------------

type Memo = { key: string; value: Promise<unknown> }
const memos = new WeakMap<Db, Map<string, Memo>>()

async function memoised<T>(db: Db, generation: ListingsGeneration, name: string, compute: () => Promise<T>): Promise<T> {
  // The checkpoint's update time changes on every batch, even one that ends at the same position.
  const key = await liveTables(db).checkpointKey(generation)
  let perDb = memos.get(db)
  if (!perDb) memos.set(db, (perDb = new Map()))
  const slot = `${generation.id}:${name}`
  const hit = perDb.get(slot)
  if (hit?.key === key) return hit.value as Promise<T>
  // Entries of a generation that is no longer read go with the first miss after a switch.
  if (!hit) for (const [other] of perDb) if (!other.startsWith(`${generation.id}:`)) perDb.delete(other)
  const value = compute()
  perDb.set(slot, { key, value })
  value.catch(() => {
    if (perDb.get(slot)?.value === value) perDb.delete(slot)
  })
  return value
}

// ---- zones of a country ----------------------------------------------------------------------

type ZoneRow = Row & {
  zone_no: number
  updated_at: unknown
  n_active: unknown
  n_sale: unknown
  ppm2: string | null
  price: string | null
  listed_ms: string | null
  n_then: unknown
  n_sale_then: unknown
  ppm2_then: string | null
}

type ZoneFacts = Omit<ZoneSummary, 'median_dom'> & { medianListedMs: number | null }

async function zoneFacts(db: Db, t: ListingsTables, country: Country): Promise<ZoneFacts[]> {
  const rows = await db.query<ZoneRow>(
    `with now_stats as (
       select zone_no, count(*) as n_active, count(*) filter (where ${SALE}) as n_sale,
              ${middles('ppm2_usd', SALE)} as ppm2, ${middles('price_usd', SALE)} as price, ${middles(LISTED_MS)} as listed
         from ${t.listings} where country = $1 and status = 'active' group by zone_no
     ), then_stats as (
       select zone_no, count(*) as n_active, count(*) filter (where ${SALE}) as n_sale, ${middles('ppm2_usd', SALE)} as ppm2
         from ${t.history}
        where country = $1 and valid_from <= ${thirtyDaysAgo(t)} and (valid_to is null or valid_to > ${thirtyDaysAgo(t)})
        group by zone_no
     )
     select z.zone_no, z.updated_at,
            coalesce(n.n_active, 0) as n_active, coalesce(n.n_sale, 0) as n_sale,
            ${mean('n.ppm2')} as ppm2, ${mean('n.price')} as price, ((n.listed[1] + n.listed[2]) / 2)::text as listed_ms,
            coalesce(t.n_active, 0) as n_then, coalesce(t.n_sale, 0) as n_sale_then, ${mean('t.ppm2')} as ppm2_then
       from ${t.zones} z
       left join now_stats n on n.zone_no = z.zone_no
       left join then_stats t on t.zone_no = z.zone_no
      where z.country = $1
      order by z.zone_no`,
    [country],
  )
  return rows.map((r) => {
    const nActive = toNumber(r.n_active)
    const ppm2 = publishedMedian(num(r.ppm2), toNumber(r.n_sale))
    return {
      zone: zoneName(r.zone_no),
      slug: zoneSlug(r.zone_no),
      median_ppm2_usd: ppm2,
      n_active: nActive,
      n_sale: toNumber(r.n_sale),
      median_price_usd: publishedMedian(num(r.price), toNumber(r.n_sale)),
      change_30d_pct: changePct(ppm2, publishedMedian(num(r.ppm2_then), toNumber(r.n_sale_then))),
      updated_at: toIso(r.updated_at),
      medianListedMs: num(r.listed_ms),
    }
  })
}

/** The `zones` array of GET /zones: every zone seen in the country, by zone number. */
export async function listZones(db: Db, country: Country, now: Date, given?: ListingsGeneration): Promise<ZoneSummary[]> {
  const generation = await generationOf(db, given)
  const facts = await memoised(db, generation, `zones:${country}`, () => zoneFacts(db, generation.tables, country))
  return facts.map(({ medianListedMs, ...zone }) => ({
    zone: zone.zone,
    slug: zone.slug,
    median_ppm2_usd: zone.median_ppm2_usd,
    n_active: zone.n_active,
    n_sale: zone.n_sale,
    median_dom: medianDaysOnMarket(now.getTime(), medianListedMs, zone.n_active),
    median_price_usd: zone.median_price_usd,
    change_30d_pct: zone.change_30d_pct,
    updated_at: zone.updated_at,
  }))
}

// ---- one zone --------------------------------------------------------------------------------

type GroupRow = Row & {
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

type DetailFacts = Omit<ZoneDetail, 'median_dom'> & { medianListedMs: number | null }
type SaleFigures = { n_active: number; n_sale: number; median_ppm2_usd: number | null; median_price_usd: number | null }
type OwnFigures = Omit<SaleFigures, 'n_sale'>

/** GROUPING() bit masks of the grouping sets below (a set bit = column not grouped). */
const ALL = 7
const BY_TYPE = 3
const BY_BEDROOMS = 5
const BY_OPERATION = 6

async function detailFacts(db: Db, t: ListingsTables, country: Country, zoneNo: number): Promise<DetailFacts | null> {
  const [zone] = await db.query<{ updated_at: unknown }>(
    `select updated_at from ${t.zones} where country = $1 and zone_no = $2`,
    [country, zoneNo],
  )
  if (!zone) return null
  const groups = await db.query<GroupRow>(
    `select grouped, property_type, bedroom_group, operation, n_active, n_sale, n_broker, n_scraped,
            ${mean('sale_ppm2')} as sale_ppm2, ${mean('sale_price')} as sale_price,
            ${mean('own_ppm2')} as own_ppm2, ${mean('own_price')} as own_price,
            ((listed[1] + listed[2]) / 2)::text as listed_ms
       from (
         select grouping(property_type, bedroom_group, operation) as grouped, property_type, bedroom_group, operation,
                count(*) as n_active, count(*) filter (where ${SALE}) as n_sale,
                count(*) filter (where source = 'broker') as n_broker, count(*) filter (where source = 'scraped') as n_scraped,
                ${middles('ppm2_usd', SALE)} as sale_ppm2, ${middles('price_usd', SALE)} as sale_price,
                ${middles('ppm2_usd')} as own_ppm2, ${middles('price_usd')} as own_price,
                ${middles(LISTED_MS)} as listed
           from (select *, case when bedrooms >= 4 then '4+' else bedrooms::text end as bedroom_group
                   from ${t.listings} where country = $1 and zone_no = $2 and status = 'active') active
          group by grouping sets ((), (property_type), (bedroom_group), (operation))
       ) g`,
    [country, zoneNo],
  )
  const [then] = await db.query<{ n_active: unknown; n_sale: unknown; ppm2: string | null }>(
    `select count(*) as n_active, count(*) filter (where ${SALE}) as n_sale, ${mean(`(${middles('ppm2_usd', SALE)})`)} as ppm2
       from ${t.history}
      where country = $1 and zone_no = $2 and valid_from <= ${thirtyDaysAgo(t)} and (valid_to is null or valid_to > ${thirtyDaysAgo(t)})`,
    [country, zoneNo],
  )

  const find = (grouped: number, column: 'property_type' | 'bedroom_group' | 'operation' | null, value: string | null) =>
    groups.find((g) => g.grouped === grouped && (column === null || g[column] === value))
  /** Type and bedroom groups, and the zone as a whole, use sale listings for medians (rents are monthly). */
  const saleFigures = (row: GroupRow | undefined): SaleFigures => {
    const nSale = toNumber(row?.n_sale ?? 0)
    return {
      n_active: toNumber(row?.n_active ?? 0),
      n_sale: nSale,
      median_ppm2_usd: publishedMedian(num(row?.sale_ppm2 ?? null), nSale),
      median_price_usd: publishedMedian(num(row?.sale_price ?? null), nSale),
    }
  }
  /** An operation's medians are over its own listings, all `n_active` of them. */
  const ownFigures = (row: GroupRow | undefined): OwnFigures => {
    const n = toNumber(row?.n_active ?? 0)
    return {
      n_active: n,
      median_ppm2_usd: publishedMedian(num(row?.own_ppm2 ?? null), n),
      median_price_usd: publishedMedian(num(row?.own_price ?? null), n),
    }
  }
  const all = find(ALL, null, null)
  const overall = saleFigures(all)
  const ppm2Then = publishedMedian(num(then?.ppm2 ?? null), toNumber(then?.n_sale ?? 0))
  return {
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
  }
}

/** The zone detail record of GET /zone/{slug}, or null when the country has no such zone. */
export async function getZoneDetail(
  db: Db,
  country: Country,
  slug: string,
  now: Date,
  given?: ListingsGeneration,
): Promise<ZoneDetail | null> {
  const zoneNo = zoneNumberOfSlug(slug)
  if (zoneNo === null || !isKnowableZoneNumber(zoneNo)) return null
  const generation = await generationOf(db, given)
  const t = generation.tables
  // Only known zones are memoised, so that probing unknown slugs cannot grow the memo.
  const known = await memoised(db, generation, `known:${country}`, async () => {
    const rows = await db.query<{ zone_no: number }>(`select zone_no from ${t.zones} where country = $1`, [country])
    return new Set(rows.map((r) => toNumber(r.zone_no)))
  })
  if (!known.has(zoneNo)) return null
  const facts = await memoised(db, generation, `zone:${country}:${zoneNo}`, () => detailFacts(db, t, country, zoneNo))
  if (!facts) return null
  const { medianListedMs, ...detail } = facts
  return {
    zone: detail.zone,
    slug: detail.slug,
    country: detail.country,
    n_active: detail.n_active,
    n_sale: detail.n_sale,
    median_ppm2_usd: detail.median_ppm2_usd,
    median_price_usd: detail.median_price_usd,
    median_dom: medianDaysOnMarket(now.getTime(), medianListedMs, detail.n_active),
    by_property_type: detail.by_property_type,
    by_bedrooms: detail.by_bedrooms,
    by_operation: detail.by_operation,
    change_30d: detail.change_30d,
    source_mix: detail.source_mix,
    updated_at: detail.updated_at,
  }
}
