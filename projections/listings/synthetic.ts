/**
 * A synthetic market of N listings written straight into the live generation of the listings read
 * model (listings, history, zones, touches and changes tables) with one set-based SQL statement per
 * chunk, for the benchmarks at a million listings (bench/listings.ts, bench/http.ts, bench/sync.ts).
 * It writes this read model's tables, so it lives here; ingesting a million listings through the
 * event store is a separate concern (and would take far longer than the searches the benchmarks
 * measure). bench/listings-load.ts proves on a sample that the rows are exactly those the listings
 * projection writes for the equivalent feed.
 *
 * Listing n (1…N) is a pure function of n: every attribute is drawn from `hashint8extended(n, k)`,
 * so a run resumes where an interrupted one stopped and reloads give the same rows. Distribution:
 * the eight countries by market size, their zones (zone 1 busiest), both operations, all six
 * property types, 3-significant-digit local prices in local currency or USD, ~180 days of history
 * (0-2 price changes, verification, delisting). About 70 % end up active + verified + broker (what
 * /listings serves); the rest are scraped, unverified or delisted.
 *
 * Change rows (the change feed's, change-rows.ts) stand at synthetic log positions: listing n's
 * events take positions 8n + slot, slot 1 its verification, 2 and 3 its price changes, 4 its
 * delisting, so a listing's changes are in the order of their times and the log ends before
 * `syntheticLogEnd(N)` (the checkpoint a fold of that log would have reached). The log is written
 * listing by listing, not in time order across listings: the table is in position order either way.
 */
import type { Db } from '../../src/db/port.ts'
import { toNumber } from '../../src/db/port.ts'
import { BROKER_NAMES, KINDS, MARKETS } from '../../src/domain/demo/market.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import type { ListingDetails } from '../../src/domain/listings/listing.ts'
import type { Country, Currency, Operation, PropertyType, Source } from '../../src/domain/market/vocabulary.ts'
import { type ListingsTables, listingsProjection } from './projection.ts'
import { CHANGE_FIELDS } from '../../src/domain/listings/changes.ts'
import { DETAIL_NAMES, detailsOfRow } from './rows.ts'

/** The market's end of history: fixed, so that every run loads the same rows. */
export const MARKET_END = '2026-11-01T00:00:00Z'
const CHUNK = 50_000

const PORTALS = ['clasificados', 'encuentra24', 'vivienda-hoy']
const SCRAPED_SHARE = 0.18
const VERIFIED_SHARE = 0.93
const DELISTED_SHARE = 0.1

const text = (value: string) => `'${value.replaceAll("'", "''")}'`
const list = (values: readonly string[]) => `array[${values.map(text).join(', ')}]`
/** Cumulative [lo, hi) bands of weights; the last band ends above 1 so rounding leaves no gap. */
function bands<K extends string>(weights: Record<K, number>): Array<[K, number, number]> {
  let lo = 0
  const keys = Object.keys(weights) as K[]
  return keys.map((key, i) => {
    const hi = i === keys.length - 1 ? 2 : lo + weights[key]
    const band: [K, number, number] = [key, lo, hi]
    lo = hi
    return band
  })
}
/** A uniform draw in [0, 1) for listing n and stream k. */
const u = (k: number, n = 'n') => `((hashint8extended(${n}, ${k}) & 2147483647)::float8 / 2147483648)`
const minutes = (expression: string) => `(floor(${expression})::int * interval '1 minute')`
/** Rounded to three significant digits, as asking prices are (an integer from 100 up). */
const asking = (v: string) => `(greatest(1, round((${v}) / power(10, greatest(0, floor(log(${v})) - 2)))) * power(10, greatest(0, floor(log(${v})) - 2)))`

const MARKET_ROWS = bands(Object.fromEntries(Object.entries(MARKETS).map(([c, m]) => [c, m.weight])) as Record<Country, number>)
  .map(([c, lo, hi], i) => {
    const m = MARKETS[c]
    return `(${text(c)}, ${i + 1}, ${m.zones}, ${text(m.currency)}, ${DEFAULT_FX[m.currency]}::float8, ${m.usdShare}::float8, ${m.ppm2}::float8, ${text(m.city)}, ${text(m.language)}, ${lo}::float8, ${hi}::float8)`
  })
  .join(',\n      ')
const KIND_ROWS = bands(Object.fromEntries(Object.entries(KINDS).map(([k, spec]) => [k, spec.weight])) as Record<PropertyType, number>)
  .map(([k, lo, hi]) => {
    const s = KINDS[k]
    return `(${text(k)}, ${s.ppm2Factor}::float8, ${s.area[0]}::float8, ${s.area[1]}::float8, ${s.saleShare}::float8, ${lo}::float8, ${hi}::float8)`
  })
  .join(',\n      ')

/**
 * Every attribute and event time of listings $1 ≤ n < $2 (history ends at $3). Event times are whole
 * minutes; a price change happens only while the listing is active; the revision of each price
 * change is its place in the listing's stream (ingested 0, then verification and changes in time
 * order, a change before a verification at the same minute, as the decider orders them).
 */
const GENERATE = `
  draw as (
    select n, ${u(1)} as u_country, ${u(2)} as u_zone, ${u(3)} as u_kind, ${u(4)} as u_op, ${u(5)} as u_source,
           ${u(6)} as u_broker, ${u(7)} as u_bed, ${u(8)} as u_bath, ${u(9)} as u_half, ${u(10)} as u_area, ${u(11)} as u_cur,
           ${u(12)} as u_listed, ${u(13)} as u_seen, ${u(14)} as u_verify, ${u(15)} as u_vdelay, ${u(16)} as u_nprice,
           ${u(17)} as u_dir1, ${u(18)} as u_f1, ${u(19)} as u_t1, ${u(20)} as u_dir2, ${u(21)} as u_f2, ${u(22)} as u_t2,
           ${u(23)} as u_delist, ${u(24)} as u_tdel, ${u(25)} as u_norm1, ${u(26)} as u_norm2, ${u(27)} as u_rent, ${u(28)} as u_portal,
           $3::timestamptz as market_end
      from generate_series($1::bigint, $2::bigint - 1) as n
  ),
  placed as (
    select d.*, m.*, k.*, 1 + least(m.zones - 1, floor(m.zones * power(d.u_zone, 1.5))::int) as zone_no
      from draw d
      join (values
      ${MARKET_ROWS}
      ) as m(country, country_no, zones, local_currency, local_fx, usd_share, ppm2, city, lang, c_lo, c_hi)
        on d.u_country >= m.c_lo and d.u_country < m.c_hi
      join (values
      ${KIND_ROWS}
      ) as k(property_type, ppm2_factor, area_lo, area_hi, sale_share, k_lo, k_hi)
        on d.u_kind >= k.k_lo and d.u_kind < k.k_hi
  ),
  shaped as (
    select p.*,
           case when u_op < sale_share then 'Venta' else 'Renta' end as operation,
           case when u_source < ${SCRAPED_SHARE} then 'scraped' else 'broker' end as source,
           1 + floor(u_broker * ${BROKER_NAMES.length})::int as broker_no,
           case property_type
             when 'Apartamento' then case when u_bed < 0.06 then 0 when u_bed < 0.30 then 1 when u_bed < 0.68 then 2 when u_bed < 0.94 then 3 else 4 end
             when 'Casa' then case when u_bed < 0.02 then 1 when u_bed < 0.20 then 2 when u_bed < 0.60 then 3 when u_bed < 0.88 then 4 else 5 end
             else 0 end as bedrooms,
           round(area_lo * power(area_hi / area_lo, u_area)) as area_m2,
           case when u_cur < usd_share then 'USD' else local_currency end as currency,
           case when u_cur < usd_share then 1::float8 else local_fx end as fx_rate,
           0.55 + 1.3 * ${u(101, 'country_no * 1000 + zone_no')} as zone_level,
           market_end - ${minutes('(0.2 + 299.8 * u_listed) * 1440')} as listed_at
      from placed p
  ),
  timed as (
    select s.*,
           least(market_end, greatest(listed_at, market_end - interval '180 days') + ${minutes('u_seen * 721')}) as t_seen,
           case when source = 'broker' and u_verify < ${VERIFIED_SHARE}
                then listed_at + ${minutes('(0.2 + 13.8 * u_vdelay) * 1440')} end as v_at,
           case when u_nprice < 0.6 then 0 when u_nprice < 0.88 then 1 else 2 end as n_price,
           case when property_type = 'Terreno' then 0
                when property_type in ('Apartamento', 'Casa') then greatest(1, bedrooms - floor(u_bath * 2)) + case when u_half < 0.3 then 0.5 else 0 end
                else 1 + floor(u_bath * 2) end::float8 as bathrooms,
           ppm2 * zone_level * ppm2_factor * area_m2 * exp(0.16 * sqrt(-2 * ln(1 - u_norm1)) * cos(2 * pi() * u_norm2))
             * case when operation = 'Venta' then 1 else 0.0045 + 0.003 * u_rent end as usd0
      from shaped s
  ),
  evented as (
    select t.*,
           case when v_at <= market_end then v_at end as verified_at,
           case when u_delist < ${DELISTED_SHARE} and t_seen + ${minutes('(5 + 195 * u_tdel) * 1440')} <= market_end
                then t_seen + ${minutes('(5 + 195 * u_tdel) * 1440')} end as t_del,
           t_seen + ${minutes('(3 + 57 * u_t1) * 1440')} as t1,
           t_seen + ${minutes('(3 + 57 * u_t1) * 1440')} + ${minutes('(3 + 57 * u_t2) * 1440')} as t2,
           ${asking('usd0 * fx_rate')} as p0
      from timed t
  ),
  priced as (
    select e.*,
           case when verified_at is not null then greatest(verified_at, t_seen) end as t_ver,
           case when n_price >= 1 and t1 <= market_end and (t_del is null or t1 < t_del) then t1 end as t_p1,
           case when n_price >= 2 and t2 <= market_end and (t_del is null or t2 < t_del) then t2 end as t_p2,
           ${asking('p0 * case when u_dir1 < 0.7 then 0.88 + 0.10 * u_f1 else 1.02 + 0.06 * u_f1 end')} as p1
      from evented e
  ),
  gen as materialized (
    select p.n, p.source, p.country, p.zone_no, p.operation, p.property_type, p.area_m2, p.bedrooms, p.bathrooms,
           p.currency, p.fx_rate, p.listed_at, p.verified_at, p.t_seen, p.t_ver, p.t_p1, p.t_p2, p.t_del,
           p.p0, p.p1, p2.p2,
           case when p.source = 'broker' then lower(p.country) || '-brk-0' || p.broker_no end as broker_id,
           case when p.source = 'broker' then (${list(BROKER_NAMES)})[p.broker_no] end as broker_name,
           case when p.source = 'broker' then lower(p.country) || '-brk-0' || p.broker_no || '-' || lpad(p.n::text, 7, '0')
                else (${list(PORTALS)})[1 + floor(p.u_portal * ${PORTALS.length})::int] || ':' || lower(p.country) || '/' || (p.n * 7919) end as source_id,
           p.property_type || ' ' ||
             case p.lang when 'pt' then case when p.operation = 'Venta' then 'à venda' else 'para alugar' end
                         when 'en' then case when p.operation = 'Venta' then 'for sale' else 'for rent' end
                         else case when p.operation = 'Venta' then 'en venta' else 'en renta' end end
             || ', Zona ' || p.zone_no || ', ' || p.city ||
             case when p.bedrooms = 0 then ''
                  when p.lang = 'pt' then ' · ' || p.bedrooms || ' quartos'
                  when p.lang = 'en' then ' · ' || p.bedrooms || ' bed'
                  else ' · ' || p.bedrooms || ' hab.' end as title,
           case when p.t_p2 is not null then 2 + case when p.t_ver < p.t_p2 then 1 else 0 end end as rev_p2,
           case when p.t_p1 is not null then 1 + case when p.t_ver < p.t_p1 then 1 else 0 end end as rev_p1,
           greatest(p.t_seen, p.t_ver, p.t_p1, p.t_p2, p.t_del) as observed_at
      from priced p
      cross join lateral (select ${asking('p.p1 * case when p.u_dir2 < 0.7 then 0.88 + 0.10 * p.u_f2 else 1.02 + 0.06 * p.u_f2 end')} as p2) p2
  ),
  listing as (
    select g.*, 'lst_' || left(encode(sha256(convert_to(g.source || E'\\n' || g.source_id, 'UTF8')), 'hex'), 24) as listing_id,
           case when g.source = 'broker' then 'https://' || g.broker_id || '.example/propiedades/' || g.source_id
                else 'https://' || split_part(g.source_id, ':', 1) || '.example/anuncio/' || (g.n * 7919) end as url
      from gen g
  )`

/** A listing's last asking price, in its currency: that of its latest price change, else the first. */
const LAST_PRICE = 'case when t_p2 is not null then p2 when t_p1 is not null then p1 else p0 end'
/** A listing's status in its last feed line. */
const LAST_STATUS = "case when t_del is null then 'active' else 'delisted' end"

const usd = (local: string) => `round((${local})::numeric / fx_rate::numeric, 2)`

/** Log positions a listing's events take (see the top): 8n + slot, slot 0 unused. */
const SLOTS = 8
/** The position after the last event of listings 1…count: the checkpoint of a fold of their log. */
export const syntheticLogEnd = (count: number) => (count + 1) * SLOTS
/** A listing's asking price at `at`, in its currency: a price change at the instant of a verification is recorded before it. */
const priceAt = (at: string) => `case when t_p2 <= ${at} then p2 when t_p1 <= ${at} then p1 else p0 end`
/** The fields a synthetic price change changes (the local price, and with it the USD one), named as changeOf names them. */
const REPRICED = CHANGE_FIELDS.filter((f) => f.columns.some((c) => c.name === 'price_local' || c.name === 'price_usd'))
  .map((f) => f.name)
  .join(',')

/** Inserts listings $1 ≤ n < $2 into the tables (their changes too); one statement, so a chunk is all or nothing. */
const loadChunk = (t: ListingsTables) => `
  with ${GENERATE},
  listings as (
    insert into ${t.listings} (listing_id, observed_at, source, source_id, ${DETAIL_NAMES}, price_local, currency, fx_rate, price_usd,
      verified_at, status)
    select listing_id, observed_at, source, source_id, ${DETAIL_NAMES},
           ${LAST_PRICE}, currency, fx_rate,
           ${usd(LAST_PRICE)},
           verified_at, ${LAST_STATUS}
      from listing
  ),
  history as (
    insert into ${t.history} (listing_id, since_revision, country, zone_no, operation, source, property_type, bedrooms, bathrooms, area_m2,
      listed_at, price_usd, ppm2_usd, valid_from, valid_to, public_from)
    select listing_id, i.revision, country, zone_no, operation, source, property_type, bedrooms, bathrooms, area_m2, listed_at,
           i.price_usd, i.price_usd::numeric(46, 30) / area_m2::numeric, i.valid_from, i.valid_to,
           -- Public from the verification (only broker listings are verified) if it came before the interval's end: a
           -- verification at the instant an interval ends is recorded after the change that ends it, as the decider orders them.
           case when t_ver < coalesce(i.valid_to, 'infinity') then greatest(t_ver, i.valid_from) end
      from listing
      cross join lateral (values
        (0, ${usd('p0')}, t_seen, coalesce(t_p1, t_del)),
        (rev_p1, ${usd('p1')}, t_p1, coalesce(t_p2, t_del)),
        (rev_p2, ${usd('p2')}, t_p2, t_del)
      ) as i(revision, price_usd, valid_from, valid_to)
     where i.valid_from is not null
  ),
  touches as (
    insert into ${t.touches} (country, zone_no, at)
    select distinct country, zone_no, e.at from listing cross join lateral unnest(array[t_seen, t_ver, t_p1, t_p2, t_del]) as e(at)
     where e.at is not null
    on conflict do nothing
  ),
  -- The changes to the public inventory (changeOf): listed by its verification if that came before any delisting (a delisting
  -- recorded with it comes first), a price change while public (one at the instant of the verification comes before it), removed
  -- when delisted after being listed. Each row holds the listing as it was after the change.
  changes as (
    insert into ${t.changes} (position, kind, fields, old_price_usd, listing_id, observed_at, source, source_id, ${DETAIL_NAMES},
      price_local, currency, fx_rate, price_usd, verified_at, status)
    select n * ${SLOTS} + c.slot, c.kind, c.fields, c.old_price_usd, listing_id, c.at, source, source_id, ${DETAIL_NAMES},
           c.price, currency, fx_rate, ${usd('c.price')}, verified_at, c.status
      from listing
      cross join lateral (values
        (1, 'listed', null, null::numeric, t_ver, ${priceAt('t_ver')}, 'active'),
        (2, 'price_changed', '${REPRICED}', ${usd('p0')}, t_p1, p1, 'active'),
        (3, 'price_changed', '${REPRICED}', ${usd('p1')}, t_p2, p2, 'active'),
        (4, 'removed', null, null, t_del, ${LAST_PRICE}, 'delisted')
      ) as c(slot, kind, fields, old_price_usd, at, price, status)
     where t_ver < coalesce(t_del, 'infinity') and c.at is not null and (c.slot = 1 or c.at > t_ver)
  )
  select count(*) as listings from listing`

/** The latest event of any listing in a zone is the time the projection gives the zone. */
const loadZones = (t: ListingsTables) => `
  insert into ${t.zones} (country, zone_no, updated_at)
  select country, zone_no, max(observed_at) from ${t.listings} group by country, zone_no
  on conflict (country, zone_no) do update set updated_at = excluded.updated_at`

export type LoadSummary = {
  listings: number
  public: number
  history: number
  zones: number
  changes: number
  loadedNow: number
  seconds: number
  vacuumed: boolean
}

/**
 * Makes the generation's tables `t` (created by the projection's own DDL) hold exactly listings
 * 1…count: loads the missing chunks (resuming an interrupted load), sets the zones, then VACUUM ANALYZE
 * (fresh rows have no visibility map: index-only scans would visit the heap) unless nothing changed.
 */
export async function loadSyntheticListings(db: Db, t: ListingsTables, count: number, progress: (line: string) => void): Promise<LoadSummary> {
  const started = Date.now()
  const [{ n: present }] = (await db.query<{ n: unknown }>(`select count(*) as n from ${t.listings}`)) as [{ n: unknown }]
  const have = toNumber(present)
  if (have > count || (have % CHUNK !== 0 && have !== count)) {
    throw new Error(`the schema holds ${have} listings, not a resumable prefix of ${count}: drop the schema and run again`)
  }
  let loadedNow = 0
  // Secondary indexes are dropped while loading and built once afterwards by the projection's own
  // DDL (one sort per index instead of a million insertions into each).
  if (have < count) {
    const indexes = await db.query<{ name: string }>(
      `select indexname as name from pg_indexes
        where schemaname = current_schema() and tablename in ('${t.listings}', '${t.history}', '${t.changes}') and indexname not like '%_pkey'`,
    )
    for (const { name } of indexes) await db.query(`drop index ${name}`)
  }
  for (let lo = have + 1; lo <= count; lo += CHUNK) {
    const hi = Math.min(count + 1, lo + CHUNK)
    const chunkStarted = Date.now()
    await db.transaction(async (tx) => {
      // JIT compiling this long expression list costs ~20 s per chunk and saves nothing.
      await tx.query('set local jit = off')
      await tx.query(loadChunk(t), [lo, hi, MARKET_END])
    })
    loadedNow += hi - lo
    const rate = (hi - lo) / ((Date.now() - chunkStarted) / 1000)
    progress(`loaded ${hi - 1}/${count} listings (${rate.toFixed(0)}/s)`)
  }
  if (loadedNow > 0) {
    progress('indexing …')
    for (const ddl of listingsProjection.indexes(t)) await db.query(ddl)
  }
  await db.query(loadZones(t))
  const [stats] = await db.query<{ vacuumed: unknown }>(
    `select last_vacuum is not null and last_analyze is not null as vacuumed from pg_stat_user_tables
      where relid = $1::regclass`,
    [t.listings],
  )
  const vacuum = loadedNow > 0 || stats?.vacuumed !== true
  if (vacuum) {
    progress('VACUUM ANALYZE …')
    for (const table of [t.listings, t.history, t.zones, t.changes]) await db.exec(`vacuum analyze ${table}`)
  }
  const [totals] = await db.query<{ listings: unknown; public: unknown; history: unknown; zones: unknown; changes: unknown }>(
    `select (select count(*) from ${t.listings}) as listings, (select count(*) from ${t.listings} where public) as public,
            (select count(*) from ${t.history}) as history, (select count(*) from ${t.zones}) as zones,
            (select count(*) from ${t.changes}) as changes`,
  )
  return {
    listings: toNumber(totals!.listings),
    public: toNumber(totals!.public),
    history: toNumber(totals!.history),
    zones: toNumber(totals!.zones),
    changes: toNumber(totals!.changes),
    loadedNow,
    seconds: (Date.now() - started) / 1000,
    vacuumed: vacuum,
  }
}

/** A generated listing's attributes and event times: what its feed lines would tell. */
export type SyntheticListing = {
  source: Source
  source_id: string
  /** Its details as the listings table holds them, read back (zone name, broker, listing time). */
  details: Required<ListingDetails>
  currency: Currency
  verified_at: unknown
  t_seen: unknown
  t_ver: unknown
  t_p1: unknown
  t_p2: unknown
  t_del: unknown
  p0: number
  p1: number
  p2: number
}

/** The generated listings from $from ≤ n < $to, in order: to tell their story as feed lines. */
export async function syntheticListings(db: Db, from: number, to: number): Promise<SyntheticListing[]> {
  const rows = await db.query<Omit<SyntheticListing, 'details'> & Record<string, unknown>>(`with ${GENERATE} select * from listing order by n`, [
    from,
    to,
    MARKET_END,
  ])
  return rows.map((row) => ({ ...row, details: detailsOfRow(row) }))
}

/**
 * A generated listing's final state (what its last feed line tells, as the listings table holds it):
 * the figures an estimate reads, and what decides whether it is public.
 */
export type SyntheticFinalState = {
  listing_id: string
  source: Source
  country: Country
  zone_no: number
  operation: Operation
  property_type: PropertyType
  area_m2: number
  bedrooms: number
  bathrooms: number
  /** The last asking price, in the listing's currency, of which `fx_rate` make one US dollar. */
  price_local: number
  fx_rate: number
  verified: boolean
  status: 'active' | 'delisted'
}

/** The final states of the generated listings $from ≤ n < $to, in order, computed in `db` (nothing is written): bench/estimate.ts. */
export async function syntheticFinalStates(db: Db, from: number, to: number): Promise<SyntheticFinalState[]> {
  return db.query<SyntheticFinalState>(
    `with ${GENERATE}
     select listing_id, source, country, zone_no, operation, property_type, area_m2, bedrooms, bathrooms,
            ${LAST_PRICE} as price_local, fx_rate,
            verified_at is not null as verified, ${LAST_STATUS} as status
       from listing order by n`,
    [from, to, MARKET_END],
  )
}
