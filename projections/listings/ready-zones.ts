import { listingsProjection } from './projection.ts'
import { liveTables } from '../engine/live-tables.ts'
import type { ProjectionRunner } from '../engine/runner.ts'
import type { Db, Sql } from '../../src/db/port.ts'
import type { RecordedEvent } from '../../src/eventstore/port.ts'
import { isListingEvent } from '../../src/domain/listings/listing.ts'
import { AppError } from '../../src/shared/errors.ts'
import { COUNTRIES, type Country } from '../../src/domain/market/vocabulary.ts'
import type { ListingsTables } from './projection.ts'
import { zoneNumberOfName } from '../../src/domain/market/zone-name.ts'
import {
  type ActiveFigures,
  activeFigures,
  type CountryZoneFacts,
  marketClock,
  type PastFigures,
  pastFigures,
  type ZoneRow,
  zoneDetailAt,
  zoneFactsOf,
  zonesAt,
  zonesOf,
} from './zone-statistics.ts'
import type { ZoneDetail, ZoneSummary } from '../../src/domain/market/zone-figures.ts'

/** After a failed preparation, the next attempt comes at the latest this much later. */
const RETRY_MS = 1000

type PreparedCountry = { zones: readonly ZoneRow[]; active: ActiveFigures; past: PastFigures; facts: CountryZoneFacts }
type Prepared = { generation: string; clock: string | null; countries: ReadonlyMap<Country, PreparedCountry> }

/**
 * What changed since the answers were prepared: everything, or whole countries (a listing left a
 * zone the event does not name), zones, and listings whose country and zone are looked up.
 */
type Changes = { all: boolean; countries: Set<Country>; zones: Map<Country, Set<number>>; listings: Set<string> }
const everything = (): Changes => ({ all: true, countries: new Set(), zones: new Map(), listings: new Set() })
const nothing = (): Changes => ({ all: false, countries: new Set(), zones: new Map(), listings: new Set() })

function touchZone(changes: Changes, country: Country, zoneNo: number | null): void {
  if (zoneNo === null) changes.countries.add(country)
  else changes.zones.set(country, (changes.zones.get(country) ?? new Set()).add(zoneNo))
}

/**
 * The answers of GET /zones and GET /zone/{slug}, prepared in memory and served without SQL.
 *
 * Every process prepares them when the live generation of `listings` advances (the runner tells
 * every process, whoever applied the batch: see `onLiveAdvanced`), from one snapshot of the read
 * model, then swaps them in at once. Only the zones the events touched are computed again, and the
 * 30-day comparison (one pass over the history) when anything changed. Preparations coalesce: changes arriving while one
 * runs make one more, which starts after a pause as long as the preparation took. While they run
 * the previous answers are served, so an answer is at most about three preparations behind the
 * read model (milliseconds on the demo market, seconds at a million listings: docs/limits.md). When another generation goes
 * live (promotion, rollback) requests wait for its answers: no request is answered from a
 * generation that is no longer live. Days on market are computed per request from the prepared
 * median listing time. At start the first preparation runs in the background: requests for zones
 * wait for it, everything else is served at once.
 */
export class ReadyZones {
  private prepared: Prepared | null = null
  private changes: Changes = everything()
  private preparing: Promise<void> | null = null
  private again = false
  private switching: Promise<void> | null = null
  private retry: ReturnType<typeof setTimeout> | undefined
  private readonly unsubscribe: Array<() => void> = []

  private constructor(
    private readonly db: Db,
    private readonly onError: (error: unknown) => void,
  ) {}

  /**
   * Answers for `db`'s live generation, kept current from then on. Returns at once: the first
   * preparation runs in the background (seconds at a million listings) and the first requests wait for it.
   */
  static follow(db: Db, runner: ProjectionRunner, onError: (error: unknown) => void): ReadyZones {
    const ready = new ReadyZones(db, onError)
    ready.waitFor(ready.refresh())
    ready.unsubscribe.push(
      runner.onLiveAdvanced((projection, events) => {
        if (projection !== listingsProjection.name) return
        ready.note(events)
        void ready.refresh()
      }),
      liveTables(db).onChange((projection) => {
        if (projection !== listingsProjection.name) return
        ready.changes = everything()
        ready.waitFor(ready.refresh())
      }),
    )
    return ready
  }

  /** GET /zones's zones of `country` at `now`. */
  async zones(country: Country, now: Date): Promise<ZoneSummary[]> {
    return zonesAt(await this.factsOf(country), now)
  }

  /** GET /zone/{slug}'s record at `now`, or null when `country` has no such zone. */
  async zone(country: Country, slug: string, now: Date): Promise<ZoneDetail | null> {
    return zoneDetailAt(await this.factsOf(country), slug, now)
  }

  /** Resolves when no preparation is pending (tests, after applying events). */
  async settled(): Promise<void> {
    while (this.preparing) await this.preparing.catch(() => {})
  }

  stop(): void {
    for (const unsubscribe of this.unsubscribe.splice(0)) unsubscribe()
    clearTimeout(this.retry)
  }

  /** Notes what `events` change: their countries, or the listings whose country is looked up when preparing. */
  private note(events: readonly RecordedEvent[]): void {
    for (const event of events) {
      const domain = { type: event.type, data: event.data }
      if (!isListingEvent(domain)) continue
      switch (domain.type) {
        case 'ListingIngested':
          touchZone(this.changes, domain.data.country, zoneNumberOfName(domain.data.zone))
          break
        case 'ListingDetailsChanged': {
          // The country or zone it left is not in the event.
          const { changed } = domain.data
          if (changed.includes('country')) this.changes.all = true
          touchZone(this.changes, domain.data.country, changed.includes('zone') ? null : zoneNumberOfName(domain.data.zone))
          break
        }
        case 'ListingPriceChanged':
        case 'ListingVerified':
        case 'ListingDelisted':
        case 'ListingRelisted':
          this.changes.listings.add(domain.data.listing_id)
          break
        default: {
          const never: never = domain
          throw new Error(`unhandled listing event ${JSON.stringify(never)}`)
        }
      }
    }
  }

  /** Makes requests wait for `preparation`: the answers they would get are not those of the live generation. */
  private waitFor(preparation: Promise<void>): void {
    this.switching = preparation
    void preparation.finally(() => {
      if (this.switching === preparation) this.switching = null
    })
  }

  private async factsOf(country: Country): Promise<CountryZoneFacts> {
    if (this.switching) await this.switching
    // Only when the first preparation failed (the failure is reported, and retried every second).
    if (!this.prepared) throw new AppError('service_unavailable', 'zone statistics are being prepared; retry in a moment', {}, { 'Retry-After': '1' })
    return this.prepared.countries.get(country)?.facts ?? new Map()
  }

  /** Starts a preparation, or asks the running one for another round. Failures are reported and retried. */
  private refresh(): Promise<void> {
    const running = this.prepare()
    running.catch((error) => {
      this.onError(error)
      clearTimeout(this.retry)
      this.retry = setTimeout(() => this.refresh(), RETRY_MS)
      this.retry.unref?.()
    })
    return running.catch(() => {})
  }

  private prepare(): Promise<void> {
    if (this.preparing) {
      this.again = true
      return this.preparing
    }
    this.preparing = (async () => {
      try {
        for (;;) {
          this.again = false
          const started = Date.now()
          this.prepared = await this.prepareOnce()
          if (!this.again) break
          // Under continuous change, preparing at most half the time leaves the database to the
          // projections and to other processes (at a million listings a preparation takes seconds).
          await new Promise((resolve) => setTimeout(resolve, Date.now() - started))
        }
      } finally {
        this.preparing = null
      }
    })()
    return this.preparing
  }

  /** The answers after the changes noted so far, from one snapshot of the live generation (on PostgreSQL, repeatable read). */
  private async prepareOnce(): Promise<Prepared> {
    const changes = this.changes
    this.changes = nothing()
    try {
      const generation = await liveTables(this.db).of(listingsProjection)
      const previous = this.prepared?.generation === generation.id && !changes.all ? this.prepared : null
      return await this.db.transaction(async (tx) => {
        if (this.db.kind === 'postgres') await tx.query('set transaction isolation level repeatable read, read only')
        const t = generation.tables
        const clock = await marketClock(tx, t)
        for (const { country, zone_no } of await placesOf(tx, t, changes.listings)) touchZone(changes, country, zone_no)
        const changed = !previous || clock !== previous.clock || changes.countries.size > 0 || changes.zones.size > 0
        const past = changed ? await pastFigures(tx, t) : null
        const countries = new Map<Country, PreparedCountry>()
        for (const country of COUNTRIES) {
          const before = previous?.countries.get(country)
          const zones = changes.zones.get(country)
          if (before && !past) {
            countries.set(country, before)
            continue
          }
          const whole = !before || changes.countries.has(country)
          const prepared = {
            zones: whole || zones ? await zonesOf(tx, t, country) : before.zones,
            active: whole ? await activeFigures(tx, t, country) : zones ? merged(before.active, zones, await activeFigures(tx, t, country, [...zones])) : before.active,
            past: past?.get(country) ?? new Map(),
          }
          countries.set(country, { ...prepared, facts: zoneFactsOf(country, prepared.zones, prepared.active, prepared.past) })
        }
        return { generation: generation.id, clock, countries }
      })
    } catch (error) {
      // What was not prepared is prepared in full by the next attempt.
      this.changes = everything()
      throw error
    }
  }
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
function merged(before: ActiveFigures, zones: ReadonlySet<number>, fresh: ActiveFigures): ActiveFigures {
  const result = new Map(before)
  for (const zone of zones) result.set(zone, fresh.get(zone) ?? [])
  return result
}
