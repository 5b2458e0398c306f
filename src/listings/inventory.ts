import type { ListingSearch } from './search.ts'

/**
 * The sort and filter keys of one public listing: all /listings needs to pick and order a page.
 * `listedMicros` is listed_at in microseconds since the epoch (timestamptz precision), `priceCents`
 * the USD price in whole cents (numeric(16,2) exactly; feed prices keep it far below 2^53).
 */
export type ListingKey = {
  id: string
  country: string
  zone: number
  operation: string
  propertyType: string
  listedMicros: number
  priceCents: number
}

/** A page of ids in the search's order and the number of all matches. */
export type InventoryPage = { total: number; ids: string[] }

const bucketKey = (country: string, zone: number, operation: string, propertyType: string) =>
  `${country}\u0000${zone}\u0000${operation}\u0000${propertyType}`

/**
 * Listing ids compare as the databases order them: both use the C collation (byte order), which for
 * JavaScript strings is code-unit order as long as ids are ASCII (they are `lst_` + hex).
 */
const before = (a: string, b: string) => a < b

/** The listings of one country, zone, operation and property type, in both orders the search needs. */
class Bucket {
  /** Slots, newest first: listed_at desc, listing_id desc. */
  newest: Int32Array
  /** Slots by price: price asc, listing_id asc (read backwards for price desc, listing_id desc). */
  byPrice: Int32Array
  size = 0

  constructor(
    readonly country: string,
    readonly zone: number,
    readonly operation: string,
    readonly propertyType: string,
    capacity = 4,
  ) {
    this.newest = new Int32Array(capacity)
    this.byPrice = new Int32Array(capacity)
  }

  reserve(capacity: number): void {
    if (capacity <= this.newest.length) return
    const grown = Math.max(capacity, this.newest.length * 2)
    const newest = new Int32Array(grown)
    newest.set(this.newest.subarray(0, this.size))
    const byPrice = new Int32Array(grown)
    byPrice.set(this.byPrice.subarray(0, this.size))
    this.newest = newest
    this.byPrice = byPrice
  }
}

/** A cursor over part of one bucket's order, for the k-way merge. */
type Run = { slots: Int32Array; at: number; end: number; step: 1 | -1 }

/**
 * An in-memory index of the public listings: compact keys per listing (columns of typed arrays
 * addressed by slot), grouped in buckets per country, zone, operation and property type, each
 * bucket holding its slots in the newest and the price order. A search touches the matching buckets
 * only: exact totals from bucket sizes (binary search on price for a price range), the page by a
 * k-way merge of the buckets' orders. Pure and synchronous: an update applied between two awaits is
 * never seen half-done.
 */
export class ListingIndex {
  private ids: string[] = []
  private micros = new Float64Array(1024)
  private cents = new Float64Array(1024)
  private bucketOf: (Bucket | undefined)[] = []
  private readonly slotOf = new Map<string, number>()
  private readonly free: number[] = []
  private readonly buckets = new Map<string, Bucket>()
  private readonly byCountry = new Map<string, Bucket[]>()

  /** An index of `keys` (one per listing), sorted in bulk. */
  static of(keys: Iterable<ListingKey>): ListingIndex {
    const index = new ListingIndex()
    const members = new Map<Bucket, number[]>()
    for (const key of keys) {
      if (index.slotOf.has(key.id)) throw new Error(`listing ${key.id} given twice`)
      const slot = index.store(key)
      const bucket = index.bucketFor(key)
      index.bucketOf[slot] = bucket
      let list = members.get(bucket)
      if (!list) members.set(bucket, (list = []))
      list.push(slot)
    }
    for (const [bucket, slots] of members) {
      bucket.reserve(slots.length)
      bucket.size = slots.length
      bucket.newest.set(slots)
      bucket.newest.subarray(0, slots.length).sort(index.newestOrder)
      bucket.byPrice.set(slots)
      bucket.byPrice.subarray(0, slots.length).sort(index.priceOrder)
    }
    return index
  }

  get size(): number {
    return this.slotOf.size
  }

  has(id: string): boolean {
    return this.slotOf.has(id)
  }

  /** Adds the listing, or moves it to its new keys. */
  put(key: ListingKey): void {
    this.remove(key.id)
    const slot = this.store(key)
    const bucket = this.bucketFor(key)
    this.bucketOf[slot] = bucket
    bucket.reserve(bucket.size + 1)
    insertSorted(bucket.newest, bucket.size, slot, this.newestOrder)
    insertSorted(bucket.byPrice, bucket.size, slot, this.priceOrder)
    bucket.size += 1
  }

  /** Takes the listing out (no-op when absent). */
  remove(id: string): void {
    const slot = this.slotOf.get(id)
    if (slot === undefined) return
    const bucket = this.bucketOf[slot]!
    removeSorted(bucket.newest, bucket.size, slot, this.newestOrder)
    removeSorted(bucket.byPrice, bucket.size, slot, this.priceOrder)
    bucket.size -= 1
    this.slotOf.delete(id)
    this.bucketOf[slot] = undefined
    this.ids[slot] = ''
    this.free.push(slot)
  }

  /** The ids of the page `search` asks for, in its order, and the number of all matches. */
  search(search: Pick<ListingSearch, 'country' | 'zone' | 'operation' | 'property_type' | 'price_min' | 'price_max' | 'sort' | 'limit' | 'offset'>): InventoryPage {
    const buckets = (this.byCountry.get(search.country) ?? []).filter(
      (b) =>
        b.size > 0 &&
        (search.zone === null || b.zone === search.zone) &&
        (search.operation === null || b.operation === search.operation) &&
        (search.property_type === null || b.propertyType === search.property_type),
    )
    const low = search.price_min === null ? -Infinity : lowestCentsAtLeast(search.price_min)
    const high = search.price_max === null ? Infinity : highestCentsAtMost(search.price_max)
    const priced = search.price_min !== null || search.price_max !== null
    // Per bucket, the part of its price order within the range: [from, to).
    const ranges = buckets.map((b) => ({
      bucket: b,
      from: priced ? this.firstPriceAtLeast(b, low) : 0,
      to: priced ? this.firstPriceAtLeast(b, high + 1) : b.size,
    }))
    let total = 0
    for (const r of ranges) total += r.to - r.from
    const wanted = Math.min(total, search.offset + search.limit)
    if (search.offset >= wanted) return { total, ids: [] }

    let slots: number[]
    if (search.sort === 'price_asc') {
      slots = this.merge(
        ranges.map((r) => ({ slots: r.bucket.byPrice, at: r.from, end: r.to, step: 1 })),
        this.priceAscFirst,
        wanted,
      )
    } else if (search.sort === 'price_desc') {
      slots = this.merge(
        ranges.map((r) => ({ slots: r.bucket.byPrice, at: r.to - 1, end: r.from - 1, step: -1 })),
        this.priceDescFirst,
        wanted,
      )
    } else if (!priced) {
      slots = this.merge(
        ranges.map((r) => ({ slots: r.bucket.newest, at: 0, end: r.bucket.size, step: 1 })),
        this.newestFirst,
        wanted,
      )
    } else {
      slots = this.newestInPriceRange(ranges, total, wanted, low, high)
    }
    return { total, ids: slots.slice(search.offset).map((slot) => this.ids[slot]!) }
  }

  // ---- internals --------------------------------------------------------------------------------

  private readonly newestFirst = (a: number, b: number) =>
    this.micros[a]! > this.micros[b]! || (this.micros[a] === this.micros[b] && before(this.ids[b]!, this.ids[a]!))
  private readonly priceAscFirst = (a: number, b: number) =>
    this.cents[a]! < this.cents[b]! || (this.cents[a] === this.cents[b] && before(this.ids[a]!, this.ids[b]!))
  private readonly priceDescFirst = (a: number, b: number) => this.priceAscFirst(b, a)
  private readonly newestOrder = (a: number, b: number) => (this.newestFirst(a, b) ? -1 : this.newestFirst(b, a) ? 1 : 0)
  private readonly priceOrder = (a: number, b: number) => (this.priceAscFirst(a, b) ? -1 : this.priceAscFirst(b, a) ? 1 : 0)

  /**
   * Newest first among the listings of a price range. Either walk the buckets' newest orders
   * skipping listings outside the range (about wanted × size / total steps), or collect the range's
   * listings from the price orders and sort them (total steps): whichever is cheaper.
   */
  private newestInPriceRange(
    ranges: readonly { bucket: Bucket; from: number; to: number }[],
    total: number,
    wanted: number,
    low: number,
    high: number,
  ): number[] {
    let size = 0
    for (const r of ranges) size += r.bucket.size
    if (total * Math.log2(total + 2) <= (wanted * size) / total) {
      const all: number[] = []
      for (const r of ranges) for (let i = r.from; i < r.to; i++) all.push(r.bucket.byPrice[i]!)
      return all.sort(this.newestOrder).slice(0, wanted)
    }
    const inRange = (slot: number) => this.cents[slot]! >= low && this.cents[slot]! <= high
    return this.merge(
      ranges.filter((r) => r.to > r.from).map((r) => ({ slots: r.bucket.newest, at: 0, end: r.bucket.size, step: 1 })),
      this.newestFirst,
      wanted,
      inRange,
    )
  }

  /** The first `wanted` slots of the runs merged in the order `first` (and passing `keep`). */
  private merge(runs: Run[], first: (a: number, b: number) => boolean, wanted: number, keep?: (slot: number) => boolean): number[] {
    const heap = runs.filter((r) => r.at !== r.end)
    const out: number[] = []
    if (heap.length === 1 && !keep) {
      const [run] = heap
      for (let i = run!.at; i !== run!.end && out.length < wanted; i += run!.step) out.push(run!.slots[i]!)
      return out
    }
    const head = (r: Run) => r.slots[r.at]!
    const earlier = (i: number, j: number) => first(head(heap[i]!), head(heap[j]!))
    const down = (from: number) => {
      let i = from
      for (;;) {
        const l = 2 * i + 1
        const r = l + 1
        let top = i
        if (l < heap.length && earlier(l, top)) top = l
        if (r < heap.length && earlier(r, top)) top = r
        if (top === i) return
        ;[heap[i], heap[top]] = [heap[top]!, heap[i]!]
        i = top
      }
    }
    for (let i = (heap.length >> 1) - 1; i >= 0; i--) down(i)
    while (heap.length > 0 && out.length < wanted) {
      const run = heap[0]!
      const slot = head(run)
      if (!keep || keep(slot)) out.push(slot)
      run.at += run.step
      if (run.at === run.end) {
        heap[0] = heap[heap.length - 1]!
        heap.pop()
      }
      down(0)
    }
    return out
  }

  /** Position of the first listing of `bucket`'s price order priced at least `cents`. */
  private firstPriceAtLeast(bucket: Bucket, cents: number): number {
    let lo = 0
    let hi = bucket.size
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.cents[bucket.byPrice[mid]!]! < cents) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  private store(key: ListingKey): number {
    const slot = this.free.pop() ?? this.ids.length
    if (slot >= this.micros.length) {
      const micros = new Float64Array(this.micros.length * 2)
      micros.set(this.micros)
      const cents = new Float64Array(this.cents.length * 2)
      cents.set(this.cents)
      this.micros = micros
      this.cents = cents
    }
    this.ids[slot] = key.id
    this.micros[slot] = key.listedMicros
    this.cents[slot] = key.priceCents
    this.slotOf.set(key.id, slot)
    return slot
  }

  private bucketFor(key: ListingKey): Bucket {
    const name = bucketKey(key.country, key.zone, key.operation, key.propertyType)
    let bucket = this.buckets.get(name)
    if (!bucket) {
      bucket = new Bucket(key.country, key.zone, key.operation, key.propertyType)
      this.buckets.set(name, bucket)
      const list = this.byCountry.get(key.country) ?? []
      list.push(bucket)
      this.byCountry.set(key.country, list)
    }
    return bucket
  }
}

/** Position where `slot` belongs in the sorted `slots[0, size)`. */
function positionOf(slots: Int32Array, size: number, slot: number, order: (a: number, b: number) => number): number {
  let lo = 0
  let hi = size
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (order(slots[mid]!, slot) < 0) lo = mid + 1
    else hi = mid
  }
  return lo
}

function insertSorted(slots: Int32Array, size: number, slot: number, order: (a: number, b: number) => number): void {
  const at = positionOf(slots, size, slot, order)
  slots.copyWithin(at + 1, at, size)
  slots[at] = slot
}

function removeSorted(slots: Int32Array, size: number, slot: number, order: (a: number, b: number) => number): void {
  const at = positionOf(slots, size, slot, order)
  if (slots[at] !== slot) throw new Error('listing index out of order')
  slots.copyWithin(at, at + 1, size)
}

/**
 * A price bound as SQL compares it (`price_usd >= $1::numeric` with the bound's `String(number)`),
 * in whole cents: the bound's exact decimal, rounded up for a lower bound and down for an upper one.
 * Never through floating point (0.07 × 100 is 7.000000000000001).
 */
function boundCents(amount: number, roundUp: boolean): number {
  const match = /^([0-9]+)(?:\.([0-9]+))?$/.exec(String(amount))
  if (!match) throw new Error(`price bound ${amount} is not a plain decimal`)
  const fraction = match[2] ?? ''
  const cents = BigInt(match[1]!) * 100n + BigInt(fraction.slice(0, 2).padEnd(2, '0'))
  const beyond = /[1-9]/.test(fraction.slice(2))
  const exact = roundUp && beyond ? cents + 1n : cents
  // Prices stay far below 2^53 cents: a bound past that only needs to stay past every price.
  return exact > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(exact)
}

export const lowestCentsAtLeast = (amount: number) => boundCents(amount, true)
export const highestCentsAtMost = (amount: number) => boundCents(amount, false)
