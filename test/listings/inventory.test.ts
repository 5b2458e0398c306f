import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { highestCentsAtMost, type ListingKey, ListingIndex, lowestCentsAtLeast } from '../../projections/listings/inventory-index.ts'
import type { ListingSearch } from '../../projections/listings/search.ts'
import { listingSearchOf } from '../../src/listings/search-query.ts'

const aKey = (overrides: Partial<ListingKey> = {}): ListingKey => ({
  id: 'lst_a',
  country: 'GT',
  zone: 10,
  operation: 'Venta',
  propertyType: 'Apartamento',
  listedMicros: 1_772_359_200_000_000,
  priceCents: 20_000_000,
  areaM2: 120,
  bedrooms: 2,
  bathrooms: 1.5,
  ...overrides,
})

/** The search of a query without parameters (its defaults are specified in search.test.ts), with `overrides`. */
const aSearch = (overrides: Partial<ListingSearch> = {}): ListingSearch => ({ ...listingSearchOf({}), ...overrides })

/** What SQL answers, by brute force over the keys: filter, sort with the id as tie-breaker, slice. */
function bruteForce(keys: readonly ListingKey[], s: ListingSearch) {
  const low = s.price_min === null ? -Infinity : lowestCentsAtLeast(s.price_min)
  const high = s.price_max === null ? Infinity : highestCentsAtMost(s.price_max)
  const byId = (a: ListingKey, b: ListingKey) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  const order = {
    newest: (a: ListingKey, b: ListingKey) => b.listedMicros - a.listedMicros || byId(b, a),
    price_asc: (a: ListingKey, b: ListingKey) => a.priceCents - b.priceCents || byId(a, b),
    price_desc: (a: ListingKey, b: ListingKey) => b.priceCents - a.priceCents || byId(b, a),
  }[s.sort]
  const matching = keys
    .filter(
      (k) =>
        k.country === s.country &&
        (s.zone === null || k.zone === s.zone) &&
        (s.operation === null || k.operation === s.operation) &&
        (s.property_type === null || k.propertyType === s.property_type) &&
        k.priceCents >= low &&
        k.priceCents <= high,
    )
    .sort(order)
  return { total: matching.length, ids: matching.slice(s.offset, s.offset + s.limit).map((k) => k.id) }
}

describe('price bounds in cents, as SQL compares the bound’s decimal', () => {
  it('takes the decimal of the number, never its binary approximation times 100', () => {
    // 0.07 * 100 is 7.000000000000001 in floating point: a 0.07 price must still match price_min=0.07.
    expect(lowestCentsAtLeast(0.07)).toBe(7)
    expect(highestCentsAtMost(0.07)).toBe(7)
    expect(lowestCentsAtLeast(1999.99)).toBe(199_999)
  })

  it('rounds a bound between two cents inwards: up for a minimum, down for a maximum', () => {
    expect(lowestCentsAtLeast(0.071)).toBe(8)
    expect(highestCentsAtMost(0.079999)).toBe(7)
    expect(lowestCentsAtLeast(10.000001)).toBe(1001)
    expect(highestCentsAtMost(10.000001)).toBe(1000)
  })

  it('keeps bounds beyond every price beyond every price', () => {
    expect(lowestCentsAtLeast(999_999_999_999_999)).toBeGreaterThan(10 ** 15)
    expect(highestCentsAtMost(0)).toBe(0)
  })
})

describe('the listing index', () => {
  it('given listings of several zones, when searching a zone, then it counts and pages only that zone, newest first', () => {
    const index = ListingIndex.of([
      aKey({ id: 'lst_1', zone: 10, listedMicros: 3 }),
      aKey({ id: 'lst_2', zone: 10, listedMicros: 5 }),
      aKey({ id: 'lst_3', zone: 4, listedMicros: 9 }),
      aKey({ id: 'lst_4', country: 'CR', zone: 10, listedMicros: 7 }),
    ])
    expect(index.search(aSearch({ zone: 10 }))).toEqual({ total: 2, ids: ['lst_2', 'lst_1'] })
    expect(index.search(aSearch())).toEqual({ total: 3, ids: ['lst_3', 'lst_2', 'lst_1'] })
    expect(index.search(aSearch({ zone: 99 }))).toEqual({ total: 0, ids: [] })
  })

  it('given equal prices and times, when paging, then the id breaks ties in byte order (uppercase and _ before lowercase)', () => {
    // Under a locale collation (en_US) 'lst_a' < 'lst_B' < 'lst__'; the databases use C: 'lst_B' < 'lst__' < 'lst_a'.
    const index = ListingIndex.of(['lst_a', 'lst_B', 'lst__', 'lst_0'].map((id) => aKey({ id })))
    expect(index.search(aSearch({ sort: 'price_asc' })).ids).toEqual(['lst_0', 'lst_B', 'lst__', 'lst_a'])
    expect(index.search(aSearch({ sort: 'price_desc' })).ids).toEqual(['lst_a', 'lst__', 'lst_B', 'lst_0'])
    expect(index.search(aSearch({ sort: 'newest', limit: 2, offset: 1 })).ids).toEqual(['lst__', 'lst_B'])
  })

  it('given a price range, when searching, then both bounds are inclusive to the cent', () => {
    const index = ListingIndex.of([6, 7, 8].map((cents) => aKey({ id: `lst_${cents}`, priceCents: cents })))
    expect(index.search(aSearch({ price_min: 0.07, price_max: 0.07 }))).toEqual({ total: 1, ids: ['lst_7'] })
    expect(index.search(aSearch({ price_min: 0.061, sort: 'price_asc' }))).toEqual({ total: 2, ids: ['lst_7', 'lst_8'] })
  })

  it('given a listing that changes price and zone, when it is put again, then it moves and is counted once', () => {
    const index = ListingIndex.of([aKey({ id: 'lst_1', priceCents: 100 }), aKey({ id: 'lst_2', priceCents: 200 })])
    index.put(aKey({ id: 'lst_1', priceCents: 300, zone: 4 }))
    expect(index.search(aSearch({ sort: 'price_asc' }))).toEqual({ total: 2, ids: ['lst_2', 'lst_1'] })
    expect(index.search(aSearch({ zone: 10 }))).toEqual({ total: 1, ids: ['lst_2'] })
    expect(index.search(aSearch({ zone: 4 }))).toEqual({ total: 1, ids: ['lst_1'] })
  })

  it('given a listing that stops being public, when it is removed, then no search finds it', () => {
    const index = ListingIndex.of([aKey({ id: 'lst_1' }), aKey({ id: 'lst_2' })])
    index.remove('lst_1')
    index.remove('lst_unknown')
    expect(index.search(aSearch())).toEqual({ total: 1, ids: ['lst_2'] })
    expect(index.search(aSearch({ zone: 10, operation: 'Venta', property_type: 'Apartamento' }))).toEqual({ total: 1, ids: ['lst_2'] })
  })

  it('given thousands of listings put, removed and put again one by one, then it answers as one built at once', () => {
    const hex = (n: number) => n.toString(16).padStart(24, '0')
    // Ids sharing their first half too, so that the id table's probing and growth are exercised.
    const keyOf = (n: number) =>
      aKey({ id: `lst_${n % 3 === 0 ? `abcdef000000${hex(n).slice(12)}` : hex(n * 7_919)}`, zone: 1 + (n % 5), priceCents: n % 97, listedMicros: n % 13 })
    const index = new ListingIndex()
    const final = new Map<string, ListingKey>()
    for (let n = 0; n < 6000; n++) {
      index.put(keyOf(n))
      final.set(keyOf(n).id, keyOf(n))
    }
    for (let n = 0; n < 6000; n += 2) {
      index.remove(keyOf(n).id)
      final.delete(keyOf(n).id)
    }
    for (let n = 0; n < 6000; n += 4) {
      const moved = { ...keyOf(n), zone: 9, priceCents: 5 }
      index.put(moved)
      final.set(moved.id, moved)
    }
    const built = ListingIndex.of(final.values())
    expect(index.size).toBe(final.size)
    for (const id of final.keys()) expect(index.has(id)).toBe(true)
    for (const search of [aSearch({ limit: 200, offset: 1000 }), aSearch({ zone: 9, sort: 'price_desc', limit: 200 }), aSearch({ sort: 'price_asc', price_max: 0.3, limit: 200 })]) {
      expect(index.search(search)).toEqual(built.search(search))
      expect(index.search(search)).toEqual(bruteForce([...final.values()], search))
    }
  })

  const key = fc.record({
    // Real ids (lst_ + 24 hex, kept packed) that share their first half or sit at its limits, and other strings.
    id: fc.oneof(
      fc.stringMatching(/^lst_[0-9a-fA-F_]{1,3}$/),
      fc.tuple(fc.constantFrom('000000000000', 'ffffffffffff', '8a3c00000001'), fc.stringMatching(/^[0-9a-f]{12}$/)).map(([a, b]) => `lst_${a}${b}`),
      fc.stringMatching(/^lst_[0-9a-f]{24}$/),
    ),
    country: fc.constantFrom('GT', 'CR'),
    zone: fc.integer({ min: 1, max: 3 }),
    operation: fc.constantFrom('Venta', 'Renta'),
    propertyType: fc.constantFrom('Casa', 'Apartamento'),
    listedMicros: fc.integer({ min: 0, max: 5 }),
    priceCents: fc.integer({ min: 0, max: 400 }),
    areaM2: fc.integer({ min: 1, max: 100_000 }).map((n) => n / 100),
    bedrooms: fc.integer({ min: 0, max: 100 }),
    bathrooms: fc.integer({ min: 0, max: 200 }).map((n) => n / 2),
  })
  const search = fc.record({
    country: fc.constantFrom('GT', 'CR') as fc.Arbitrary<ListingSearch['country']>,
    zone: fc.option(fc.integer({ min: 1, max: 4 })),
    operation: fc.option(fc.constantFrom('Venta', 'Renta')) as fc.Arbitrary<ListingSearch['operation']>,
    property_type: fc.option(fc.constantFrom('Casa', 'Apartamento')) as fc.Arbitrary<ListingSearch['property_type']>,
    price_min: fc.option(fc.integer({ min: 0, max: 400_000 }).map((n) => n / 100_000)),
    price_max: fc.option(fc.integer({ min: 0, max: 400_000 }).map((n) => n / 1000)),
    sort: fc.constantFrom('newest', 'price_asc', 'price_desc') as fc.Arbitrary<ListingSearch['sort']>,
    limit: fc.integer({ min: 1, max: 12 }),
    offset: fc.integer({ min: 0, max: 30 }),
  })
  const unique = (keys: ListingKey[]) => [...new Map(keys.map((k) => [k.id, k])).values()]

  it('answers every search as brute force does, built at once or put one by one, with removals', () => {
    fc.assert(
      fc.property(fc.array(key, { maxLength: 60 }), fc.array(key, { maxLength: 20 }), fc.array(search, { minLength: 1, maxLength: 8 }), (given, changes, searches) => {
        const initial = unique(given)
        const built = ListingIndex.of(initial)
        const final = new Map(initial.map((k) => [k.id, k]))
        for (const change of changes) {
          // A change to an even price is a move, to an odd one the listing leaving the inventory.
          if (change.priceCents % 2 === 0) {
            built.put(change)
            final.set(change.id, change)
          } else {
            built.remove(change.id)
            final.delete(change.id)
          }
        }
        const rebuilt = ListingIndex.of([...final.values()])
        for (const s of searches) {
          const expected = bruteForce([...final.values()], s)
          expect(built.search(s)).toEqual(expected)
          expect(rebuilt.search(s)).toEqual(expected)
          if (s.zone !== null && s.operation !== null && s.property_type !== null) {
            // What an estimate compares: the same listings, by area, with the figures last put.
            const comparable = [...final.values()]
              .filter((k) => k.country === s.country && k.zone === s.zone && k.operation === s.operation && k.propertyType === s.property_type)
              .sort((a, b) => a.areaM2 - b.areaM2 || (a.id < b.id ? -1 : 1))
              .map((k) => ({ id: k.id, areaM2: k.areaM2, bedrooms: k.bedrooms, bathrooms: k.bathrooms, cents: k.priceCents }))
            for (const index of [built, rebuilt]) {
              const candidates = index.candidates(s.country, s.zone, s.operation, s.property_type)
              const read = Array.from({ length: candidates.count }, (_, i) => ({
                id: candidates.id(i),
                areaM2: candidates.areaM2(i),
                bedrooms: candidates.bedrooms(i),
                bathrooms: candidates.bathrooms(i),
                cents: candidates.cents(i),
              }))
              expect(read).toEqual(comparable)
            }
          }
        }
      }),
      { numRuns: 500 },
    )
  })
})
