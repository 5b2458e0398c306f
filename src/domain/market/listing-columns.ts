import { BEDROOM_GROUPS, bedroomGroup, OPERATIONS, PROPERTY_TYPES, SOURCES } from './vocabulary.ts'

/**
 * Listings as the zone statistics read them (zone-statistics.ts), in columns of typed arrays addressed
 * by slot: a million of them fit in ~50 MB and a median is a selection over one column, without
 * objects. Who fills them decides what a slot is (a listing now, a history interval); the statistics
 * are handed the slots to count. No rule of the product here: the columns and how to find the values
 * at given ranks of a column, exactly.
 *
 * Exactness: price and listing time are whole numbers (cents, microseconds), exact in a double. The
 * price per m² is kept as its exact decimal in three doubles (whole part and two 15-digit halves of
 * its 30 decimals): values are ranked by a double key, and the few whose key is too close to the one
 * at a rank to be ordered by it are ordered by the exact decimal.
 */

/** A listing's figures the statistics read: the price in whole cents, the exact price per m² as SQL's text of it. */
export type StatisticsListing = {
  operation: string
  source: string
  propertyType: string
  bedrooms: number
  listedMicros: number
  cents: number
  ppm2: string
}

/** Operation, source, property type and bedroom group of a slot, packed in one byte (their indexes in the vocabulary). */
const SOURCE_SHIFT = 1
const TYPE_SHIFT = 2
const BEDROOMS_SHIFT = 5
const BILLION_15 = 1e15

/** What a slot's packed byte says, each as [shift, mask]: indexes in OPERATIONS, SOURCES, PROPERTY_TYPES, BEDROOM_GROUPS. */
const ATTRIBUTE_BITS = { operation: [0, 1], source: [SOURCE_SHIFT, 1], propertyType: [TYPE_SHIFT, 7], bedroomGroup: [BEDROOMS_SHIFT, 7] } as const
export type Attribute = keyof typeof ATTRIBUTE_BITS

export class ListingColumns {
  attrs: Uint8Array
  cents: Float64Array
  listedMicros: Float64Array
  private whole: Float64Array
  private high: Float64Array
  private low: Float64Array

  constructor(capacity = 1024) {
    this.attrs = new Uint8Array(capacity)
    this.cents = new Float64Array(capacity)
    this.listedMicros = new Float64Array(capacity)
    this.whole = new Float64Array(capacity)
    this.high = new Float64Array(capacity)
    this.low = new Float64Array(capacity)
  }

  /** Room for `size` slots at least (doubling). */
  grow(size: number): void {
    if (size <= this.attrs.length) return
    const to = Math.max(size, this.attrs.length * 2)
    this.attrs = grown(this.attrs, to)
    this.cents = grown(this.cents, to)
    this.listedMicros = grown(this.listedMicros, to)
    this.whole = grown(this.whole, to)
    this.high = grown(this.high, to)
    this.low = grown(this.low, to)
  }

  set(slot: number, listing: StatisticsListing): void {
    const [whole, high, low] = decimal30(listing.ppm2)
    const typeNo = PROPERTY_TYPES.indexOf(listing.propertyType as (typeof PROPERTY_TYPES)[number])
    this.attrs[slot] =
      OPERATIONS.indexOf(listing.operation as (typeof OPERATIONS)[number]) |
      (SOURCES.indexOf(listing.source as (typeof SOURCES)[number]) << SOURCE_SHIFT) |
      ((typeNo < 0 ? 7 : typeNo) << TYPE_SHIFT) |
      (BEDROOM_GROUPS.indexOf(bedroomGroup(listing.bedrooms)) << BEDROOMS_SHIFT)
    this.cents[slot] = listing.cents
    this.listedMicros[slot] = listing.listedMicros
    this.whole[slot] = whole
    this.high[slot] = high
    this.low[slot] = low
  }

  /**
   * The slots of `slots` whose `attribute` is the `value`-th word of its vocabulary (a property type
   * outside PROPERTY_TYPES is 7), in order. A plain loop over the packed byte: a typed array's
   * `filter` with a callback and its iterator cost more than the selection on JavaScriptCore.
   */
  where(slots: Int32Array, attribute: Attribute, value: number): Int32Array {
    const [shift, mask] = ATTRIBUTE_BITS[attribute]
    const { attrs } = this
    const kept = new Int32Array(slots.length)
    let n = 0
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i]!
      if (((attrs[slot]! >> shift) & mask) === value) kept[n++] = slot
    }
    return kept.subarray(0, n)
  }

  /** How many of `slots` have `attribute` `value` (see `where`). */
  count(slots: Int32Array, attribute: Attribute, value: number): number {
    const [shift, mask] = ATTRIBUTE_BITS[attribute]
    const { attrs } = this
    let n = 0
    for (let i = 0; i < slots.length; i++) if (((attrs[slots[i]!]! >> shift) & mask) === value) n += 1
    return n
  }

  /** The values of `column` at ranks `lower` ≤ `upper` (at most one apart) among `slots` (non-empty), ascending. */
  atRanks(column: 'cents' | 'listedMicros', slots: Int32Array, lower: number, upper: number): [number, number] {
    const values = scratchOf(slots.length)
    const source = this[column]
    for (let i = 0; i < slots.length; i++) values[i] = source[slots[i]!]!
    const low = select(values, slots.length, lower)
    return [low, upper === lower ? low : minFrom(values, upper, slots.length)]
  }

  /** The exact prices per m² (in units of 10⁻³⁰) at ranks `lower` ≤ `upper` (at most one apart) among `slots` (non-empty). */
  ppm2AtRanks(slots: Int32Array, lower: number, upper: number): [bigint, bigint] {
    const n = slots.length
    const keys = scratchOf(n)
    for (let i = 0; i < n; i++) keys[i] = this.keyOf(slots[i]!)
    const lowerKey = select(keys, n, lower)
    const low = this.exactAt(slots, lower, lowerKey)
    return [low, upper === lower ? low : this.exactAt(slots, upper, minFrom(keys, upper, n))]
  }

  private keyOf(slot: number): number {
    return this.whole[slot]! + this.high[slot]! / BILLION_15
  }

  /** The exact price per m² of rank `k` among `slots`, whose key is `key`. */
  private exactAt(slots: Int32Array, k: number, key: number): bigint {
    const [bandLow, bandHigh] = [key - Math.abs(key) * 1e-12, key + Math.abs(key) * 1e-12]
    let below = 0
    const band: number[] = []
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i]!
      const other = this.keyOf(slot)
      if (other < bandLow) below += 1
      else if (other <= bandHigh) band.push(slot)
    }
    const exact = band.map((slot) => BigInt(this.whole[slot]!) * 10n ** 30n + BigInt(this.high[slot]!) * 10n ** 15n + BigInt(this.low[slot]!))
    exact.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    return exact[k - below]!
  }
}

type Typed = Int32Array | Uint8Array | Uint16Array | Float64Array
/** `array` copied into a larger one of `size`, the new part filled with `fill`. */
export function grown<T extends Typed>(array: T, size: number, fill = 0): T {
  const bigger = new (array.constructor as new (size: number) => T)(size)
  bigger.set(array as never)
  if (fill !== 0) bigger.fill(fill, array.length)
  return bigger
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

/** The smallest of `values[from, to)`: after `select(…, from - 1)`, the value of rank `from`. */
function minFrom(values: Float64Array, from: number, to: number): number {
  let min = Infinity
  for (let i = from; i < to; i++) if (values[i]! < min) min = values[i]!
  return min
}
