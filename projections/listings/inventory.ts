import { listingsProjection } from './projection.ts'
import { type Follower, fixedState, followLive, type LiveAdvancing } from '../engine/follow.ts'
import { inSnapshot, lastPosition, type Provenance } from '../engine/provenance.ts'
import { generationTables } from '../engine/generations.ts'
import { type LiveGeneration, liveTables } from '../engine/live-tables.ts'
import type { Db, Sql } from '../../src/db/port.ts'
import type { RecordedEvent } from '../../src/eventstore/port.ts'
import { LISTING_RECORD } from '../../src/domain/listings/fields.ts'
import { type Estimate, estimateOf, type Subject } from '../../src/domain/market/estimate.ts'
import { daysOnMarket, daysOnMarketChangesAt } from '../../src/domain/market/statistics.ts'
import { ReadyBytes } from '../../src/shared/ready-bytes.ts'
import { fail } from '../../src/shared/errors.ts'
import { ListingIndex } from './inventory-index.ts'
import { type CachedListing, cachedOf, CENTS, type GroupRow, GROUP_FIELDS, keyOf, keysOfGroups, type KeyRow, LISTED_US, RECORD_COLUMNS, type RecordRow } from './inventory-rows.ts'
import type { ListingsTables } from './projection.ts'
import { type ListingRecord, type ListingSearch, type ListingsResponse, MAX_OFFSET } from './search.ts'

/**
 * Full records kept in memory. The whole public inventory is loaded at start when it fits; beyond,
 * the most recently served ones are kept and a page's missing records come in one query by id.
 */
export const RECORD_CAPACITY = 50_000
/** How long a page waits, at most, for a change its records showed to reach the index, before it is read again. */
const CAUGHT_UP_POLL_MS = 10
const CATCH_UP_ATTEMPTS = 100
/** Pages kept as bytes, at most (a page of 200 listings is about 130 KB): then the kept pages start over. */
const MAX_READY_PAGES = 200

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
  /** The position and generation the index is exact at: replaced with every change of it, in the same step. */
  at: Provenance
  /** The generation's changes table (from listings v5 on), which names every listing whose public record changed after a position. */
  changesTable: string | null
}

/** The first version of the listings read model with the changes table (change-rows.ts). */
const CHANGES_SINCE = 5

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

  /**
   * The live generation's public listings, followed from then on. Returns at once: the first load
   * runs in the background (seconds at a million listings) and the first requests wait for it.
   */
  static follow(db: Db, advancing: LiveAdvancing, options: InventoryOptions = {}): ListingInventory {
    const capacity = options.recordCapacity ?? RECORD_CAPACITY
    const loaded = followLive(
      { live: liveTables(db), advancing },
      {
        projection: listingsProjection,
        what: 'listings',
        load: (generation) => load(db, generation, capacity),
        advance: (state, events, generation, take) => reread(db, state, generation, events, take),
      },
      options.onError ?? (() => {}),
    )
    return new ListingInventory(db, loaded)
  }

  /** `follow`, once the first load is done; rejects (following nothing) when it failed. */
  static async open(db: Db, advancing: LiveAdvancing, options: InventoryOptions = {}): Promise<ListingInventory> {
    const inventory = ListingInventory.follow(db, advancing, options)
    try {
      await inventory.current()
    } catch (error) {
      inventory.stop()
      throw error
    }
    return inventory
  }

  /**
   * The public listings of `tables` as they are, followed no further: a read model built once from
   * the events up to `at` (`audit answer`). Records are read with each page (none kept), so memory
   * holds the index only; nothing changes the tables, so no record is checked for a later change.
   */
  static async ofTables(db: Db, tables: ListingsTables, at: Provenance): Promise<ListingInventory> {
    return new ListingInventory(db, fixedState(await loadIn(db, tables.listings, 0, at, null)))
  }

  /** The page `search` asks for, as the SQL of the live generation would answer it; `now` gives days on market. */
  async search(search: ListingSearch, now: Date): Promise<ListingsResponse> {
    for (let attempt = 0; ; attempt++) {
      const loaded = await this.current()
      const at = loaded.at
      const page = await this.pageOf(loaded, search, now.getTime())
      if (page) return page.body
      await this.caughtUp(loaded, at, attempt)
    }
  }

  /**
   * `search`'s page as JSON bytes, serialised once: kept (ReadyBytes) until the listings change or a
   * listing on the page gains a day on the market, whichever comes first; with the position and
   * generation the page is exact at (kept bytes are the same at every position of the same version).
   */
  async searchBytes(search: ListingSearch, now: Date): Promise<{ bytes: Uint8Array; at: Provenance }> {
    const key = JSON.stringify(search)
    const nowMs = now.getTime()
    for (let attempt = 0; ; attempt++) {
      const loaded = await this.current()
      // A change while the page is read makes it kept for the version it started from: not served again.
      const version = loaded.changes
      const at = loaded.at
      const kept = this.ready.kept(loaded, key, nowMs, version)
      if (kept) return { bytes: kept, at }
      const page = await this.pageOf(loaded, search, nowMs)
      if (page) return { bytes: this.ready.keep(loaded, key, nowMs, page, version), at }
      await this.caughtUp(loaded, at, attempt)
    }
  }

  /** The page, from the index as it is when called; null when a record it needed changed after the index's position (read it again once caught up). */
  private async pageOf(loaded: Loaded, search: ListingSearch, nowMs: number): Promise<{ body: ListingsResponse; until: number } | null> {
    const { total, ids } = loaded.index.search(search)
    const listings = await this.recordsOf(loaded, ids, loaded.at)
    if (!listings) return null
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
    return (await this.estimated(country, zone, operation, propertyType, subject)).value
  }

  /**
   * `estimate`, with the position and generation of the index it was computed from, at `since` or
   * after (what the caller already read of the read model elsewhere: the index catches up first).
   */
  async estimated(country: string, zone: number, operation: string, propertyType: string, subject: Subject, since = 0): Promise<{ value: Estimate; at: Provenance }> {
    for (let attempt = 0; ; attempt++) {
      const loaded = await this.current()
      const { index, at } = loaded
      if (at.position >= since) return { value: estimateOf(index.candidates(country, zone, operation, propertyType), subject), at }
      await this.caughtUp(loaded, at, attempt)
    }
  }

  /** Resolves when every notice received so far is reflected in the answers. */
  settled(): Promise<void> {
    return this.loaded.settled()
  }

  /** Resolves once the listings are first loaded (after any failed tries): from then on answers come from memory. */
  get firstLoaded(): Promise<void> {
    return this.loaded.firstLoaded
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

  private current(): Loaded | Promise<Loaded> {
    return this.loaded.current()
  }

  /**
   * Resolves once the listings held have moved on from `at` (the notice of a change read from the
   * table is on its way); a request that waited CATCH_UP_ATTEMPTS times is answered 503 rather than late.
   */
  private async caughtUp(loaded: Loaded, at: Provenance, attempt: number): Promise<void> {
    if (attempt >= CATCH_UP_ATTEMPTS) throw fail.serviceUnavailable('the listings are catching up with the log; retry in a moment', 1)
    await this.loaded.settled()
    if (this.loaded.latest() === loaded && loaded.at === at) await new Promise((resolve) => setTimeout(resolve, CAUGHT_UP_POLL_MS))
  }

  /**
   * The records of `ids`, in order: from memory, the missing ones in one query by primary key. What
   * memory holds is taken before the query: other requests may evict it meanwhile. Null when a missing
   * one changed after `at` (the changes table says so, in the same statement): its row is not the
   * record as of the index's position.
   */
  private async recordsOf(loaded: Loaded, ids: readonly string[], at: Provenance): Promise<CachedListing[] | null> {
    const found = ids.map((id) => {
      const cached = loaded.records.get(id)
      if (cached) cached.used = ++loaded.served
      return cached
    })
    const missing = ids.filter((_, i) => found[i] === undefined)
    if (missing.length === 0) return found as CachedListing[]
    const changes = loaded.changes
    const newer = loaded.changesTable
      ? `, exists (select 1 from ${loaded.changesTable} c where c.listing_id = l.listing_id and c.position > $2) as newer`
      : ''
    const rows = await this.db.query<RecordRow & { newer?: boolean }>(
      `select ${RECORD_COLUMNS}${newer} from ${loaded.table} l where listing_id = any($1::text[])`,
      loaded.changesTable ? [missing, at.position] : [missing],
    )
    if (rows.some((row) => row.newer)) return null
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

/** The public listings of `generation`, whole (their records too when they fit in `capacity`), from one snapshot at its checkpoint. */
function load(db: Db, generation: LiveGeneration, capacity: number): Promise<Loaded> {
  const tables = generationTables(listingsProjection, generation)
  const changesTable = generation.version >= CHANGES_SINCE ? tables.changes : null
  return inSnapshot(db, generation, (tx, at) => loadIn(tx, tables.listings, capacity, at, changesTable))
}

/** The public listings of the listings table `table` as `at` names them (their records too when they fit in `capacity`). */
async function loadIn(db: Sql, table: string, capacity: number, at: Provenance, changesTable: string | null): Promise<Loaded> {
  const groups = await db.query<GroupRow>(
    `select country, zone_no, operation, property_type, string_agg(listing_id || ',' || ${GROUP_FIELDS}, ',') as listings
       from ${table} where public group by country, zone_no, operation, property_type`,
  )
  const index = ListingIndex.of(keysOfGroups(groups))
  const records = new Map<string, CachedListing>()
  if (index.size <= capacity) {
    for (const row of await db.query<RecordRow>(`select ${RECORD_COLUMNS} from ${table} where public`)) records.set(row.listing_id, cachedOf(row))
  }
  return { index, records, table, changes: 0, capacity, served: 0, at, changesTable }
}

/**
 * Reads again, from one snapshot at the generation's checkpoint, the listings the events told of
 * name (`told`, then those `take` hands over) and those whose public record changed since the
 * index's position (the changes table: events applied by another process may not be told of yet),
 * and moves, adds or removes each at once: the index is then exact at the snapshot's position.
 * Without a changes table (before v5), a snapshot holding events not told of loads the generation whole.
 */
async function reread(
  db: Db,
  loaded: Loaded,
  generation: LiveGeneration,
  told: readonly RecordedEvent[],
  take: (through: number) => readonly RecordedEvent[],
): Promise<Loaded> {
  const read = await inSnapshot(db, generation, async (tx, at) => {
    const events = [...told, ...take(at.position)]
    const ids = new Set(idsOf(events))
    if (loaded.changesTable) {
      const changed = await tx.query<{ listing_id: string }>(
        `select distinct listing_id from ${loaded.changesTable} where position > $1 and position <= $2`,
        [loaded.at.position, at.position],
      )
      for (const row of changed) ids.add(row.listing_id)
    } else if (Math.max(loaded.at.position, lastPosition(events)) < at.position) {
      return null
    }
    const rows =
      ids.size === 0
        ? []
        : await tx.query<KeyRow & RecordRow & { public: boolean }>(
            `select ${RECORD_COLUMNS}, ${LISTED_US} as listed_us, ${CENTS} as cents, public
               from ${loaded.table} where listing_id = any($1::text[])`,
            [[...ids]],
          )
    return { ids: [...ids], rows, at }
  })
  if (!read) return load(db, generation, loaded.capacity)
  moved(loaded, read.ids, read.rows)
  loaded.at = read.at
  return loaded
}

/** Moves, adds or removes each of `ids` as its row now says (no row, or not public: out). */
function moved(loaded: Loaded, ids: readonly string[], rows: readonly (KeyRow & RecordRow & { public: boolean })[]): void {
  if (ids.length === 0) return
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
