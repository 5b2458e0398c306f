import { listingsProjection } from './projection.ts'
import { type Follower, fixedState, followLive, type LiveAdvancing } from '../engine/follow.ts'
import { generationTables } from '../engine/generations.ts'
import { type LiveGeneration, liveTables } from '../engine/live-tables.ts'
import { type Db, type Row, toNumber } from '../../src/db/port.ts'
import type { RecordedEvent } from '../../src/eventstore/port.ts'
import { LISTING_RECORD, type RecordEntry } from '../../src/domain/listings/fields.ts'
import { type Estimate, estimateOf, type Subject } from '../../src/domain/market/estimate.ts'
import { daysOnMarket, daysOnMarketChangesAt } from '../../src/domain/market/statistics.ts'
import { ReadyBytes } from '../../src/shared/ready-bytes.ts'
import { type ListingKey, ListingIndex } from './inventory-index.ts'
import type { ListingsTables } from './projection.ts'
import { LISTING_COLUMNS, type ListingRecord, type ListingSearch, type ListingsResponse, MAX_OFFSET, recordOf, recordRow } from './search.ts'

/**
 * Full records kept in memory. The whole public inventory is loaded at start when it fits; beyond,
 * the most recently served ones are kept and a page's missing records come in one query by id.
 */
export const RECORD_CAPACITY = 50_000
/** Pages kept as bytes, at most (a page of 200 listings is about 130 KB): then the kept pages start over. */
const MAX_READY_PAGES = 200

/** A listing's record without what depends on the request time; `used` orders evictions. */
type CachedListing = Omit<ListingRecord, 'days_on_market'> & { listedMs: number; used: number }

/** A row of LISTING_COLUMNS.record. */
type RecordRow = Row & { listing_id: string }
type KeyRow = Row & {
  listing_id: string
  country: string
  zone_no: number
  operation: string
  property_type: string
  listed_us: unknown
  cents: unknown
  area_m2: unknown
  bedrooms: unknown
  bathrooms: unknown
}

const RECORD_COLUMNS = LISTING_COLUMNS.record
/** listed_at to the microsecond (timestamptz precision, exact below 2^53) and the price in whole cents. */
const LISTED_US = '(extract(epoch from listed_at) * 1000000)::int8'
const CENTS = '(price_usd * 100)::int8'

/** Per listing in a group row, after its id: listed_us, cents, area, bedrooms, bathrooms (doubles as their shortest text: exact). */
const GROUP_FIELDS = `${LISTED_US} || ',' || ${CENTS} || ',' || area_m2 || ',' || bedrooms || ',' || bathrooms`
const FIELD_COUNT = 6

/**
 * A whole generation arrives as one row per country, zone, operation and property type, its
 * listings as `id,listed_us,cents,area,bedrooms,bathrooms,…`: far fewer rows to decode than one per listing, and less
 * memory while loading.
 */
type GroupRow = Row & { country: string; zone_no: number; operation: string; property_type: string; listings: string }

function* keysOfGroups(groups: readonly GroupRow[]): Generator<ListingKey> {
  for (const group of groups) {
    const fields = group.listings.split(',')
    for (let i = 0; i + FIELD_COUNT - 1 < fields.length; i += FIELD_COUNT) {
      yield {
        id: fields[i]!,
        country: group.country,
        zone: group.zone_no,
        operation: group.operation,
        propertyType: group.property_type,
        listedMicros: Number(fields[i + 1]),
        priceCents: Number(fields[i + 2]),
        areaM2: Number(fields[i + 3]),
        bedrooms: Number(fields[i + 4]),
        bathrooms: Number(fields[i + 5]),
      }
    }
  }
}

const keyOf = (row: KeyRow): ListingKey => ({
  id: row.listing_id,
  country: row.country,
  zone: row.zone_no,
  operation: row.operation,
  propertyType: row.property_type,
  listedMicros: toNumber(row.listed_us),
  priceCents: toNumber(row.cents),
  areaM2: toNumber(row.area_m2),
  bedrooms: toNumber(row.bedrooms),
  bathrooms: toNumber(row.bathrooms),
})

/**
 * One copy of each value the record fields marked `repeated` take (vocabulary words, zone names,
 * brokers): every row read brings its own copy, and at 50,000 cached records (and more waiting for
 * their query under a miss-heavy load) six strings and an object per record add up. A broker is
 * one object per id and name (a few per market).
 */
const REPEATED = Object.entries(LISTING_RECORD as Record<string, RecordEntry>).flatMap(([name, entry]) => (entry.repeated ? [name] : []))
const KEPT = new Map<string, unknown>()
function kept(value: unknown): unknown {
  const key = typeof value === 'string' ? value : JSON.stringify(value)
  const copy = KEPT.get(key)
  if (copy !== undefined) return copy
  KEPT.set(key, value)
  return value
}

const cachedOf = (row: RecordRow): CachedListing => {
  const record = recordOf(recordRow(row))
  for (const name of REPEATED) record[name] = kept(record[name])
  return { ...(record as Omit<ListingRecord, 'days_on_market'>), listedMs: Date.parse(record.listed_at as string), used: 0 }
}

const RECORD_NAMES = Object.keys(LISTING_RECORD) as (keyof ListingRecord)[]
/** The record as served at `nowMs`, its fields in the declared order. */
const recordAt = (c: CachedListing, nowMs: number): ListingRecord => {
  const record: Record<string, unknown> = {}
  for (const name of RECORD_NAMES) record[name] = name === 'days_on_market' ? daysOnMarket(nowMs, c.listedMs) : c[name]
  return record as ListingRecord
}

export type InventoryOptions = { recordCapacity?: number; onError?: (error: unknown) => void }

/** One generation's public listings in memory: the index, cached records, and its listings table. */
type Loaded = {
  index: ListingIndex
  records: Map<string, CachedListing>
  table: string
  /** Bumped by every change of the index, so a record fetch that raced one is not kept. */
  changes: number
  /** Records kept at most (beyond, evicted), and the count of records served, which orders evictions. */
  capacity: number
  served: number
}

/**
 * GET /listings from memory: the public listings of the live generation of the listings read model,
 * as a ListingIndex plus their records (see RECORD_CAPACITY), kept by a follower of the live
 * generation (engine/follow.ts):
 *
 * - Follows every batch the live generation settles (applied by this or another process, see
 *   ProjectionRunner.onLiveAdvanced): the listings named by its events are read again (one query)
 *   and moved, added or taken out at once. Notices arriving meanwhile make one more pass after.
 * - On a promotion or rollback it loads the new live generation whole; requests arriving meanwhile
 *   wait for it, so a generation that is no longer live is never served.
 */
export class ListingInventory {
  /** Pages served as bytes, per loaded generation and version of it (searchBytes). */
  private readonly ready = new ReadyBytes<Loaded>(MAX_READY_PAGES)

  private constructor(
    private readonly db: Db,
    private readonly loaded: Follower<Loaded>,
  ) {}

  /** Loads the live generation's public listings and follows the runner and generation switches from then on. */
  static async open(db: Db, advancing: LiveAdvancing, options: InventoryOptions = {}): Promise<ListingInventory> {
    const capacity = options.recordCapacity ?? RECORD_CAPACITY
    const loaded = followLive(
      { live: liveTables(db), advancing },
      {
        projection: listingsProjection,
        what: 'listings',
        load: (generation) => load(db, generationTables(listingsProjection, generation).listings, capacity),
        advance: (state, events) => reread(db, state, idsOf(events)).then(() => state),
      },
      options.onError ?? (() => {}),
    )
    const inventory = new ListingInventory(db, loaded)
    try {
      await loaded.current()
    } catch (error) {
      loaded.stop()
      throw error
    }
    return inventory
  }

  /**
   * The public listings of `tables` as they are, followed no further: a read model built once
   * (`audit answer`). Records are read with each page (none kept), so memory holds the index only.
   */
  static async ofTables(db: Db, tables: ListingsTables): Promise<ListingInventory> {
    return new ListingInventory(db, fixedState(await load(db, tables.listings, 0)))
  }

  /** The page `search` asks for, as the SQL of the live generation would answer it; `now` gives days on market. */
  async search(search: ListingSearch, now: Date): Promise<ListingsResponse> {
    return (await this.pageOf(await this.loaded.current(), search, now.getTime())).body
  }

  /**
   * `search`'s page as JSON bytes, serialised once: kept (ReadyBytes) until the listings change or a
   * listing on the page gains a day on the market, whichever comes first.
   */
  async searchBytes(search: ListingSearch, now: Date): Promise<Uint8Array> {
    const current = this.loaded.current()
    const loaded = current instanceof Promise ? await current : current
    const key = JSON.stringify(search)
    const nowMs = now.getTime()
    // A change while the page is read makes it kept for the version it started from: not served again.
    const version = loaded.changes
    return this.ready.kept(loaded, key, nowMs, version) ?? this.ready.keep(loaded, key, nowMs, await this.pageOf(loaded, search, nowMs), version)
  }

  private async pageOf(loaded: Loaded, search: ListingSearch, nowMs: number): Promise<{ body: ListingsResponse; until: number }> {
    const { total, ids } = loaded.index.search(search)
    const listings = await this.recordsOf(loaded, ids)
    const end = search.offset + listings.length
    let until = Number.POSITIVE_INFINITY
    for (const listing of listings) until = Math.min(until, daysOnMarketChangesAt(nowMs, listing.listedMs))
    // Beyond MAX_OFFSET a next page could not be asked for: narrower filters reach those listings.
    const body: ListingsResponse = {
      ok: true,
      count: listings.length,
      total,
      limit: search.limit,
      offset: search.offset,
      next_offset: end < total && end <= MAX_OFFSET ? end : null,
      listings: listings.map((c) => recordAt(c, nowMs)),
    }
    return { body, until }
  }

  /** The estimate for `subject` from the public listings of a country, zone, operation and property type now (read at once: no change between). */
  async estimate(country: string, zone: number, operation: string, propertyType: string, subject: Subject): Promise<Estimate> {
    const current = this.loaded.current()
    const { index } = current instanceof Promise ? await current : current
    return estimateOf(index.candidates(country, zone, operation, propertyType), subject)
  }

  /** Resolves when every notice received so far is reflected in the answers. */
  settled(): Promise<void> {
    return this.loaded.settled()
  }

  stop(): void {
    this.loaded.stop()
  }

  /** Listings and cached records, for measurements. */
  get size(): { listings: number; records: number } {
    const loaded = this.loaded.latest()
    return { listings: loaded?.index.size ?? 0, records: loaded?.records.size ?? 0 }
  }

  // ---- internals --------------------------------------------------------------------------------

  /**
   * The records of `ids`, in order: from memory, the missing ones in one query by primary key. What
   * memory holds is taken before the query: other requests may evict it meanwhile.
   */
  private async recordsOf(loaded: Loaded, ids: readonly string[]): Promise<CachedListing[]> {
    const found = ids.map((id) => {
      const cached = loaded.records.get(id)
      if (cached) cached.used = ++loaded.served
      return cached
    })
    const missing = ids.filter((_, i) => found[i] === undefined)
    if (missing.length === 0) return found as CachedListing[]
    const changes = loaded.changes
    const rows = await this.db.query<RecordRow>(`select ${RECORD_COLUMNS} from ${loaded.table} where listing_id = any($1::text[])`, [missing])
    const fetched = new Map(rows.map((row) => [row.listing_id, cachedOf(row)]))
    // Rows read while the index changed may be older than what it holds: served, not kept.
    if (changes === loaded.changes) {
      for (const cached of fetched.values()) remember(loaded, cached)
      evict(loaded)
    }
    return ids.map((id, i) => {
      const cached = found[i] ?? fetched.get(id)
      if (!cached) throw new Error(`listing ${id} is in the inventory but not in ${loaded.table}`)
      return cached
    })
  }
}

/** The listings `events` name. */
function idsOf(events: readonly RecordedEvent[]): string[] {
  const ids = new Set<string>()
  for (const event of events) {
    const id = (event.data as { listing_id?: unknown }).listing_id
    if (typeof id === 'string') ids.add(id)
  }
  return [...ids]
}

/** The public listings of the listings table `table`, whole (their records too when they fit in `capacity`). */
async function load(db: Db, table: string, capacity: number): Promise<Loaded> {
  const groups = await db.query<GroupRow>(
    `select country, zone_no, operation, property_type, string_agg(listing_id || ',' || ${GROUP_FIELDS}, ',') as listings
       from ${table} where public group by country, zone_no, operation, property_type`,
  )
  const index = ListingIndex.of(keysOfGroups(groups))
  const records = new Map<string, CachedListing>()
  if (index.size <= capacity) {
    for (const row of await db.query<RecordRow>(`select ${RECORD_COLUMNS} from ${table} where public`)) records.set(row.listing_id, cachedOf(row))
  }
  return { index, records, table, changes: 0, capacity, served: 0 }
}

/** Reads the listings `ids` again and moves, adds or removes each at once. */
async function reread(db: Db, loaded: Loaded, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return
  const rows = await db.query<KeyRow & RecordRow & { public: boolean }>(
    `select ${RECORD_COLUMNS}, ${LISTED_US} as listed_us, ${CENTS} as cents, public
       from ${loaded.table} where listing_id = any($1::text[])`,
    [ids],
  )
  const found = new Map(rows.map((row) => [row.listing_id, row]))
  for (const id of ids) {
    const row = found.get(id)
    if (!row?.public) {
      loaded.index.remove(id)
      loaded.records.delete(id)
      continue
    }
    loaded.index.put(keyOf(row))
    remember(loaded, cachedOf(row))
  }
  evict(loaded)
  loaded.changes += 1
}

function remember(loaded: Loaded, cached: CachedListing): void {
  cached.used = ++loaded.served
  loaded.records.set(cached.id, cached)
}

/**
 * Least recently served records go first, in batches of a tenth of the capacity: per record
 * a counter instead of reordering a Map on every hit (which made hits 60× slower once full).
 */
function evict(loaded: Loaded): void {
  if (loaded.records.size <= loaded.capacity + Math.floor(loaded.capacity / 10)) return
  const oldest = [...loaded.records.values()].sort((a, b) => a.used - b.used)
  for (const cached of oldest.slice(0, loaded.records.size - loaded.capacity)) loaded.records.delete(cached.id)
}
