import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FeedRecord } from '../../src/domain/listings/feed.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { listingId } from '../../src/domain/listings/listing.ts'
import { type ListingRecord, type ListingSearch } from '../../projections/listings/search.ts'
import { listingSearchOf } from '../../src/listings/search-query.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { COUNTRIES } from '../../src/domain/market/vocabulary.ts'
import { AppError } from '../../src/shared/errors.ts'
import { databaseTargets } from '../support/databases.ts'
import { ANCHOR, aRecord, type Market, openMarket } from '../support/market.ts'

const NOW = new Date(ANCHOR.getTime() + 5 * 86_400_000)

const refusalOf = (request: string | Record<string, string>) => {
  try {
    listingSearchOf(request)
  } catch (error) {
    expect(error).toBeInstanceOf(AppError)
    expect((error as AppError).code).toBe('invalid_request')
    return (error as AppError).extra.details as { field: string; message: string }[]
  }
  throw new Error('expected invalid_request')
}
const problemsOf = (request: string | Record<string, string>) => refusalOf(request).map((d) => d.field)

describe('listing search parameters, read by their schema', () => {
  it('has defaults: GT, newest first, 20 per page from 0', () => {
    expect(listingSearchOf({})).toEqual({
      country: 'GT',
      zone: null,
      operation: null,
      property_type: null,
      price_min: null,
      price_max: null,
      sort: 'newest',
      limit: 20,
      offset: 0,
    })
  })

  it('accepts values in any letter case and returns them as documented', () => {
    expect(
      listingSearchOf({
        country: 'cr',
        zone: 'zONA 3',
        operation: 'VENTA',
        property_type: 'casa',
        sort: 'PRICE_ASC',
        price_min: '1000.5',
        price_max: '2000',
        limit: '200',
        offset: '10000',
      }),
    ).toEqual({
      country: 'CR',
      zone: 3,
      operation: 'Venta',
      property_type: 'Casa',
      price_min: 1000.5,
      price_max: 2000,
      sort: 'price_asc',
      limit: 200,
      offset: 10000,
    })
  })

  it('reads a zone by its name or its slug, in any letter case, as the zone number', () => {
    for (const zone of ['Zona 3', 'zona 3', 'zona-3', 'ZONA-3', 'Zona-3']) expect(listingSearchOf({ zone }), zone).toMatchObject({ zone: 3 })
  })

  it('reads a request URL: the query after the first "?", "+" as a space, percent-encoding, up to a "#"', () => {
    expect(listingSearchOf('http://localhost/api/v1/listings?zone=Zona+10&country=%70a&limit=5#limit=7')).toMatchObject({ zone: 10, country: 'PA', limit: 5 })
    expect(listingSearchOf('http://localhost/api/v1/listings?&&unknown=1&limit=3&')).toMatchObject({ limit: 3 })
    expect(listingSearchOf('http://localhost/api/v1/listings')).toMatchObject({ limit: 20 })
  })

  it.each([
    [{ country: 'MX' }, ['country']],
    [{ limit: '0' }, ['limit']],
    [{ limit: '201' }, ['limit']],
    [{ limit: 'abc' }, ['limit']],
    [{ limit: '1.5' }, ['limit']],
    [{ limit: '' }, ['limit']],
    [{ limit: '007' }, ['limit']],
    [{ limit: ' 5' }, ['limit']],
    [{ limit: '+5' }, ['limit']],
    [{ offset: '-1' }, ['offset']],
    [{ offset: '10001' }, ['offset']],
    [{ price_min: 'cheap' }, ['price_min']],
    [{ price_max: '-5' }, ['price_max']],
    [{ price_min: '1e5' }, ['price_min']],
    [{ price_min: '.5' }, ['price_min']],
    [{ price_min: '5.' }, ['price_min']],
    [{ price_min: '0150' }, ['price_min']],
    [{ price_max: '1000000000001' }, ['price_max']],
    [{ price_min: '500', price_max: '100' }, ['price_min']],
    [{ operation: 'Alquiler' }, ['operation']],
    [{ operation: ' venta' }, ['operation']],
    [{ property_type: 'Chalet' }, ['property_type']],
    [{ sort: 'oldest' }, ['sort']],
    [{ zone: 'zona_3' }, ['zone']],
    [{ zone: 'zona3' }, ['zone']],
    [{ zone: 'zona-03' }, ['zone']],
    [{ zone: 'zona--3' }, ['zone']],
    [{ zone: 'Zona 0' }, ['zone']],
    [{ zone: 'Zona 03' }, ['zone']],
    [{ zone: 'Zona  3' }, ['zone']],
    [{ zone: ' Zona 3' }, ['zone']],
    [{ country: ' gt' }, ['country']],
    [{ country: 'XX', limit: '0', sort: 'x' }, ['country', 'sort', 'limit']],
    [{ limit: '0', price_min: '5', price_max: '1' }, ['price_min', 'limit']],
  ])('rejects %j naming %j', (raw, fields) => {
    expect(problemsOf(raw as Record<string, string>)).toEqual(fields)
  })

  it('refuses a parameter given twice, even with the same value, naming it', () => {
    expect(refusalOf('?limit=5&country=GT&limit=5')).toEqual([{ field: 'limit', message: 'Given 2 times; send each parameter at most once' }])
    expect(problemsOf('?sort=newest&zone=Zona+1&sort=price_asc&zone=Zona+2')).toEqual(['zone', 'sort'])
    expect(problemsOf('?limit=%E0%A4%A')).toEqual(['limit'])
  })

  it('says what each parameter expects, without patterns', () => {
    expect(refusalOf({ country: 'MX', zone: 'Z3', operation: 'x', limit: '0', price_min: 'x', price_max: '1' })).toEqual([
      { field: 'country', message: 'Expected one of: GT, SV, HN, CR, BZ, DO, PA, BR (any letter case)' },
      { field: 'zone', message: 'Expected "Zona N" or zona-N, e.g. Zona 10 or zona-10' },
      { field: 'operation', message: 'Expected one of: Venta, Renta (any letter case)' },
      { field: 'price_min', message: 'Expected an amount from 0 to 1000000000000 in decimal digits, e.g. 150000 or 1999.99' },
      { field: 'limit', message: 'Expected an integer from 1 to 200' },
    ])
    expect(refusalOf({ price_min: '2', price_max: '1' })).toEqual([{ field: 'price_min', message: 'Expected at most price_max' }])
  })
})

/** Listings that must never be served, whatever the query: their titles say so. */
const hidden: FeedRecord[] = [
  aRecord({
    source: 'scraped',
    source_id: 'hidden-scraped',
    broker: null,
    verified_at: '2026-03-01T11:00:00.000Z',
    title: 'HIDDEN scraped',
  }),
  aRecord({ source_id: 'hidden-unverified', title: 'HIDDEN unverified' }),
  aRecord({ source_id: 'hidden-delisted', verified_at: '2026-03-01T11:00:00.000Z', status: 'delisted', title: 'HIDDEN delisted' }),
]
/** Public listings in GT Zona 1 sharing price and listing time: only the id tells them apart. */
const twins: FeedRecord[] = Array.from({ length: 23 }, (_, i) =>
  aRecord({ source_id: `twin-${i}`, zone: 'Zona 1', verified_at: '2026-03-01T11:00:00.000Z', title: `Twin ${i}` }),
)

for (const target of databaseTargets('listing search')) {
  describe(`listing search on ${target.name}`, () => {
    let market: Market
    let records: FeedRecord[]
    beforeAll(async () => {
      market = await openMarket(target, 300, 'search')
      await ingestRecords(market.store, [...hidden, ...twins], DEFAULT_FX)
      await market.settle()
      records = [...market.records, ...hidden, ...twins]
    })
    afterAll(async () => market?.close())

    /** Brute force over the raw lines: the last line of every listing that is active, verified and broker. */
    const expectedIds = (search: ListingSearch) => {
      const latest = new Map<string, FeedRecord>()
      for (const r of records) latest.set(listingId(r.source, r.source_id), r)
      return [...latest]
        .filter(([, r]) => r.source === 'broker' && r.status === 'active' && r.verified_at !== null)
        .filter(([, r]) => r.country === search.country)
        .filter(([, r]) => search.zone === null || r.zone === `Zona ${search.zone}`)
        .filter(([, r]) => search.operation === null || r.operation === search.operation)
        .filter(([, r]) => search.property_type === null || r.property_type === search.property_type)
        .filter(([, r]) => {
          const usd = Math.round((r.price * 100) / DEFAULT_FX[r.currency]) / 100
          return (search.price_min === null || usd >= search.price_min) && (search.price_max === null || usd <= search.price_max)
        })
        .map(([id]) => id)
        .sort()
    }

    /** Every page of a search, following next_offset. */
    const allPages = async (raw: Record<string, string>) => {
      const search = listingSearchOf({ ...raw, limit: raw.limit ?? '7' })
      const seen: ListingRecord[] = []
      let offset: number | null = 0
      let total = -1
      while (offset !== null) {
        const page = await market.inventory.search({ ...search, offset }, NOW)
        expect(page.count).toBe(page.listings.length)
        expect(page.offset).toBe(offset)
        total = page.total
        seen.push(...page.listings)
        offset = page.next_offset
      }
      return { search, seen, total }
    }

    const inOrder = (sort: string, a: ListingRecord, b: ListingRecord) => {
      if (sort === 'newest') return a.listed_at > b.listed_at || (a.listed_at === b.listed_at && a.id > b.id)
      if (sort === 'price_asc') return a.price_usd < b.price_usd || (a.price_usd === b.price_usd && a.id < b.id)
      return a.price_usd > b.price_usd || (a.price_usd === b.price_usd && a.id > b.id)
    }

    it('serves every public listing of every country exactly once across pages, in each order, and nothing else', async () => {
      for (const country of COUNTRIES) {
        for (const sort of ['newest', 'price_asc', 'price_desc']) {
          const { search, seen, total } = await allPages({ country, sort })
          const ids = seen.map((l) => l.id)
          expect(new Set(ids).size, `${country} ${sort}: no page overlaps another`).toBe(ids.length)
          expect([...ids].sort(), `${country} ${sort}: no listing skipped`).toEqual(expectedIds(search))
          expect(total).toBe(ids.length)
          for (let i = 1; i < seen.length; i++) expect(inOrder(sort, seen[i - 1]!, seen[i]!), `${country} ${sort} at ${i}`).toBe(true)
          expect(seen.some((l) => l.title.startsWith('HIDDEN'))).toBe(false)
        }
      }
    })

    it('breaks ties by id so that pages of equal prices and times neither overlap nor skip', async () => {
      for (const sort of ['newest', 'price_asc', 'price_desc']) {
        const { seen } = await allPages({ zone: 'Zona 1', sort, limit: '4', price_min: '200000', price_max: '200000' })
        expect(seen.map((l) => l.title).sort()).toEqual(twins.map((t) => t.title).sort())
        const ascending = [...seen.map((l) => l.id)].sort()
        expect(seen.map((l) => l.id)).toEqual(sort === 'price_asc' ? ascending : ascending.reverse())
      }
    })

    it('filters by zone, operation, property type and USD price range', async () => {
      const searches: Record<string, string>[] = [
        { zone: 'Zona 1' },
        { zone: 'Zona 2', operation: 'Venta' },
        { operation: 'Renta', property_type: 'Apartamento' },
        { property_type: 'Casa', price_min: '100000', price_max: '400000' },
        { country: 'BR', price_max: '2500' },
        { country: 'pa', zone: 'Zona 3', operation: 'Venta', property_type: 'Apartamento' },
        { zone: 'Zona 999' },
      ]
      for (const raw of searches) {
        const { search, seen, total } = await allPages(raw)
        expect(seen.map((l) => l.id).sort(), JSON.stringify(raw)).toEqual(expectedIds(search))
        expect(total).toBe(seen.length)
      }
    })

    it('serves the documented listing record', async () => {
      const search = { zone: 'Zona 1', limit: '1', sort: 'price_desc', price_max: '200000', price_min: '200000' }
      const page = await market.inventory.search(listingSearchOf(search), NOW)
      expect(page).toMatchObject({ ok: true, count: 1, total: 23, limit: 1, offset: 0, next_offset: 1 })
      const twin = twins.find((t) => listingId('broker', t.source_id) === page.listings[0]!.id)!
      expect(page.listings[0]).toEqual({
        id: listingId('broker', twin.source_id),
        country: 'GT',
        zone: 'Zona 1',
        zone_slug: 'zona-1',
        operation: 'Venta',
        property_type: 'Apartamento',
        title: twin.title,
        price_usd: 200_000,
        price_local: 1_550_000,
        currency: 'GTQ',
        area_m2: 100,
        price_per_m2_usd: 2000,
        bedrooms: 2,
        bathrooms: 2,
        broker: { id: 'gt-brk-01', name: 'Inmobiliaria Los Altos' },
        verified_at: '2026-03-01T11:00:00.000Z',
        listed_at: '2026-03-01T10:00:00.000Z',
        days_on_market: Math.floor((NOW.getTime() - Date.parse('2026-03-01T10:00:00.000Z')) / 86_400_000),
        url: 'https://gt-brk-01.example/propiedades/brk-1',
      })
    })

    it('answers an offset past the end with an empty page and no next offset', async () => {
      const page = await market.inventory.search(listingSearchOf({ offset: '10000' }), NOW)
      expect(page).toMatchObject({ count: 0, listings: [], next_offset: null, offset: 10000 })
      expect(page.total).toBeGreaterThan(0)
    })
  })
}
