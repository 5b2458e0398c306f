import type { RecordedEvent } from '../src/eventstore/port.ts'
import { isListingEvent, LISTING_CATEGORY, type ListingDetails, type ListingEvent } from '../src/listings/listing.ts'
import { zoneNumberOfName } from '../src/market/zone-name.ts'
import { type Projection, type RowChange, sql } from './projection.ts'

/**
 * The market read model, from listing events only (event times, never the clock):
 * - LISTINGS: every listing's current state; `public` marks what /listings may show
 *   (active, verified, broker) and partial indexes serve that search at any size;
 * - HISTORY: one row per interval during which a listing was active with a given zone, operation
 *   and price, so zone statistics can be reconstructed as of any past time;
 * - ZONES: every zone ever seen per country, with the time of its latest listing event.
 * Zone statistics are computed from these tables at query time (src/zones/queries.ts).
 */
export const LISTINGS_TABLE = 'listings_v1'
export const HISTORY_TABLE = 'listing_history_v1'
export const ZONES_TABLE = 'listing_zones_v1'
export const LISTINGS_PROJECTION = { name: 'listings', version: 1 } as const
/** The name under which the runner keeps this projection's checkpoint. */
export const LISTINGS_CHECKPOINT = `${LISTINGS_PROJECTION.name}_v${LISTINGS_PROJECTION.version}`

/** An index over the listings /listings may show (active, verified, broker), the only ones it searches. */
const publicIndex = (name: string, columns: string) =>
  `create index if not exists ${LISTINGS_TABLE}_${name} on ${LISTINGS_TABLE} (${columns}) where public`

const SCHEMA = [
  `create table if not exists ${LISTINGS_TABLE} (
    listing_id text primary key,
    source text not null,
    source_id text not null,
    country text not null,
    zone_no integer not null,
    operation text not null,
    property_type text not null,
    title text not null,
    area_m2 double precision not null,
    bedrooms integer not null,
    bathrooms double precision not null,
    broker_id text,
    broker_name text,
    url text,
    listed_at timestamptz not null,
    price_local double precision not null,
    currency text not null,
    fx_rate double precision not null,
    price_usd numeric(16, 2) not null,
    ppm2_usd numeric(16, 2) generated always as (round(price_usd / area_m2::numeric, 2)) stored,
    verified_at timestamptz,
    status text not null,
    public boolean generated always as (status = 'active' and source = 'broker' and verified_at is not null) stored,
    observed_at timestamptz not null
  )`,
  `create index if not exists ${LISTINGS_TABLE}_active on ${LISTINGS_TABLE} (country, zone_no) where status = 'active'`,
  // /listings: every filter combination starts with the country; each sort has an index ending in
  // the unique id (the tie-breaker), so a page is an index range scan whatever the table size.
  publicIndex('newest', 'country, listed_at desc, listing_id desc'),
  publicIndex('price', 'country, price_usd, listing_id'),
  publicIndex('zone_newest', 'country, zone_no, listed_at desc, listing_id desc'),
  publicIndex('zone_price', 'country, zone_no, price_usd, listing_id'),
  publicIndex('zone_kind_price', 'country, zone_no, operation, property_type, price_usd, listing_id'),
  `create table if not exists ${HISTORY_TABLE} (
    listing_id text not null,
    since_revision integer not null,
    country text not null,
    zone_no integer not null,
    operation text not null,
    price_usd numeric(16, 2) not null,
    ppm2_usd numeric(16, 2) not null,
    valid_from timestamptz not null,
    valid_to timestamptz,
    primary key (listing_id, since_revision)
  )`,
  `create index if not exists ${HISTORY_TABLE}_zone on ${HISTORY_TABLE} (country, zone_no, valid_from)`,
  `create table if not exists ${ZONES_TABLE} (
    country text not null,
    zone_no integer not null,
    updated_at timestamptz not null,
    primary key (country, zone_no)
  )`,
]

/** Fields of a listing that zone statistics depend on: changing one closes its history interval. */
const STATISTICAL: readonly (keyof ListingDetails)[] = ['country', 'zone', 'operation', 'area_m2']

const zoneNo = (zone: string): number => {
  const n = zoneNumberOfName(zone)
  if (n === null) throw new Error(`listing event with malformed zone ${JSON.stringify(zone)}`)
  return n
}

// Statement fragments. `$1` is always the listing id and `$2` the event time.
const TOUCH_ZONES = (from: string) => `
  insert into ${ZONES_TABLE} (country, zone_no, updated_at)
  select country, zone_no, $2::timestamptz from ${from}
  on conflict (country, zone_no) do update set updated_at = greatest(${ZONES_TABLE}.updated_at, excluded.updated_at)`
const CLOSE_INTERVAL = `closed as (update ${HISTORY_TABLE} set valid_to = $2::timestamptz where listing_id = $1 and valid_to is null)`
/** `revision` is the placeholder of the revision of the event opening the interval. */
const openInterval = (revision: string) => `opened as (
  insert into ${HISTORY_TABLE} (listing_id, since_revision, country, zone_no, operation, price_usd, ppm2_usd, valid_from)
  select listing_id, ${revision}::integer, country, zone_no, operation, price_usd, ppm2_usd, $2::timestamptz
    from listing where status = 'active')`
const RETURNING = 'returning listing_id, status, country, zone_no, operation, price_usd, ppm2_usd'

function rowChanges(event: ListingEvent, revision: number): RowChange[] {
  const at = event.data.observed_at
  switch (event.type) {
    case 'ListingIngested': {
      const d = event.data
      return [
        sql(
          `with listing as (
             insert into ${LISTINGS_TABLE} (listing_id, observed_at, source, source_id, country, zone_no, operation,
               property_type, title, area_m2, bedrooms, bathrooms, broker_id, broker_name, url, listed_at, price_local,
               currency, fx_rate, price_usd, status)
             values ($1, $2, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, 'active')
             ${RETURNING}
           ), ${openInterval('$3')}
           ${TOUCH_ZONES('listing')}`,
          d.listing_id,
          at,
          revision,
          d.source,
          d.source_id,
          d.country,
          zoneNo(d.zone),
          d.operation,
          d.property_type,
          d.title,
          d.area_m2,
          d.bedrooms,
          d.bathrooms,
          d.broker?.id ?? null,
          d.broker?.name ?? null,
          d.url,
          d.listed_at,
          d.price_local,
          d.currency,
          d.fx_rate,
          d.price_usd,
        ),
      ]
    }
    case 'ListingDetailsChanged': {
      const d = event.data
      // The revision is a parameter only when an interval is opened: PostgreSQL rejects unused ones.
      const reopen = d.changed.some((field) => (STATISTICAL as readonly string[]).includes(field))
      return [
        sql(
          `with previous as (select country, zone_no from ${LISTINGS_TABLE} where listing_id = $1),
           listing as (
             update ${LISTINGS_TABLE} set observed_at = $2, country = $3, zone_no = $4, operation = $5, property_type = $6,
               title = $7, area_m2 = $8, bedrooms = $9, bathrooms = $10, broker_id = $11, broker_name = $12, url = $13,
               listed_at = $14
             where listing_id = $1 ${RETURNING}
           ),
           ${reopen ? `${CLOSE_INTERVAL}, ${openInterval('$15')},` : ''}
           zones as (select country, zone_no from previous union select country, zone_no from listing)
           ${TOUCH_ZONES('zones')}`,
          d.listing_id,
          at,
          d.country,
          zoneNo(d.zone),
          d.operation,
          d.property_type,
          d.title,
          d.area_m2,
          d.bedrooms,
          d.bathrooms,
          d.broker?.id ?? null,
          d.broker?.name ?? null,
          d.url,
          d.listed_at,
          ...(reopen ? [revision] : []),
        ),
      ]
    }
    case 'ListingPriceChanged': {
      const d = event.data
      return [
        sql(
          `with listing as (
             update ${LISTINGS_TABLE} set observed_at = $2, price_local = $4, currency = $5, fx_rate = $6, price_usd = $7
             where listing_id = $1 ${RETURNING}
           ), ${CLOSE_INTERVAL}, ${openInterval('$3')}
           ${TOUCH_ZONES('listing')}`,
          d.listing_id,
          at,
          revision,
          d.price_local,
          d.currency,
          d.fx_rate,
          d.price_usd,
        ),
      ]
    }
    case 'ListingVerified':
      return [
        sql(
          `with listing as (update ${LISTINGS_TABLE} set observed_at = $2, verified_at = $3 where listing_id = $1 ${RETURNING})
           ${TOUCH_ZONES('listing')}`,
          event.data.listing_id,
          at,
          event.data.verified_at,
        ),
      ]
    case 'ListingDelisted':
      return [
        sql(
          `with listing as (update ${LISTINGS_TABLE} set observed_at = $2, status = 'delisted' where listing_id = $1 ${RETURNING}),
           ${CLOSE_INTERVAL}
           ${TOUCH_ZONES('listing')}`,
          event.data.listing_id,
          at,
        ),
      ]
    case 'ListingRelisted':
      return [
        sql(
          `with listing as (update ${LISTINGS_TABLE} set observed_at = $2, status = 'active' where listing_id = $1 ${RETURNING}),
           ${openInterval('$3')}
           ${TOUCH_ZONES('listing')}`,
          event.data.listing_id,
          at,
          revision,
        ),
      ]
    default: {
      const never: never = event
      throw new Error(`unhandled ${JSON.stringify(never)}`)
    }
  }
}

export const listingsProjection: Projection = {
  ...LISTINGS_PROJECTION,
  categories: [LISTING_CATEGORY],
  tables: [LISTINGS_TABLE, HISTORY_TABLE, ZONES_TABLE],
  schema: SCHEMA,
  apply(event: RecordedEvent): RowChange[] {
    const domain = { type: event.type, data: event.data }
    return isListingEvent(domain) ? rowChanges(domain, event.revision) : []
  },
}
