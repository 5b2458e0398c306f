import { listingsProjection, type ListingsTables } from './projection.ts'
import { type Follower, followLive, type LiveAdvancing } from '../engine/follow.ts'
import { inSnapshot, lastPosition, type Provenance } from '../engine/provenance.ts'
import { generationTables } from '../engine/generations.ts'
import { type LiveGeneration, liveTables } from '../engine/live-tables.ts'
import { type Db, type Row, type Sql, toNumber } from '../../src/db/port.ts'
import type { RecordedEvent } from '../../src/eventstore/port.ts'
import type { Country } from '../../src/domain/market/vocabulary.ts'
import { fail } from '../../src/shared/errors.ts'
import { HistoryIndex, type Interval, type Touch } from './history-index.ts'
import type { CountryZoneFacts, Figures } from '../../src/domain/market/zone-statistics.ts'
import type { ComparableListing } from '../../src/domain/market/comparable.ts'
import { micros } from './zone-rows.ts'

/**
 * An interval's fields after its group's, as text: listing, listing time, cents, exact price per m²,
 * from, to (empty while open); from version 4 on, then area (a double's shortest decimal, which reads
 * back as the same double), bathrooms and the instant public from (empty: never).
 */
const FIELDS = `listing_id, ${micros('listed_at')}, (price_usd * 100)::int8, ppm2_usd, ${micros('valid_from')}, coalesce(${micros('valid_to')}::text, '')`
const COMPARABLE_FIELDS = `area_m2, bathrooms, coalesce(${micros('public_from')}::text, '')`
const GROUP = 'country, zone_no, operation, source, property_type, bedrooms'

/** What is read of each interval: everything, or (a version 3 generation, which lacks the rest) what zone statistics read. */
type Reading = { comparables: boolean }
const fieldsOf = ({ comparables }: Reading) => `concat_ws(',', ${FIELDS}${comparables ? `, ${COMPARABLE_FIELDS}` : ''})`

type GroupRow = Row & { country: string; zone_no: number; operation: string; source: string; property_type: string; bedrooms: number; intervals: string }

/** The intervals of groups of rows sharing country, zone, operation, source, type and bedrooms (fewer rows to decode). */
function* intervalsOf(groups: readonly GroupRow[], { comparables }: Reading): Generator<Interval> {
  const count = comparables ? 9 : 6
  for (const group of groups) {
    const fields = group.intervals.split(',')
    for (let i = 0; i + count - 1 < fields.length; i += count) {
      yield {
        listingId: fields[i]!,
        country: group.country,
        zone: toNumber(group.zone_no),
        operation: group.operation,
        source: group.source,
        propertyType: group.property_type,
        bedrooms: toNumber(group.bedrooms),
        listedMicros: Number(fields[i + 1]),
        cents: Number(fields[i + 2]),
        ppm2: fields[i + 3]!,
        fromMicros: Number(fields[i + 4]),
        toMicros: fields[i + 5] === '' ? null : Number(fields[i + 5]),
        // Version 3: never public, which comparablesAt is not asked about (ZoneHistory refuses).
        areaM2: comparables ? Number(fields[i + 6]) : 0,
        bathrooms: comparables ? Number(fields[i + 7]) : 0,
        publicFromMicros: comparables && fields[i + 8] !== '' ? Number(fields[i + 8]) : null,
      }
    }
  }
}

const intervalGroups = (sql: Sql, t: ListingsTables, reading: Reading, where: string, params: unknown[]) =>
  sql.query<GroupRow>(`select ${GROUP}, string_agg(${fieldsOf(reading)}, ',') as intervals from ${t.history} where ${where} group by ${GROUP}`, params)

const touchRows = (sql: Sql, t: ListingsTables, where = 'true', params: unknown[] = []) =>
  sql.query<Row & { country: string; zone_no: number; at: unknown }>(`select country, zone_no, ${micros('at')} as at from ${t.touches} where ${where}`, params)
const touchOf = (row: { country: string; zone_no: number; at: unknown }): Touch => ({ country: row.country, zone: toNumber(row.zone_no), micros: toNumber(row.at) })

/** Every touch time of each zone as one text (a row per touch would be ~1.6 million objects at a million listings). */
const zoneTouches = (sql: Sql, t: ListingsTables) =>
  sql.query<Row & { country: string; zone_no: number; times: string }>(
    `select country, zone_no, string_agg(${micros('at')}::text, ',') as times from ${t.touches} group by country, zone_no`,
  )

function* touchesOfZones(zones: readonly { country: string; zone_no: number; times: string }[]): Generator<Touch> {
  for (const zone of zones) for (const time of zone.times.split(',')) yield { country: zone.country, zone: toNumber(zone.zone_no), micros: Number(time) }
}

/**
 * A generation's history in memory, or why it cannot answer (a generation older than version 3 lacks
 * what it reads); `noComparables`: why a version 3 generation, which lacks what an estimate reads,
 * answers no comparables.
 */
type Loaded = { index: HistoryIndex; tables: ListingsTables; reading: Reading; noComparables: string | null; at: Provenance } | { unavailable: string }
type Held = Extract<Loaded, { index: HistoryIndex }>

/** The history held at one position, to be read at once (`ZoneHistory.held`): `at` is replaced with every change of the index. */
export type HeldHistory = Pick<Held, 'index' | 'noComparables' | 'at'>

/**
 * Answers as of a past instant (GET /zones?as_of, /zone/{slug}?as_of, the monthly history, an
 * estimate's comparables) from the live generation's history held in memory (HistoryIndex), kept by
 * a follower of the live generation (engine/follow.ts): every batch it settles re-reads the
 * intervals of the listings its events name and the touches at their times; a promotion or rollback
 * loads the new generation whole.
 */
export class ZoneHistory {
  private constructor(private readonly loaded: Follower<Loaded>) {}

  static follow(db: Db, advancing: LiveAdvancing, onError: (error: unknown) => void): ZoneHistory {
    return new ZoneHistory(
      followLive(
        { live: liveTables(db), advancing },
        {
          projection: listingsProjection,
          what: 'zone histories',
          load: (generation) => load(db, generation),
          advance: (loaded, events, generation, take) => ('index' in loaded ? reread(db, loaded, generation, events, take) : Promise.resolve(loaded)),
        },
        onError,
      ),
    )
  }

  /** `countryZoneFactsAt` (zone-rows.ts) of the live generation, from memory. */
  async factsAt(country: Country, at: Date, zoneNo?: number, figures: Figures = 'detail'): Promise<CountryZoneFacts> {
    return (await this.index()).factsAt(country, at, zoneNo, figures)
  }

  /**
   * HistoryIndex.comparablesAt of the live generation: the listings public at `at` of a zone, an
   * operation and a property type, with their figures then, in listing id order.
   */
  async comparablesAt(country: Country, zoneNo: number, operation: string, propertyType: string, at: Date): Promise<ComparableListing[]> {
    const held = await this.held()
    if (held.noComparables !== null) throw fail.serviceUnavailable(held.noComparables)
    return held.index.comparablesAt(country, zoneNo, operation, propertyType, at)
  }

  /** The time of the first listing event (null without any). */
  async firstEvent(): Promise<string | null> {
    const first = (await this.index()).firstEventMicros()
    return first === null ? null : new Date(Math.floor(first / 1000)).toISOString()
  }

  /** Whether the live generation's history is loaded (and it can answer): `factsAt` answers at once. */
  get ready(): boolean {
    return this.loaded.ready()
  }

  /** Intervals held, for measurements. */
  get size(): number {
    const loaded = this.loaded.latest()
    return loaded && 'index' in loaded ? loaded.index.size : 0
  }

  settled(): Promise<void> {
    return this.loaded.settled()
  }

  stop(): void {
    this.loaded.stop()
  }

  private async index(): Promise<HistoryIndex> {
    return (await this.held()).index
  }

  /** The history held now, with the position it is exact at (read it before any await: an advance changes it in place). */
  async held(): Promise<HeldHistory> {
    const loaded = await this.loaded.current()
    if ('unavailable' in loaded) throw fail.serviceUnavailable(loaded.unavailable)
    return loaded
  }
}

/** The whole history of `generation`, from one snapshot (on PostgreSQL, repeatable read). */
async function load(db: Db, generation: LiveGeneration): Promise<Loaded> {
  if (generation.version < 3) {
    return { unavailable: `answers as of a past instant need listings v3, being built (${generation.id} is live)` }
  }
  const tables = generationTables(listingsProjection, generation)
  const reading = { comparables: generation.version >= 4 }
  const noComparables = reading.comparables ? null : `comparables as of a past instant need listings v4, being built (${generation.id} is live)`
  return inSnapshot(db, generation, async (tx, at) => {
    const [count] = await tx.query<{ n: unknown }>(`select count(*) as n from ${tables.history}`)
    const touches = await zoneTouches(tx, tables)
    const index = HistoryIndex.of(touchesOfZones(touches), toNumber(count!.n))
    const zones = touches.map((zone) => ({ country: zone.country, zoneNo: toNumber(zone.zone_no) }))
    touches.length = 0
    // A zone at a time: at a million listings the whole history as text would be ~150 MB at once.
    zones.sort((a, b) => (a.country < b.country ? -1 : a.country > b.country ? 1 : a.zoneNo - b.zoneNo))
    for (const zone of zones) {
      const groups = await intervalGroups(tx, tables, reading, 'country = $1 and zone_no = $2', [zone.country, zone.zoneNo])
      for (const interval of intervalsOf(groups, reading)) index.add(interval)
    }
    return { index, tables, reading, noComparables, at }
  })
}

/**
 * Reads again the intervals of the listings the events told of name (`told`, then those `take` hands
 * over once the snapshot is taken), and the touches at their times, at the snapshot's checkpoint.
 * When the snapshot holds events not told of yet (applied by another process first), what they
 * changed is unknown here: the generation is loaded whole instead, so the history is exact at its position.
 */
async function reread(db: Db, loaded: Held, generation: LiveGeneration, told: readonly RecordedEvent[], take: (through: number) => readonly RecordedEvent[]): Promise<Loaded> {
  const read = await inSnapshot(db, generation, async (tx, at) => {
    const events = [...told, ...take(at.position)]
    if (Math.max(loaded.at.position, lastPosition(events)) < at.position) return null
    const ids = new Set<string>()
    const times = new Set<string>()
    for (const event of events) {
      const data = event.data as { listing_id?: unknown; observed_at?: unknown }
      if (typeof data.listing_id === 'string') ids.add(data.listing_id)
      if (typeof data.observed_at === 'string') times.add(data.observed_at)
    }
    const groups = ids.size === 0 ? [] : await intervalGroups(tx, loaded.tables, loaded.reading, 'listing_id = any($1::text[])', [[...ids]])
    const touches = times.size === 0 ? [] : await touchRows(tx, loaded.tables, 'at = any($1::timestamptz[])', [[...times]])
    return { ids, groups, touches, at }
  })
  if (!read) return load(db, generation)
  const byListing = new Map<string, Interval[]>([...read.ids].map((id) => [id, []]))
  for (const interval of intervalsOf(read.groups, loaded.reading)) byListing.get(interval.listingId)?.push(interval)
  for (const [id, intervals] of byListing) loaded.index.replace(id, intervals)
  for (const row of read.touches) loaded.index.touch(touchOf(row))
  loaded.at = read.at
  return loaded
}
