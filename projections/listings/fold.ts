import type { ListingEvent } from '../../src/domain/listings/listing.ts'
import { isPublic } from '../../src/domain/listings/fields.ts'
import { CHANGE_ROW_NAMES, changeRow } from './change-rows.ts'
import {
  DETAIL_COLUMNS,
  DETAIL_NAMES,
  detailsRow,
  EXACT_PPM2,
  input,
  type ListingsTables,
  PRICE_COLUMNS,
  PRICE_NAMES,
  priceRow,
  STATISTICAL,
} from './rows.ts'

/**
 * Listings first seen in a batch, folded (foldListing): their final rows, every history interval
 * they opened (closed ones with their end), and the zones they touched, written by plain inserts.
 * `ppm2_usd` is the listings table's generated column, computed the same way from the same values.
 */
const foldedStatementsFor = (t: ListingsTables) => ({
  listings: `with ${input(`listing_id text, at timestamptz, source text, source_id text, ${DETAIL_COLUMNS}, ${PRICE_COLUMNS}, verified_at timestamptz, status text`)}
    insert into ${t.listings} (listing_id, observed_at, source, source_id, ${DETAIL_NAMES}, ${PRICE_NAMES}, verified_at, status)
    select listing_id, at, source, source_id, ${DETAIL_NAMES}, ${PRICE_NAMES}, verified_at, status from x`,
  history: `with ${input(`listing_id text, since_revision integer, country text, zone_no integer, operation text, source text,
    property_type text, bedrooms integer, bathrooms double precision, area_m2 double precision, listed_at timestamptz, price_usd numeric,
    valid_from timestamptz, valid_to timestamptz, public_from timestamptz`)}
    insert into ${t.history} (listing_id, since_revision, country, zone_no, operation, source, property_type, bedrooms, bathrooms, area_m2,
      listed_at, price_usd, ppm2_usd, valid_from, valid_to, public_from)
    select listing_id, since_revision, country, zone_no, operation, source, property_type, bedrooms, bathrooms, area_m2, listed_at,
      price_usd::numeric(16, 2), ${EXACT_PPM2.replace('price_usd', 'price_usd::numeric(16, 2)')}, valid_from, valid_to, public_from from x`,
  changes: `with ${input(`position bigint, kind text, fields text, from_country text, from_zone_no integer, old_price_usd numeric,
    listing_id text, at timestamptz, source text, source_id text, ${DETAIL_COLUMNS}, ${PRICE_COLUMNS}, verified_at timestamptz, status text`)}
    insert into ${t.changes} (${CHANGE_ROW_NAMES})
    select ${CHANGE_ROW_NAMES.replace('observed_at', 'at')} from x`,
  touches: `with ${input('country text, zone_no integer, at timestamptz')},
    touch as (insert into ${t.touches} (country, zone_no, at) select country, zone_no, at from x on conflict do nothing)
    insert into ${t.zones} (country, zone_no, updated_at) select country, zone_no, max(at) from x group by country, zone_no
    on conflict (country, zone_no) do update set updated_at = greatest(${t.zones}.updated_at, excluded.updated_at)`,
})


/** The folded statements per generation (their text names its tables), built once per generation. */
const foldedCache = new Map<string, ReturnType<typeof foldedStatementsFor>>()
export const foldedStatements = (t: ListingsTables) => {
  let built = foldedCache.get(t.listings)
  if (!built) foldedCache.set(t.listings, (built = foldedStatementsFor(t)))
  return built
}

type Folded = {
  listing: Record<string, unknown>
  history: Record<string, unknown>[]
  touches: [string, number, string][]
  changes: Record<string, unknown>[]
}

/** A listing event as recorded: its stream revision and its position in the log. */
export type RecordedListingEvent = { event: ListingEvent; revision: number; position: number }

/** The history row `openInterval` (projection.ts) inserts for the active listing `row` at `at`: public from then if it is public. */
const intervalOf = (row: Record<string, unknown>, revision: number, at: string): Record<string, unknown> => ({
  listing_id: row.listing_id,
  since_revision: revision,
  country: row.country,
  zone_no: row.zone_no,
  operation: row.operation,
  source: row.source,
  property_type: row.property_type,
  bedrooms: row.bedrooms,
  bathrooms: row.bathrooms,
  area_m2: row.area_m2,
  listed_at: row.listed_at,
  price_usd: row.price_usd,
  valid_from: at,
  valid_to: null,
  public_from: isPublic(row) ? at : null,
})

/**
 * What the statements of `statementsFor` leave behind for a listing whose every event is `events`
 * (the first its ListingIngested), computed here instead: a pure fold, step for step the same.
 */
export function foldListing(events: readonly RecordedListingEvent[]): Folded {
  const first = events[0]!.event as Extract<ListingEvent, { type: 'ListingIngested' }>
  const d = first.data
  const row: Record<string, unknown> = {
    listing_id: d.listing_id,
    at: d.observed_at,
    source: d.source,
    source_id: d.source_id,
    ...detailsRow(d),
    ...priceRow(d),
    verified_at: null,
    status: 'active',
  }
  const history: Record<string, unknown>[] = []
  const touches: Folded['touches'] = []
  const changes: Folded['changes'] = []
  const open = (revision: number, at: string) => {
    if (row.status === 'active') history.push(intervalOf(row, revision, at))
  }
  const close = (at: string) => {
    for (const interval of history) if (interval.valid_to === null) interval.valid_to = at
  }
  const madePublic = (at: string) => {
    if (!isPublic(row)) return
    for (const interval of history) if (interval.valid_to === null && interval.public_from === null) interval.public_from = at
  }
  for (const { event, revision, position } of events) {
    const at = event.data.observed_at
    const was = event.type === 'ListingIngested' ? null : { ...row }
    const before = { country: row.country as string, zone_no: row.zone_no as number }
    row.at = at
    switch (event.type) {
      case 'ListingIngested':
        open(revision, at)
        break
      case 'ListingDetailsChanged': {
        Object.assign(row, detailsRow(event.data))
        if (event.data.changed.some((field) => (STATISTICAL as readonly string[]).includes(field))) {
          close(at)
          open(revision, at)
        }
        touches.push([before.country, before.zone_no, at])
        break
      }
      case 'ListingPriceChanged':
        Object.assign(row, priceRow(event.data))
        close(at)
        open(revision, at)
        break
      case 'ListingVerified':
        row.verified_at = event.data.verified_at
        madePublic(at)
        break
      case 'ListingDelisted':
        row.status = 'delisted'
        close(at)
        break
      case 'ListingRelisted':
        row.status = 'active'
        open(revision, at)
        break
      default: {
        const never: never = event
        throw new Error(`unhandled ${JSON.stringify(never)}`)
      }
    }
    touches.push([row.country as string, row.zone_no as number, at])
    const change = changeRow(position, was, row)
    if (change) changes.push(change)
  }
  return { listing: row, history, touches, changes }
}
