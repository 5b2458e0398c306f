import { IdTable } from './listing-ids.ts'
import { ComparableFigures, type IntervalFigures } from './comparable-figures.ts'
import type { ComparableListing } from '../../src/domain/market/comparable.ts'
import { grown, ListingColumns, type StatisticsListing } from '../../src/domain/market/listing-columns.ts'
import { type Country, OPERATIONS, type Operation, PROPERTY_TYPES, type PropertyType } from '../../src/domain/market/vocabulary.ts'
import type { CountryZoneFacts, Figures, ZoneNow, ZoneSeen, ZoneThen } from '../../src/domain/market/zone-statistics.ts'
import { changeWindowStart, zoneFactsOf, zoneNow, zoneThen } from '../../src/domain/market/zone-statistics.ts'

/**
 * One history interval of a listing (a row of the listings read model's `history` table, version 4):
 * times in microseconds since the epoch (timestamptz precision), the price in whole cents and the
 * exact price per m² as SQL's text (30 decimals).
 */
export type Interval = StatisticsListing & IntervalFigures & {
  listingId: string
  country: string
  zone: number
  fromMicros: number
  /** null while the interval is open. */
  toMicros: number | null
}

/** A (zone, time) at which a listing event touched a zone (a row of `touches`), the time in microseconds. */
export type Touch = { country: string; zone: number; micros: number }

/**
 * The listings read model's history (intervals and zone touches) in memory, to answer as of any
 * instant what `countryZoneFactsAt` (zone-rows.ts) answers from SQL rows, without SQL: one scan of
 * a country's intervals per instant selects the intervals open then, and the zone statistics
 * (src/domain/market/zone-statistics.ts) are computed from them; the same scan finds the listings an
 * estimate compares with (comparablesAt). Columns of typed arrays addressed by slot (about 92 bytes an
 * interval: what the statistics read is in ListingColumns, what an estimate reads besides in
 * ComparableFigures, 18 bytes, the rest here, the listing's slot 4 of them); a listing's intervals are
 * chained from its id so that a change replaces them. Pure and synchronous.
 */
export class HistoryIndex {
  private readonly ids = new IdTable()
  private listings = 0
  private readonly freeListings: number[] = []
  /** Per listing slot, its first interval slot (-1 none). */
  private firstOf = new Int32Array(1024).fill(-1)

  private slots = 0
  private readonly freeSlots: number[] = []
  private next = new Int32Array(1024)
  /** The listing slot (its id in `ids`) of each interval slot. */
  private owner = new Int32Array(1024)
  /** Country index + 1 (0: a free slot). */
  private country = new Uint8Array(1024)
  private zone = new Uint16Array(1024)
  private from = new Float64Array(1024)
  private to = new Float64Array(1024)
  private readonly columns = new ListingColumns(1024)
  private readonly figures = new ComparableFigures(1024)

  /** Per country and zone, the touch times in ascending order. */
  private readonly touches = new Map<string, Map<number, number[]>>()
  private readonly countries: string[] = []
  /**
   * Per country index, slots [first, end) hold all its intervals: a country is loaded at a time, so
   * its range is tight; slots reused by another country later may widen it (slower, never wrong).
   */
  private readonly ranges: { first: number; end: number }[] = []

  /** An index of `touches` and of `intervals` (added in parts by `add`, room made for `expected` of them at once). */
  static of(touches: Iterable<Touch>, expected = 0): HistoryIndex {
    const index = new HistoryIndex()
    if (expected > index.next.length) index.grow(expected)
    const byZone = new Map<string, Map<number, number[]>>()
    for (const touch of touches) {
      const zones = byZone.get(touch.country) ?? new Map<number, number[]>()
      byZone.set(touch.country, zones)
      const times = zones.get(touch.zone) ?? []
      zones.set(touch.zone, times)
      times.push(touch.micros)
    }
    for (const [country, zones] of byZone) {
      for (const [zone, times] of zones) {
        times.sort((a, b) => a - b)
        index.zoneTouches(country).set(zone, times.filter((t, i) => i === 0 || t !== times[i - 1]))
      }
    }
    return index
  }

  /** Intervals held, for measurements. */
  get size(): number {
    return this.slots - this.freeSlots.length
  }

  /** Replaces every interval of listing `id` by `intervals` (all of that listing; none takes it out). */
  replace(id: string, intervals: readonly Interval[]): void {
    const listing = this.ids.slotOf(id)
    if (listing !== undefined) {
      for (let slot = this.firstOf[listing]!; slot >= 0; slot = this.next[slot]!) {
        this.country[slot] = 0
        this.freeSlots.push(slot)
      }
      this.firstOf[listing] = -1
      this.ids.clear(listing)
      this.freeListings.push(listing)
    }
    for (const interval of intervals) this.add(interval)
  }

  /** Records a touch (no-op when known). */
  touch(touch: Touch): void {
    const zones = this.zoneTouches(touch.country)
    const times = zones.get(touch.zone) ?? []
    zones.set(touch.zone, times)
    const at = upperBound(times, touch.micros)
    if (at > 0 && times[at - 1] === touch.micros) return
    times.splice(at, 0, touch.micros)
  }

  /** The first listing event's time in microseconds, or null without any. */
  firstEventMicros(): number | null {
    let first: number | null = null
    for (const zones of this.touches.values()) {
      for (const times of zones.values()) if (times.length > 0 && (first === null || times[0]! < first)) first = times[0]!
    }
    return first
  }

  /**
   * What `countryZoneFactsAt` answers: the statistics of the zones of `country` as the market stood at
   * `at` (only `zoneNo` when given; only `figures`).
   */
  factsAt(country: Country, at: Date, zoneNo?: number, figures: Figures = 'detail'): CountryZoneFacts {
    const atMicros = at.getTime() * 1000
    // The market's clock at `at`: the latest touch anywhere by then; its rows carry milliseconds.
    let clock = -Infinity
    for (const zones of this.touches.values()) {
      for (const times of zones.values()) {
        const i = upperBound(times, atMicros)
        if (i > 0 && times[i - 1]! > clock) clock = times[i - 1]!
      }
    }
    if (clock === -Infinity) return new Map()
    const thenMicros = changeWindowStart(Math.floor(clock / 1000)) * 1000
    const seen: ZoneSeen[] = []
    for (const [zone, times] of this.touches.get(country) ?? []) {
      if (zoneNo !== undefined && zone !== zoneNo) continue
      const i = upperBound(times, atMicros)
      if (i > 0) seen.push({ zoneNo: zone, updatedAt: new Date(Math.floor(times[i - 1]! / 1000)).toISOString() })
    }
    seen.sort((a, b) => a.zoneNo - b.zoneNo)

    const countryNo = this.countries.indexOf(country) + 1
    const now = new Map<number, ZoneNow>()
    for (const [zone, slots] of this.slotsByZone(countryNo, zoneNo, atMicros)) now.set(zone, zoneNow(this.columns, slots, figures))
    const then = new Map<number, ZoneThen>()
    for (const [zone, slots] of figures === 'history' ? [] : this.slotsByZone(countryNo, zoneNo, thenMicros)) then.set(zone, zoneThen(this.columns, slots))
    return zoneFactsOf(country, seen, now, then)
  }

  /**
   * The listings of `country`'s zone `zoneNo`, of `operation` and `propertyType`, that were public at
   * `at` (an interval open then, by factsAt's rule, and public from `at` or before), in listing id
   * order (the databases' order, as IdTable compares), each with its figures then.
   */
  comparablesAt(country: Country, zoneNo: number, operation: string, propertyType: string, at: Date): ComparableListing[] {
    const micros = at.getTime() * 1000
    const countryNo = this.countries.indexOf(country) + 1
    const { first, end } = this.ranges[countryNo - 1] ?? { first: 0, end: 0 }
    const { country: countryOf, zone, from, to, figures } = this
    const open: number[] = []
    for (let slot = first; slot < end; slot++) {
      if (countryOf[slot] !== countryNo || zone[slot] !== zoneNo || from[slot]! > micros || to[slot]! <= micros) continue
      if (figures.publicAt(slot, micros)) open.push(slot)
    }
    // A word outside the vocabulary is index -1, which no slot has: nothing is kept.
    const ofOperation = this.columns.where(Int32Array.from(open), 'operation', OPERATIONS.indexOf(operation as Operation))
    const kept = [...this.columns.where(ofOperation, 'propertyType', PROPERTY_TYPES.indexOf(propertyType as PropertyType))]
    kept.sort((a, b) => this.ids.compare(this.owner[a]!, this.owner[b]!))
    return kept.map((slot) => ({
      id: this.ids.idAt(this.owner[slot]!),
      areaM2: figures.areaM2(slot),
      bedrooms: figures.bedroomsOf(slot),
      bathrooms: figures.bathroomsOf(slot),
      cents: this.columns.cents[slot]!,
    }))
  }

  // ---- internals --------------------------------------------------------------------------------

  /**
   * The slots of country `countryNo` (only zone `zoneNo` when given) open at `micros`, per zone: a
   * count per zone, then each zone's slots placed in its part of one array (no list grows).
   */
  private slotsByZone(countryNo: number, zoneNo: number | undefined, micros: number): Map<number, Int32Array> {
    const { country, zone: zoneOf, from, to } = this
    const { first, end } = this.ranges[countryNo - 1] ?? { first: 0, end: 0 }
    const counts = new Int32Array(65_536)
    let total = 0
    let last = 0
    for (let slot = first; slot < end; slot++) {
      if (country[slot] !== countryNo || from[slot]! > micros || to[slot]! <= micros) continue
      const zone = zoneOf[slot]!
      if (zoneNo !== undefined && zone !== zoneNo) continue
      counts[zone]! += 1
      total += 1
      if (zone > last) last = zone
    }
    const placed = new Int32Array(total)
    const next = new Int32Array(65_536)
    const byZone = new Map<number, Int32Array>()
    let at = 0
    for (let zone = 0; zone <= last; zone++) {
      if (counts[zone] === 0) continue
      byZone.set(zone, placed.subarray(at, at + counts[zone]!))
      next[zone] = at
      at += counts[zone]!
    }
    if (total === 0) return byZone
    for (let slot = first; slot < end; slot++) {
      if (country[slot] !== countryNo || from[slot]! > micros || to[slot]! <= micros) continue
      const zone = zoneOf[slot]!
      if (zoneNo !== undefined && zone !== zoneNo) continue
      placed[next[zone]!++] = slot
    }
    return byZone
  }

  private zoneTouches(country: string): Map<number, number[]> {
    let zones = this.touches.get(country)
    if (!zones) this.touches.set(country, (zones = new Map()))
    return zones
  }

  /** Adds an interval of a listing (loading: `replace` changes a listing's intervals). */
  add(interval: Interval): void {
    let listing = this.ids.slotOf(interval.listingId)
    if (listing === undefined) {
      listing = this.freeListings.pop() ?? this.listings++
      this.ids.reserve(listing + 1)
      if (listing >= this.firstOf.length) this.firstOf = grown(this.firstOf, Math.max(listing + 1, this.firstOf.length * 2), -1)
      this.ids.set(listing, interval.listingId)
      this.firstOf[listing] = -1
    }
    const slot = this.freeSlots.pop() ?? this.slots++
    if (slot >= this.next.length) this.grow(slot + 1)
    let countryNo = this.countries.indexOf(interval.country) + 1
    if (countryNo === 0) {
      countryNo = this.countries.push(interval.country)
      this.ranges.push({ first: slot, end: slot + 1 })
    }
    const range = this.ranges[countryNo - 1]!
    if (slot < range.first) range.first = slot
    if (slot >= range.end) range.end = slot + 1
    this.country[slot] = countryNo
    this.zone[slot] = interval.zone
    this.columns.set(slot, interval)
    this.figures.set(slot, interval)
    this.owner[slot] = listing
    this.from[slot] = interval.fromMicros
    this.to[slot] = interval.toMicros ?? Infinity
    this.next[slot] = this.firstOf[listing]!
    this.firstOf[listing] = slot
  }

  private grow(slots: number): void {
    const size = slots > this.next.length * 2 ? slots : this.next.length * 2
    this.next = grown(this.next, size, -1)
    this.owner = grown(this.owner, size)
    this.country = grown(this.country, size, 0)
    this.zone = grown(this.zone, size, 0)
    this.from = grown(this.from, size, 0)
    this.to = grown(this.to, size, 0)
    this.columns.grow(size)
    this.figures.grow(size)
  }
}

/** Position after the last element ≤ `value` of the ascending `times`. */
function upperBound(times: readonly number[], value: number): number {
  let lo = 0
  let hi = times.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (times[mid]! <= value) lo = mid + 1
    else hi = mid
  }
  return lo
}
