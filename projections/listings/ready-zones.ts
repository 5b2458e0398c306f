import { listingsProjection } from './projection.ts'
import { type Follower, followLive, type LiveAdvancing } from '../engine/follow.ts'
import { inSnapshot, lastPosition, type Provenance } from '../engine/provenance.ts'
import { generationTables } from '../engine/generations.ts'
import { type LiveGeneration, liveTables } from '../engine/live-tables.ts'
import type { Db, Sql } from '../../src/db/port.ts'
import type { RecordedEvent } from '../../src/eventstore/port.ts'
import { isListingEvent } from '../../src/domain/listings/listing.ts'
import { COUNTRIES, type Country } from '../../src/domain/market/vocabulary.ts'
import type { ListingsTables } from './projection.ts'
import { ZoneHistory } from './zone-history.ts'
import { comparablesAt } from './comparable-rows.ts'
import { zoneNumberOfName } from '../../src/domain/market/zone-name.ts'
import {
  activeListings,
  countryZoneFactsAt,
  firstListingEvent,
  listingsActiveAt,
  marketClock,
  thenOf,
  zonesNow,
  zonesOf,
  zonesThen,
} from './zone-rows.ts'
import type { CountryZoneFacts, Figures, ZoneNow, ZoneSeen, ZoneThen } from '../../src/domain/market/zone-statistics.ts'
import { zoneFactsOf, zoneDetailAt, zonesAt } from '../../src/domain/market/zone-statistics.ts'
import type { ZoneDetail, ZoneSummary } from '../../src/domain/market/zone-figures.ts'
import type { ComparableListing } from '../../src/domain/market/comparable.ts'
import { outsideRequests } from '../../src/runtime/dependency.ts'
import { fail } from '../../src/shared/errors.ts'

type PreparedCountry = {
  zones: readonly ZoneSeen[]
  now: ReadonlyMap<number, ZoneNow>
  then: ReadonlyMap<number, ZoneThen>
  facts: CountryZoneFacts
}
/** The answers of one preparation and what they were computed from: the snapshot's generation and checkpoint. */
type Prepared = { clock: string | null; countries: ReadonlyMap<Country, PreparedCountry>; at: Provenance }
/** A country's prepared facts and the preparation's provenance: an answer and its headers from the same preparation. */
export type PreparedFacts = { facts: CountryZoneFacts; at: Provenance }
/** What an answer as of a past instant reads: every read from one state of the read model (`ReadyZones.pointInTime`). */
export type PointInTime = Pick<ReadyZones, 'factsAt' | 'comparablesAt'>
/** An answer and the state it was computed from (none when its source says nothing of it: an audit's rebuilt read model). */
export type Computed<T> = { value: T; at?: Provenance }

/** Computing an answer from the history in memory starts again (the history changed meanwhile) at most this many times, then takes one SQL snapshot. */
const IN_MEMORY_ATTEMPTS = 3

/**
 * What changed since the answers were prepared: everything, or whole countries (a listing left a
 * zone the event does not name), zones, and listings whose country and zone are looked up.
 */
type Changes = { all: boolean; countries: Set<Country>; zones: Map<Country, Set<number>>; listings: Set<string> }
const everything = (): Changes => ({ all: true, countries: new Set(), zones: new Map(), listings: new Set() })

function touchZone(changes: Changes, country: Country, zoneNo: number | null): void {
  if (zoneNo === null) changes.countries.add(country)
  else changes.zones.set(country, (changes.zones.get(country) ?? new Set()).add(zoneNo))
}

/** What `events` change: their countries or zones, or the listings whose country and zone are looked up when preparing. */
function changesOf(events: readonly RecordedEvent[]): Changes {
  const changes: Changes = { all: false, countries: new Set(), zones: new Map(), listings: new Set() }
  for (const event of events) {
    const domain = { type: event.type, data: event.data }
    if (!isListingEvent(domain)) continue
    switch (domain.type) {
      case 'ListingIngested':
        touchZone(changes, domain.data.country, zoneNumberOfName(domain.data.zone))
        break
      case 'ListingDetailsChanged': {
        // The country or zone it left is not in the event.
        const { changed } = domain.data
        if (changed.includes('country')) changes.all = true
        touchZone(changes, domain.data.country, changed.includes('zone') ? null : zoneNumberOfName(domain.data.zone))
        break
      }
      case 'ListingPriceChanged':
      case 'ListingVerified':
      case 'ListingDelisted':
      case 'ListingRelisted':
        changes.listings.add(domain.data.listing_id)
        break
      default: {
        const never: never = domain
        throw new Error(`unhandled listing event ${JSON.stringify(never)}`)
      }
    }
  }
  return changes
}

/**
 * The answers of GET /zones and GET /zone/{slug}, prepared in memory and served without SQL.
 *
 * Every process prepares them when the live generation of `listings` advances (the runner tells
 * every process, whoever applied the batch: see `onLiveAdvanced`), from one snapshot of the read
 * model, then swaps them in at once (a follower of the live generation: engine/follow.ts). Only
 * the zones the events touched are computed again, and the 30-day comparison (one pass over the
 * history) when anything changed. Preparations coalesce: changes arriving while one runs make one
 * more, which starts after a pause as long as the preparation took. While they run the previous
 * answers are served, so an answer is at most about three preparations behind the read model
 * (milliseconds on the demo market, seconds at a million listings: docs/limits.md). When another
 * generation goes live (promotion, rollback) requests wait for its answers: no request is answered
 * from a generation that is no longer live. Days on market are computed per request from the
 * prepared median listing time. At start the first preparation runs in the background: requests
 * for zones wait for it, everything else is served at once.
 */
export class ReadyZones {
  private histories: ZoneHistory | null = null

  private constructor(
    private readonly db: Db,
    private readonly prepared: Follower<Prepared>,
    private readonly advancing: LiveAdvancing,
    private readonly onError: (error: unknown) => void,
  ) {}

  /**
   * Answers for `db`'s live generation, kept current from then on. Returns at once: the first
   * preparation runs in the background (seconds at a million listings) and the first requests wait for it.
   */
  static follow(db: Db, advancing: LiveAdvancing, onError: (error: unknown) => void): ReadyZones {
    const prepared = followLive(
      { live: liveTables(db), advancing },
      {
        projection: listingsProjection,
        what: 'zone statistics',
        load: (generation) => prepare(db, generation, null, []),
        advance: (previous, events, generation, take) => prepare(db, generation, previous, events, take),
        // Under continuous change, preparing at most half the time leaves the database to the
        // projections and to other processes (at a million listings a preparation takes seconds).
        pause: (lastMs) => lastMs,
      },
      onError,
    )
    return new ReadyZones(db, prepared, advancing, onError)
  }

  /** GET /zones's zones of `country` at `now`. */
  async zones(country: Country, now: Date): Promise<ZoneSummary[]> {
    return zonesAt(await this.facts(country), now)
  }

  /** GET /zone/{slug}'s record at `now`, or null when `country` has no such zone. */
  async zone(country: Country, slug: string, now: Date): Promise<ZoneDetail | null> {
    return zoneDetailAt(await this.facts(country), slug, now)
  }

  /**
   * The statistics of `country`'s zones (only `zoneNo` when given; only `figures`) as the market stood
   * at the instant `at`, computed when asked (any instant may be asked) from the live generation's
   * history, held in memory from the first such question on (zone-history.ts). Until that copy is
   * loaded (seconds to a minute at a million listings) the same answer comes from SQL, within the
   * request's bound like any query: a request never waits for the load.
   */
  async factsAt(country: Country, at: Date, zoneNo?: number, figures: Figures = 'detail'): Promise<CountryZoneFacts> {
    const history = this.history()
    if (history.ready) return history.factsAt(country, at, zoneNo, figures)
    const t = await this.pointInTimeTables()
    return this.db.transaction(async (tx) => {
      if (this.db.kind === 'postgres') await tx.query('set transaction isolation level repeatable read, read only')
      return countryZoneFactsAt(tx, t, country, at, zoneNo, figures)
    })
  }

  /**
   * The listings public at the instant `at` of `country`'s zone `zoneNo`, of `operation` and
   * `propertyType`, with their figures then, in listing id order (what an estimate as of `at`
   * compares with): from the history in memory, or from SQL until it is loaded, as `factsAt`.
   */
  async comparablesAt(country: Country, zoneNo: number, operation: string, propertyType: string, at: Date): Promise<ComparableListing[]> {
    const history = this.history()
    if (history.ready) return history.comparablesAt(country, zoneNo, operation, propertyType, at)
    const t = await this.pointInTimeTables(4, 'comparables as of a past instant')
    return this.db.transaction(async (tx) => {
      if (this.db.kind === 'postgres') await tx.query('set transaction isolation level repeatable read, read only')
      return comparablesAt(tx, t, country, zoneNo, operation, propertyType, at)
    })
  }

  /**
   * `read`'s answer as of past instants, every figure it reads from one state of the live generation,
   * and the position and generation of that state: the history in memory when it is loaded (computed
   * again if the history advanced meanwhile), else one SQL snapshot of the tables.
   */
  async pointInTime<T>(read: (view: PointInTime) => Promise<T>): Promise<{ value: T; at: Provenance }> {
    const history = this.history()
    for (let attempt = 0; history.ready && attempt < IN_MEMORY_ATTEMPTS; attempt++) {
      const held = await history.held()
      const at = held.at
      const value = await read({
        factsAt: async (country, when, zoneNo, figures) => held.index.factsAt(country, when, zoneNo, figures),
        comparablesAt: async (country, zoneNo, operation, propertyType, when) => {
          if (held.noComparables !== null) throw fail.serviceUnavailable(held.noComparables)
          return held.index.comparablesAt(country, zoneNo, operation, propertyType, when)
        },
      })
      // An advance replaces `at` with the index it changed in place: then this answer may mix two states.
      if (held.at === at) return { value, at }
    }
    const live = await this.pointInTimeGeneration()
    const t = generationTables(listingsProjection, live)
    return inSnapshot(this.db, live, async (tx, at) => {
      const value = await read({
        factsAt: (country, when, zoneNo, figures) => countryZoneFactsAt(tx, t, country, when, zoneNo, figures),
        comparablesAt: async (country, zoneNo, operation, propertyType, when) => {
          if (live.version < 4) throw tooOld(live, 4, 'comparables as of a past instant')
          return comparablesAt(tx, t, country, zoneNo, operation, propertyType, when)
        },
      })
      return { value, at }
    })
  }

  /** The time of the first listing event (null without any): before it the market is unknown. */
  async firstEvent(): Promise<string | null> {
    const history = this.history()
    return history.ready ? history.firstEvent() : firstListingEvent(this.db, await this.pointInTimeTables())
  }

  /** Resolves when no preparation is pending (tests, after applying events). */
  async settled(): Promise<void> {
    await Promise.all([this.prepared.settled(), this.histories?.settled()])
  }

  /** Resolves once the answers are first prepared (after any failed tries): from then on they come from memory. */
  get firstLoaded(): Promise<void> {
    return this.prepared.firstLoaded
  }

  stop(): void {
    this.prepared.stop()
    this.histories?.stop()
  }

  /**
   * Loaded on first use: a process that is never asked about the past does not hold it (~100 MB at a
   * million listings). Loaded outside the request that asked first: its calls are not bounded by that request's.
   */
  private history(): ZoneHistory {
    return (this.histories ??= outsideRequests(() => ZoneHistory.follow(this.db, this.advancing, this.onError)))
  }

  /** The live generation's tables, which answer `what` from listings version `since` on (zone figures: 3, comparables: 4). */
  private async pointInTimeTables(since = 3, what = 'answers as of a past instant'): Promise<ListingsTables> {
    return generationTables(listingsProjection, await this.pointInTimeGeneration(since, what))
  }

  private async pointInTimeGeneration(since = 3, what = 'answers as of a past instant'): Promise<LiveGeneration> {
    const live = await liveTables(this.db).of(listingsProjection)
    if (live.version < since) throw tooOld(live, since, what)
    return live
  }

  /**
   * The prepared facts of `country`'s zones, at once when they are ready: an object replaced, never
   * changed, when they change (what answers serialised once are kept by, src/zones/routes.ts).
   */
  facts(country: Country): CountryZoneFacts | Promise<CountryZoneFacts> {
    const current = this.prepared.current()
    return current instanceof Promise ? current.then((prepared) => factsIn(prepared, country)) : factsIn(current, country)
  }

  /** `facts` with the position and generation of the preparation they come from (the same one). */
  preparedFacts(country: Country): PreparedFacts | Promise<PreparedFacts> {
    const current = this.prepared.current()
    const of = (prepared: Prepared) => ({ facts: factsIn(prepared, country), at: prepared.at })
    return current instanceof Promise ? current.then(of) : of(current)
  }
}

/** The 503 of a question the live generation is too old to answer. */
const tooOld = (live: LiveGeneration, since: number, what: string) =>
  fail.serviceUnavailable(`${what} need listings v${since}, being built (${live.id} is live)`)

const NO_ZONES: CountryZoneFacts = new Map()
const factsIn = (prepared: Prepared, country: Country): CountryZoneFacts => prepared.countries.get(country)?.facts ?? NO_ZONES

/**
 * The answers after the events told of (`told`, then those `take` hands over once the snapshot is
 * taken), from one snapshot of `generation` (engine/provenance.ts), at its checkpoint: the zones
 * `previous` holds are kept unless changed (all computed without `previous`). They are exact at the
 * checkpoint only if every event between `previous`'s position and it was told of; when the snapshot
 * holds events not told of yet (applied by another process first), everything is computed again.
 */
async function prepare(
  db: Db,
  generation: LiveGeneration,
  previous: Prepared | null,
  told: readonly RecordedEvent[],
  take?: (through: number) => readonly RecordedEvent[],
): Promise<Prepared> {
  return inSnapshot(db, generation, async (tx, at) => {
    const events = take ? [...told, ...take(at.position)] : told
    const known = previous !== null && Math.max(previous.at.position, lastPosition(events)) >= at.position
    const changes = known ? changesOf(events) : everything()
    const before = changes.all ? null : previous
    const t = generationTables(listingsProjection, generation)
    const clock = await marketClock(tx, t)
    for (const { country, zone_no } of await placesOf(tx, t, changes.listings)) touchZone(changes, country, zone_no)
    const changed = !before || clock !== before.clock || changes.countries.size > 0 || changes.zones.size > 0
    const then = !changed ? null : clock === null ? new Map() : zonesThen(await listingsActiveAt(tx, t, thenOf(clock), 'then'))
    const countries = new Map<Country, PreparedCountry>()
    for (const country of COUNTRIES) {
      const kept = before?.countries.get(country)
      const zones = changes.zones.get(country)
      if (kept && !then) {
        countries.set(country, kept)
        continue
      }
      const whole = !kept || changes.countries.has(country)
      const prepared = {
        zones: whole || zones ? await zonesOf(tx, t, country) : kept.zones,
        now: whole
          ? zonesNow(await activeListings(tx, t, country), country)
          : zones
            ? merged(kept.now, zones, zonesNow(await activeListings(tx, t, country, [...zones]), country))
            : kept.now,
        then: then?.get(country) ?? new Map<number, ZoneThen>(),
      }
      countries.set(country, { ...prepared, facts: zoneFactsOf(country, prepared.zones, prepared.now, prepared.then) })
    }
    return { clock, countries, at }
  })
}

/** Where the listings `ids` are now. */
async function placesOf(sql: Sql, t: ListingsTables, ids: ReadonlySet<string>): Promise<{ country: Country; zone_no: number }[]> {
  if (ids.size === 0) return []
  return sql.query<{ country: Country; zone_no: number }>(
    `select distinct country, zone_no from ${t.listings} where listing_id in (select jsonb_array_elements_text($1::text::jsonb))`,
    [JSON.stringify([...ids])],
  )
}

/** `before` with the figures of `zones` replaced by `fresh` (a zone absent from `fresh` has no active listings). */
function merged(before: ReadonlyMap<number, ZoneNow>, zones: ReadonlySet<number>, fresh: ReadonlyMap<number, ZoneNow>): ReadonlyMap<number, ZoneNow> {
  const result = new Map(before)
  for (const zone of zones) {
    const figures = fresh.get(zone)
    if (figures) result.set(zone, figures)
    else result.delete(zone)
  }
  return result
}
