import type { RecordedEvent } from '../../src/eventstore/port.ts'
import { isListingEvent, LISTING_CATEGORY, type ListingEvent, type ListingEventType } from '../../src/domain/listings/listing.ts'
import { type Projection, type RowChange, sql } from '../engine/projection.ts'
import { changesIndexes, changesTable, recordChange, rowBefore } from './change-rows.ts'
import { foldedStatements, foldListing, type RecordedListingEvent } from './fold.ts'
import {
  ACTIVE_FIGURES,
  DETAIL_COLUMNS,
  DETAIL_NAMES,
  DETAIL_UPDATE,
  detailsRow,
  input,
  listingsTable,
  type ListingsTables,
  PRICE_COLUMNS,
  PRICE_NAMES,
  PRICE_UPDATE,
  priceRow,
  STATISTICAL,
} from './rows.ts'

/**
 * The market read model, from listing events only (event times, never the clock):
 * - listings: every listing's current state; `public` marks what /listings may show
 *   (active, verified, broker) and partial indexes serve that search at any size;
 * - history: one row per interval during which a listing was active with given figures (zone,
 *   operation, type, bedrooms, bathrooms, area, listing time, price), and from when in it the listing
 *   was public, so zone statistics and an estimate's comparables can be reconstructed as of any past
 *   time;
 * - zones: every zone ever seen per country, with the time of its latest listing event;
 * - touches: every (zone, time) at which a listing event touched a zone, for `updated_at` and the
 *   market's clock as of any past time.
 * Zone statistics are computed from rows of these tables (zone-rows.ts, src/domain/market/zone-statistics.ts) and served from memory (ready-zones.ts).
 *
 * - changes: one row per event that changed the public inventory, at its log position (change-rows.ts):
 *   the change feed, and the snapshot as of any position (GET /listings/changes and /listings/export).
 *
 * Version 6: the changes table's index for the export covers what decides each listing's latest
 * change (kind, country, zone: change-rows.ts `_latest`), so the export reads the table's wide rows
 * only for the listings it sends; rows as in version 5.
 * Version 5: the changes table is new (decision 0111); every other table as in version 4.
 * Version 4: history rows also carry the area, the bathrooms (a change of them opens a new interval,
 * fields.ts `statistical`) and `public_from`, the instant from which the listing was public (active,
 * verified, broker: the listings table's `public`) during the interval, null if it never was: what an
 * estimate as of an instant compares with (HistoryIndex.comparablesAt). Within one interval a listing
 * can only become public, never stop being so (a delisting closes the interval, the source never
 * changes, a verification is never withdrawn: no event says so), so one instant says it all and a
 * verification does not cut the interval: cutting would add an interval, most of them empty, for
 * every listing verified on its first line (ingested and verified at one instant).
 * Version 3: history rows also carry the source, property type, bedrooms and listing time (a change
 * of these opens a new interval) and `touches` is new, so every figure can be answered as of any
 * instant; `price_usd` is computed here, exactly, from each price event's local price and recorded
 * rate (`usdText`, src/domain/market/fx.ts); version 2 took the event's `price_usd`, which the
 * ingestion of that time had rounded in floating point (an exact half cent sometimes went down).
 * Version 2: price per m² is kept exact (`price_usd / area_m2` in decimal to 30 places, never
 * rounded per listing), so medians are taken over exact values and rounded once, when published.
 * Version 1 stored it rounded to cents, and an even count's median averaged rounded values.
 * Every version reads the tables of the ones before (same columns), which the API serves while
 * the new version is being built.
 */
export type { ListingsTables } from './rows.ts'
export { EXACT_PPM2 } from './rows.ts'

/** An index over the listings /listings may show (active, verified, broker), the only ones it searches. */
const publicIndex = (t: ListingsTables, name: string, columns: string) =>
  `create index if not exists ${t.listings}_${name} on ${t.listings} (${columns}) where public`

const schema = (t: ListingsTables) => [
  listingsTable(t.listings),
  `create table if not exists ${t.history} (
    listing_id text not null,
    since_revision integer not null,
    country text not null,
    zone_no integer not null,
    operation text not null,
    source text not null,
    property_type text not null,
    bedrooms integer not null,
    bathrooms double precision not null,
    area_m2 double precision not null,
    listed_at timestamptz not null,
    price_usd numeric(16, 2) not null,
    ppm2_usd numeric not null,
    valid_from timestamptz not null,
    valid_to timestamptz,
    public_from timestamptz,
    primary key (listing_id, since_revision)
  )`,
  `create table if not exists ${t.zones} (
    country text not null,
    zone_no integer not null,
    updated_at timestamptz not null,
    primary key (country, zone_no)
  )`,
  `create table if not exists ${t.touches} (
    country text not null,
    zone_no integer not null,
    at timestamptz not null,
    primary key (country, zone_no, at)
  )`,
  changesTable(t.changes),
]

const indexes = (t: ListingsTables) => [
  // The zone statistics (zone-rows.ts `activeListings`, `ACTIVE_FIGURES`): the active listings of a
  // country (or of some of its zones) grouped as the preparation reads them, with the figures it reads, so that it reads
  // this index alone, already in its order (at a million listings ~90 MB instead of the whole table's
  // ~1 GB; a country 0.4–2.0 s → 0.07–0.21 s). Decision 0127. A store built before it keeps the older
  // index `_active` (country, zone_no) until its next build.
  `create index if not exists ${t.listings}_active_figures on ${t.listings}
    (${ACTIVE_FIGURES.group}) include (${ACTIVE_FIGURES.figures}) where status = 'active'`,
  // /listings: every filter combination starts with the country; each sort has an index ending in
  // the unique id (the tie-breaker), so a page is an index range scan whatever the table size.
  // Price orders also come per operation and per property type: rents are all cheaper than sales,
  // so walking a price index that mixes both to find the cheapest sale (or the dearest rent) skips
  // most of a country, and counting a type in a price range would scan the whole country.
  publicIndex(t, 'newest', 'country, listed_at desc, listing_id desc'),
  publicIndex(t, 'price', 'country, price_usd, listing_id'),
  publicIndex(t, 'operation_price', 'country, operation, price_usd, listing_id'),
  publicIndex(t, 'kind_price', 'country, property_type, price_usd, listing_id'),
  publicIndex(t, 'zone_newest', 'country, zone_no, listed_at desc, listing_id desc'),
  publicIndex(t, 'zone_price', 'country, zone_no, price_usd, listing_id'),
  publicIndex(t, 'zone_operation_price', 'country, zone_no, operation, price_usd, listing_id'),
  publicIndex(t, 'zone_kind_price', 'country, zone_no, operation, property_type, price_usd, listing_id'),
  `create index if not exists ${t.history}_zone on ${t.history} (country, zone_no, valid_from)`,
  `create index if not exists ${t.touches}_at on ${t.touches} (at)`,
  ...changesIndexes(t),
]

/** The whole row after the statement: the history reads its figures, the change feed all of it (recordChange). */
const RETURNING = 'returning l.*'
/** Opens a history interval, from the event, for each listing of `listing` that is active (and `where`); public from its start if the listing is. */
const openInterval = (t: ListingsTables, where = 'true') => `opened as (
  insert into ${t.history} (listing_id, since_revision, country, zone_no, operation, source, property_type, bedrooms, bathrooms, area_m2,
    listed_at, price_usd, ppm2_usd, valid_from, public_from)
  select l.listing_id, x.revision, l.country, l.zone_no, l.operation, l.source, l.property_type, l.bedrooms, l.bathrooms, l.area_m2,
    l.listed_at, l.price_usd, l.ppm2_usd, x.at, case when l.public then x.at end
    from listing l join x using (listing_id) where l.status = 'active' and ${where})`
const closeInterval = (t: ListingsTables, where = 'true') => `closed as (
  update ${t.history} h set valid_to = x.at from x where h.listing_id = x.listing_id and h.valid_to is null and ${where})`
/** Marks the zones of `touched` (listing_id, country, zone_no) as updated at the latest of their events, and records each touch. */
const touchZones = (t: ListingsTables, touched: string) => `,
  touch as (
    insert into ${t.touches} (country, zone_no, at)
    select distinct t.country, t.zone_no, x.at from ${touched} t join x using (listing_id)
    on conflict do nothing)
  insert into ${t.zones} (country, zone_no, updated_at)
  select t.country, t.zone_no, max(x.at) from ${touched} t join x using (listing_id) group by t.country, t.zone_no
  on conflict (country, zone_no) do update set updated_at = greatest(${t.zones}.updated_at, excluded.updated_at)`
/** An update of the listings named in `x`; `set` may use x's columns. */
const updateListing = (t: ListingsTables, set: string) =>
  `listing as (update ${t.listings} l set observed_at = x.at, ${set} from x where l.listing_id = x.listing_id ${RETURNING})`

/** What every event brings to its statement's `x`: its listing, time, stream revision and log position. */
const EVENT = 'listing_id text, at timestamptz, revision integer, position bigint'

const statementsFor = (t: ListingsTables): Record<ListingEventType, string> => ({
  ListingIngested: `with ${input(`${EVENT}, source text, source_id text, ${DETAIL_COLUMNS}, ${PRICE_COLUMNS}`)}, ${rowBefore(t)},
    listing as (
      insert into ${t.listings} as l (listing_id, observed_at, source, source_id, ${DETAIL_NAMES}, ${PRICE_NAMES}, status)
      select listing_id, at, source, source_id, ${DETAIL_NAMES}, ${PRICE_NAMES}, 'active' from x
      ${RETURNING}
    ), ${openInterval(t)}, ${recordChange(t)}
    ${touchZones(t, 'listing')}`,
  // A change of a statistical field (`reopen`) closes the listing's interval and opens a new one.
  ListingDetailsChanged: `with ${input(`${EVENT}, reopen boolean, ${DETAIL_COLUMNS}`)}, ${rowBefore(t)},
    ${updateListing(t, DETAIL_UPDATE)},
    ${closeInterval(t, 'x.reopen')}, ${openInterval(t, 'x.reopen')}, ${recordChange(t)},
    zones as (select listing_id, country, zone_no from before union select listing_id, country, zone_no from listing)
    ${touchZones(t, 'zones')}`,
  ListingPriceChanged: `with ${input(`${EVENT}, ${PRICE_COLUMNS}`)}, ${rowBefore(t)},
    ${updateListing(t, PRICE_UPDATE)},
    ${closeInterval(t)}, ${openInterval(t)}, ${recordChange(t)}
    ${touchZones(t, 'listing')}`,
  // The listing's open interval, if the verification made it public, is public from now on (see the version comment).
  ListingVerified: `with ${input(`${EVENT}, verified_at timestamptz`)}, ${rowBefore(t)},
    ${updateListing(t, 'verified_at = x.verified_at')},
    made_public as (
      update ${t.history} h set public_from = x.at from listing l join x using (listing_id)
       where h.listing_id = l.listing_id and h.valid_to is null and h.public_from is null and l.public), ${recordChange(t)}
    ${touchZones(t, 'listing')}`,
  ListingDelisted: `with ${input(EVENT)}, ${rowBefore(t)},
    ${updateListing(t, `status = 'delisted'`)}, ${closeInterval(t)}, ${recordChange(t)}
    ${touchZones(t, 'listing')}`,
  ListingRelisted: `with ${input(EVENT)}, ${rowBefore(t)},
    ${updateListing(t, `status = 'active'`)}, ${openInterval(t)}, ${recordChange(t)}
    ${touchZones(t, 'listing')}`,
})

/** Statements per generation (their text names its tables), built once per generation. */
const statementCache = new Map<string, Record<ListingEventType, string>>()
const statements = (t: ListingsTables) => {
  let built = statementCache.get(t.listings)
  if (!built) statementCache.set(t.listings, (built = statementsFor(t)))
  return built
}

/** The row of `x` an event contributes to its statement. */
function inputRow(event: ListingEvent, revision: number, position: number): Record<string, unknown> {
  const common = { listing_id: event.data.listing_id, at: event.data.observed_at, revision, position }
  switch (event.type) {
    case 'ListingIngested': {
      const d = event.data
      return { ...common, source: d.source, source_id: d.source_id, ...detailsRow(d), ...priceRow(d) }
    }
    case 'ListingDetailsChanged': {
      const reopen = event.data.changed.some((field) => (STATISTICAL as readonly string[]).includes(field))
      return { ...common, reopen, ...detailsRow(event.data) }
    }
    case 'ListingPriceChanged':
      return { ...common, ...priceRow(event.data) }
    case 'ListingVerified':
      return { ...common, verified_at: event.data.verified_at }
    case 'ListingDelisted':
    case 'ListingRelisted':
      return common
    default: {
      const never: never = event
      throw new Error(`unhandled ${JSON.stringify(never)}`)
    }
  }
}

/**
 * The events of different listings commute: each touches its own listing and history rows, and a
 * zone's `updated_at` only ever takes the greatest time. So a batch is cut into rounds (round k
 * holds the k-th event of every listing in the batch), applied in order, and within a round all
 * events of one type make one statement: a few statements per batch instead of one per event.
 */
function roundChanges(events: readonly RecordedListingEvent[], t: ListingsTables): RowChange[] {
  const rounds: Map<ListingEventType, Record<string, unknown>[]>[] = []
  const eventsOfListing = new Map<string, number>()
  for (const { event: domain, revision, position } of events) {
    const k = eventsOfListing.get(domain.data.listing_id) ?? 0
    eventsOfListing.set(domain.data.listing_id, k + 1)
    const round = (rounds[k] ??= new Map())
    const rows = round.get(domain.type) ?? []
    rows.push(inputRow(domain, revision, position))
    round.set(domain.type, rows)
  }
  const text = statements(t)
  return rounds.flatMap((round) => [...round].map(([type, rows]) => sql(text[type], JSON.stringify(rows))))
}

const listingEvents = (events: readonly RecordedEvent[]) =>
  events.flatMap((event) => {
    const domain = { type: event.type, data: event.data }
    return isListingEvent(domain) ? [{ event: domain, revision: event.revision, position: event.position }] : []
  })

/**
 * A batch's row changes. A listing first seen in the batch (its ListingIngested is there) has no
 * rows yet, so what its events leave is known from the events alone: it is folded (foldListing)
 * and written by three plain inserts for all such listings together, with no update at all. The
 * events of the other listings go through the rounds of `roundChanges`. The two sets of listings
 * are disjoint and zones commute, so their order does not matter. The gain depends on how many of
 * a listing's events share its first batch: all of them in a log written listing by listing (a
 * bulk ingest), few in one written as a market moves.
 */
function batchChanges(recorded: readonly RecordedEvent[], t: ListingsTables): RowChange[] {
  const events = listingEvents(recorded)
  const byListing = new Map<string, RecordedListingEvent[]>()
  for (const e of events) {
    const own = byListing.get(e.event.data.listing_id)
    if (own) own.push(e)
    else if (e.event.type === 'ListingIngested') byListing.set(e.event.data.listing_id, [e])
  }
  const rest = byListing.size === 0 ? events : events.filter((e) => !byListing.has(e.event.data.listing_id))
  const changes = roundChanges(rest, t)
  if (byListing.size === 0) return changes
  const listings: Record<string, unknown>[] = []
  const history: Record<string, unknown>[] = []
  const changed: Record<string, unknown>[] = []
  const touches = new Map<string, Record<string, unknown>>()
  for (const own of byListing.values()) {
    const folded = foldListing(own)
    listings.push(folded.listing)
    history.push(...folded.history)
    changed.push(...folded.changes)
    for (const [country, zone_no, at] of folded.touches) touches.set(`${country} ${zone_no} ${at}`, { country, zone_no, at })
  }
  const text = foldedStatements(t)
  return [
    sql(text.listings, JSON.stringify(listings)),
    ...(history.length > 0 ? [sql(text.history, JSON.stringify(history))] : []),
    sql(text.touches, JSON.stringify([...touches.values()])),
    ...(changed.length > 0 ? [sql(text.changes, JSON.stringify(changed))] : []),
    ...changes,
  ]
}

export const listingsProjection: Projection<keyof ListingsTables> = {
  name: 'listings',
  version: 6,
  categories: [LISTING_CATEGORY],
  tables: { listings: 'listings', history: 'listing_history', zones: 'listing_zones', touches: 'listing_zone_touches', changes: 'listing_changes' },
  schema,
  indexes,
  // One event at a time, no folding: the statements every batch form is proven equal to (test/projections/listings.test.ts).
  apply: (event, t) => roundChanges(listingEvents([event]), t),
  applyBatch: batchChanges,
}
