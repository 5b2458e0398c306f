import { IdTable } from './listing-ids.ts'
import { BEDROOM_GROUPS, type Country, OPERATIONS, PROPERTY_TYPES, SOURCES } from '../../src/domain/market/vocabulary.ts'
import {
  type CountryZoneFacts,
  type Figures,
  type GroupRow,
  type ThenRow,
  type ZoneRow,
  zoneFactsOf,
} from './zone-statistics.ts'

/**
 * One history interval of a listing (a row of the listings read model's `history` table, version 3):
 * times in microseconds since the epoch (timestamptz precision), the price in whole cents and the
 * exact price per m² as SQL's text (30 decimals).
 */
export type Interval = {
  listingId: string
  country: string
  zone: number
  operation: string
  source: string
  propertyType: string
  bedrooms: number
  listedMicros: number
  cents: number
  ppm2: string
  fromMicros: number
  /** null while the interval is open. */
  toMicros: number | null
}

/** A (zone, time) at which a listing event touched a zone (a row of `touches`), the time in microseconds. */
export type Touch = { country: string; zone: number; micros: number }

const HOUR_MICROS = 3_600_000_000
/** Operation, source, property type and bedroom group of an interval, packed in one byte. */
const SALE = 1
const BROKER = 2
const TYPE_SHIFT = 2
const BEDROOMS_SHIFT = 5
const typeOf = (attrs: number) => (attrs >> TYPE_SHIFT) & 7
const bedroomsOf = (attrs: number) => attrs >> BEDROOMS_SHIFT
const BILLION_15 = 1e15

/**
 * The listings read model's history (intervals and zone touches) in memory, to answer as of any
 * instant what `countryZoneFactsAt` (zone-statistics.ts) answers in SQL, without SQL: one scan of
 * a country's intervals per instant, medians by selection instead of a sort. Columns of typed arrays
 * addressed by slot (about 70 bytes an interval); a listing's intervals are chained from its id so
 * that a change replaces them. Pure and synchronous.
 *
 * Exactness: price and listing time are whole numbers (cents, microseconds), exact in a double. The
 * price per m² is kept as its exact decimal in three doubles (whole part and two 15-digit halves of
 * the 30 decimals): the middle values are selected by a double key, and the few listings whose key
 * is too close to a middle one's to be ordered by it are ordered by the exact decimal.
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
  /** Country index + 1 (0: a free slot). */
  private country = new Uint8Array(1024)
  private zone = new Uint16Array(1024)
  private attrs = new Uint8Array(1024)
  private cents = new Float64Array(1024)
  private listed = new Float64Array(1024)
  private from = new Float64Array(1024)
  private to = new Float64Array(1024)
  private whole = new Float64Array(1024)
  private high = new Float64Array(1024)
  private low = new Float64Array(1024)

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
    const thenMicros = Math.floor(clock / 1000) * 1000 - 720 * HOUR_MICROS
    const zones: ZoneRow[] = []
    for (const [zone, times] of this.touches.get(country) ?? []) {
      if (zoneNo !== undefined && zone !== zoneNo) continue
      const i = upperBound(times, atMicros)
      if (i > 0) zones.push({ zone_no: zone, updated_at: new Date(Math.floor(times[i - 1]! / 1000)) })
    }
    zones.sort((a, b) => a.zone_no - b.zone_no)

    const countryNo = this.countries.indexOf(country) + 1
    const past = figures !== 'history'
    const activeByZone = this.slotsByZone(countryNo, zoneNo, atMicros)
    const active = new Map<number, GroupRow[]>()
    for (const [zone, slots] of activeByZone) active.set(zone, this.groupRows(zone, slots, figures))
    const then = new Map<number, ThenRow>()
    for (const [zone, slots] of past ? this.slotsByZone(countryNo, zoneNo, thenMicros) : []) {
      const sale = slots.filter((slot) => this.attrs[slot]! & SALE)
      then.set(zone, { zone_no: zone, n_active: slots.length, n_sale: sale.length, ppm2: this.medianPpm2(sale) })
    }
    return zoneFactsOf(country, zones, active, then)
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

  /** The rows `activeFigures` gives a zone for `figures` (GROUPINGS there), with the columns zoneFactsOf reads of each. */
  private groupRows(zone: number, slots: Int32Array, figures: Figures): GroupRow[] {
    const { attrs } = this
    const rows = [this.row(zone, 7, slots, 'all')]
    if (figures === 'detail') {
      PROPERTY_TYPES.forEach((type, t) => {
        const group = slots.filter((slot) => typeOf(attrs[slot]!) === t)
        if (group.length > 0) rows.push({ ...this.row(zone, 3, group, 'sale'), property_type: type })
      })
      BEDROOM_GROUPS.forEach((bedrooms, b) => {
        const group = slots.filter((slot) => bedroomsOf(attrs[slot]!) === b)
        if (group.length > 0) rows.push({ ...this.row(zone, 5, group, 'sale'), bedroom_group: bedrooms })
      })
    }
    if (figures !== 'summary') {
      OPERATIONS.forEach((operation) => {
        const sale = operation === 'Venta'
        const group = slots.filter((slot) => ((attrs[slot]! & SALE) === SALE) === sale)
        if (group.length > 0) rows.push({ ...this.row(zone, 6, group, 'own'), operation })
      })
    }
    return rows
  }

  /**
   * A row of `activeFigures` over `slots`: `sale` fills the counts and the medians over its sales,
   * `own` those over all of them, `all` the sale medians, the source counts and the median listing time.
   */
  private row(zone: number, grouped: number, slots: Int32Array, kind: 'all' | 'sale' | 'own'): GroupRow {
    const sale = kind === 'own' ? new Int32Array(0) : slots.filter((slot) => this.attrs[slot]! & SALE)
    let broker = 0
    if (kind === 'all') for (const slot of slots) broker += (this.attrs[slot]! & BROKER) >> 1
    return {
      zone_no: zone,
      grouped,
      property_type: null,
      bedroom_group: null,
      operation: null,
      n_active: slots.length,
      n_sale: sale.length,
      n_broker: broker,
      n_scraped: kind === 'all' ? slots.length - broker : 0,
      sale_ppm2: kind === 'own' ? null : this.medianPpm2(sale),
      sale_price: kind === 'own' ? null : medianOf(this.cents, sale, (a, b) => String(Math.ceil((a + b) / 2) / 100)),
      own_ppm2: kind === 'own' ? this.medianPpm2(slots) : null,
      own_price: kind === 'own' ? medianOf(this.cents, slots, (a, b) => String(Math.ceil((a + b) / 2) / 100)) : null,
      listed_ms: kind === 'all' ? medianOf(this.listed, slots, (a, b) => String((a + b) / 2000)) : null,
    }
  }

  /**
   * SQL's `round((middle₁ + middle₂) / 2, 2)` of the exact prices per m² of `slots` (null for none):
   * the middles selected by a double key, exact among the keys within 10⁻¹² of theirs; the mean
   * halved at 30 decimals (numeric division) and rounded to cents, halves away from zero.
   */
  private medianPpm2(slots: Int32Array): string | null {
    const n = slots.length
    if (n === 0) return null
    const keys = scratchOf(n)
    for (let i = 0; i < n; i++) keys[i] = this.keyOf(slots[i]!)
    const lowerKey = select(keys, n, (n - 1) >> 1)
    const upperKey = n % 2 === 1 ? lowerKey : minFrom(keys, n >> 1, n)
    const lower = this.exactAt(slots, (n - 1) >> 1, lowerKey)
    const upper = n % 2 === 1 ? lower : this.exactAt(slots, n >> 1, upperKey)
    const sum = lower + upper
    const half = (sum + (sum & 1n)) / 2n
    const [centsPart, rest] = [half / 10n ** 28n, half % 10n ** 28n]
    return String(Number(rest * 2n >= 10n ** 28n ? centsPart + 1n : centsPart) / 100)
  }

  private keyOf(slot: number): number {
    return this.whole[slot]! + this.high[slot]! / BILLION_15
  }

  /** The exact price per m² (units of 10⁻³⁰) of the `k`-th smallest among `slots`, whose key is `key`. */
  private exactAt(slots: Int32Array, k: number, key: number): bigint {
    const [bandLow, bandHigh] = [key - Math.abs(key) * 1e-12, key + Math.abs(key) * 1e-12]
    let below = 0
    const band: number[] = []
    for (const slot of slots) {
      const other = this.keyOf(slot)
      if (other < bandLow) below += 1
      else if (other <= bandHigh) band.push(slot)
    }
    const exact = band.map((slot) => BigInt(this.whole[slot]!) * 10n ** 30n + BigInt(this.high[slot]!) * 10n ** 15n + BigInt(this.low[slot]!))
    exact.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    return exact[k - below]!
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
    const [whole, high, low] = decimal30(interval.ppm2)
    const typeNo = PROPERTY_TYPES.indexOf(interval.propertyType as (typeof PROPERTY_TYPES)[number])
    this.country[slot] = countryNo
    this.zone[slot] = interval.zone
    this.attrs[slot] =
      (interval.operation === 'Venta' ? SALE : 0) |
      (interval.source === SOURCES[0] ? BROKER : 0) |
      ((typeNo < 0 ? 7 : typeNo) << TYPE_SHIFT) |
      (Math.min(interval.bedrooms, 4) << BEDROOMS_SHIFT)
    this.cents[slot] = interval.cents
    this.listed[slot] = interval.listedMicros
    this.from[slot] = interval.fromMicros
    this.to[slot] = interval.toMicros ?? Infinity
    this.whole[slot] = whole
    this.high[slot] = high
    this.low[slot] = low
    this.next[slot] = this.firstOf[listing]!
    this.firstOf[listing] = slot
  }

  private grow(slots: number): void {
    const size = slots > this.next.length * 2 ? slots : this.next.length * 2
    this.next = grown(this.next, size, -1)
    this.country = grown(this.country, size, 0)
    this.zone = grown(this.zone, size, 0)
    this.attrs = grown(this.attrs, size, 0)
    this.cents = grown(this.cents, size, 0)
    this.listed = grown(this.listed, size, 0)
    this.from = grown(this.from, size, 0)
    this.to = grown(this.to, size, 0)
    this.whole = grown(this.whole, size, 0)
    this.high = grown(this.high, size, 0)
    this.low = grown(this.low, size, 0)
  }
}

type Typed = Int32Array | Uint8Array | Uint16Array | Float64Array
function grown<T extends Typed>(array: T, size: number, fill: number): T {
  const bigger = new (array.constructor as new (size: number) => T)(size)
  bigger.set(array as never)
  bigger.fill(fill, array.length)
  return bigger
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

/** A 30-decimal SQL numeric as its whole part and two 15-digit halves of its decimals, each exact in a double. */
function decimal30(text: string): [number, number, number] {
  const match = /^(\d+)(?:\.(\d{1,30}))?$/.exec(text)
  if (!match) throw new Error(`price per m² ${text} is not a non-negative decimal of at most 30 places`)
  const fraction = (match[2] ?? '').padEnd(30, '0')
  return [Number(match[1]), Number(fraction.slice(0, 15)), Number(fraction.slice(15))]
}

let scratch = new Float64Array(1024)
function scratchOf(n: number): Float64Array {
  if (scratch.length < n) scratch = new Float64Array(Math.max(n, scratch.length * 2))
  return scratch
}

/** `mean(lower, upper)` of the middle values of `column` at `slots` (null for none), as SQL's text of it. */
function medianOf(column: Float64Array, slots: Int32Array, mean: (lower: number, upper: number) => string): string | null {
  const n = slots.length
  if (n === 0) return null
  const values = scratchOf(n)
  for (let i = 0; i < n; i++) values[i] = column[slots[i]!]!
  const lower = select(values, n, (n - 1) >> 1)
  return mean(lower, n % 2 === 1 ? lower : minFrom(values, n >> 1, n))
}

/**
 * The `k`-th smallest of `values[0, n)` (Hoare's selection), leaving every value before position k
 * at most it and every value after at least it.
 */
function select(values: Float64Array, n: number, k: number): number {
  let lo = 0
  let hi = n - 1
  while (hi > lo) {
    const mid = (lo + hi) >>> 1
    const [a, b, c] = [values[lo]!, values[mid]!, values[hi]!]
    const pivot = a < b ? (b < c ? b : a < c ? c : a) : a < c ? a : b < c ? c : b
    let i = lo
    let j = hi
    while (i <= j) {
      while (values[i]! < pivot) i++
      while (values[j]! > pivot) j--
      if (i <= j) {
        const swap = values[i]!
        values[i] = values[j]!
        values[j] = swap
        i++
        j--
      }
    }
    if (k <= j) hi = j
    else if (k >= i) lo = i
    else return values[k]!
  }
  return values[k]!
}

function minFrom(values: Float64Array, from: number, to: number): number {
  let min = Infinity
  for (let i = from; i < to; i++) if (values[i]! < min) min = values[i]!
  return min
}
