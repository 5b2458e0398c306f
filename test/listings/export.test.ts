import { gunzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listingId } from '../../src/domain/listings/listing.ts'
import { startTestSystem, type TestSystem } from '../support/app.ts'
import { type DatabaseTarget, databaseTargets } from '../support/databases.ts'
import { comparable, download, duckReader, type DuckReader, flattened, FORMATS, type Format, pagedInventory, PARQUET_COLUMNS, type Row } from '../support/exports.ts'
import { aLine, invalidRequest } from '../support/market.ts'

/**
 * GET /listings/export as its users see it (docs/api.md, "Staying in sync"): every format, read
 * back with DuckDB, holds exactly the public inventory GET /listings pages, as of the cursor it names.
 * The market: the demo's 300 listings (some delisted, unverified or scraped) and five hand-made
 * listings of GT Zona 10, two public whose titles need CSV quoting (one without a URL).
 */

const ZONE_10 = { country: 'GT', zone: 'Zona 10', verified_at: '2026-02-28T09:30:00.123Z', listed_at: '2026-02-27T08:00:00Z' }
const HAND_MADE = [
  aLine({ ...ZONE_10, source_id: 'export-quoted', title: 'Casa "El Mirador", jardín\ny terraza', url: null, bathrooms: 2.5 }),
  aLine({ ...ZONE_10, source_id: 'export-two-lines', title: 'Apartamento amueblado\r\ncon vista al volcán' }),
  aLine({ ...ZONE_10, source_id: 'export-scraped', source: 'scraped', broker: null }),
  aLine({ ...ZONE_10, source_id: 'export-unverified', verified_at: null }),
  aLine({ ...ZONE_10, source_id: 'export-delisted', status: 'delisted' }),
]
/** Titles CSV must quote (RFC 4180): quotes, a comma and a line break; a line break alone. */
const QUOTED = { [listingId('broker', 'export-quoted')]: 'Casa "El Mirador", jardín\ny terraza', [listingId('broker', 'export-two-lines')]: 'Apartamento amueblado\r\ncon vista al volcán' }
const NOT_PUBLIC = [listingId('scraped', 'export-scraped'), listingId('broker', 'export-unverified'), listingId('broker', 'export-delisted')]

const CONTENT_TYPES: Record<Format, string> = {
  ndjson: 'application/x-ndjson',
  csv: 'text/csv; charset=utf-8; header=present',
  parquet: 'application/vnd.apache.parquet',
}

type Place = { name: string; query: string; file: string; filter: { country?: string; zone?: string } }
const PLACES: Place[] = [
  { name: 'every country', query: '', file: 'all', filter: {} },
  { name: 'one country', query: '&country=GT', file: 'GT', filter: { country: 'GT' } },
  { name: 'one zone', query: '&country=gt&zone=Zona%2010', file: 'GT-zona-10', filter: { country: 'GT', zone: 'zona-10' } },
]

/** What a client reads back from an export's bytes: the records, and what the format says of the cursor and the count. */
type ReadBack = { rows: Row[]; cursor?: string; count?: number; lines?: Row[]; header?: string }

async function readBack(duck: DuckReader, format: Format, bytes: Uint8Array): Promise<ReadBack> {
  if (format === 'ndjson') {
    const text = new TextDecoder().decode(bytes)
    expect(text.endsWith('\n')).toBe(true)
    const lines = text.slice(0, -1).split('\n')
    const last = JSON.parse(lines.pop()!) as { cursor: string; count: number }
    const records = lines.map((line) => `${line}\n`).join('')
    const rows = records === '' ? [] : await duck.ndjson(await duck.saved(new TextEncoder().encode(records), 'ndjson'))
    return { rows, ...last, lines: lines.map((line) => JSON.parse(line) as Row) }
  }
  const path = await duck.saved(bytes, format)
  if (format === 'csv') return { rows: await duck.csv(path), header: new TextDecoder().decode(bytes).split('\r\n')[0] }
  const metadata = await duck.parquetMetadata(path)
  expect(Object.keys(metadata).sort()).toEqual(['mirador.count', 'mirador.cursor'])
  expect(await duck.parquetTypes(path)).toEqual(PARQUET_COLUMNS)
  return { rows: await duck.parquet(path), cursor: metadata['mirador.cursor'], count: Number(metadata['mirador.count']) }
}

/** The market on `target`, set up before the enclosing describe block's specs and closed after them. */
function exportMarket(target: DatabaseTarget) {
  const env = {} as { system: TestSystem; key: string; duck: DuckReader }
  const inventories = new Map<string, Promise<Row[]>>()
  beforeAll(async () => {
    env.system = await startTestSystem(await target.open())
    env.duck = await duckReader()
    await env.system.run('demo seed', { listings: 300 })
    await env.system.run('ingest lines', { lines: HAND_MADE.map((line) => JSON.stringify(line)), first_line: 1 })
    await env.system.settle()
    env.key = (await env.system.ownerWithKey('acme', 'enterprise')).key
  })
  afterAll(async () => {
    await env.duck?.close()
    await env.system?.close()
  })
  return {
    env,
    /** The public inventory of a place as GET /listings pages it, in id order (asked once per place). */
    inventoryOf(place: Place) {
      if (!inventories.has(place.name)) inventories.set(place.name, pagedInventory(env.system, env.key, place.filter))
      return inventories.get(place.name)!
    },
    /** GET /listings/export`query` with the reader's key. */
    get: (query: string, headers: Record<string, string> = {}) => download(env.system, `/listings/export${query}`, env.key, headers),
  }
}
type ExportMarket = ReturnType<typeof exportMarket>

/** Each format of each place holds the inventory GET /listings pages, as of the cursor it names. */
function contentSpecs({ env, inventoryOf, get }: ExportMarket) {
  const cases = FORMATS.flatMap((format) => PLACES.map((place) => [format, place.name, place] as const))
  it.each(cases)('%s of %s: the listings GET /listings pages, field for field, in id order, as of the cursor it names', async (format, _, place) => {
    const { response, bytes } = await get(`?format=${format}${place.query}`)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe(CONTENT_TYPES[format])
    expect(response.headers.get('content-encoding')).toBeNull()
    expect(response.headers.get('content-disposition')).toMatch(new RegExp(`^attachment; filename="mirador-listings-${place.file}-\\d+\\.${format}"$`))
    const cursor = response.headers.get('mirador-cursor')
    expect(cursor).toMatch(/^c1\.[A-Za-z0-9_-]+$/)

    const inventory = await inventoryOf(place)
    expect(inventory.length).toBeGreaterThan(place.filter.zone ? 1 : 20)
    const expected = format === 'ndjson' ? inventory : inventory.map(flattened)
    const read = await readBack(env.duck, format, bytes)
    expect(read.rows.map((row) => row.id)).toEqual(inventory.map((listing) => listing.id))
    expect(read.rows.map(comparable)).toEqual(expected.map(comparable))
    if (format !== 'csv') expect({ cursor: read.cursor, count: read.count }).toEqual({ cursor, count: inventory.length })
    // NDJSON carries each record as the API writes it: the /listings record without days_on_market, key for key.
    if (read.lines) expect(read.lines).toStrictEqual(inventory)
    if (read.header !== undefined) expect(read.header.split(',')).toEqual(Object.keys(expected[0]!))
  })

  it('holds the public listings whose titles need quoting in CSV in every format, and none of the scraped, unverified or delisted', async () => {
    const zone10 = await inventoryOf(PLACES[2]!)
    const quoted = Object.keys(QUOTED).map((id) => zone10.find((listing) => listing.id === id)!)
    expect(quoted.map((listing) => listing.title)).toEqual(Object.values(QUOTED))
    expect(quoted[0]).toMatchObject({ url: null, bathrooms: 2.5, verified_at: '2026-02-28T09:30:00.123Z' })
    for (const format of FORMATS) {
      const { rows } = await readBack(env.duck, format, (await get(`?format=${format}&country=GT&zone=zona-10`)).bytes)
      expect(rows.filter((row) => NOT_PUBLIC.includes(String(row.id))), format).toEqual([])
      const shown = quoted.map((listing) => rows.find((row) => row.id === listing.id) ?? null)
      expect(shown.map((row) => row && comparable(row)), format).toEqual(quoted.map((listing) => comparable(format === 'ndjson' ? listing : flattened(listing))))
    }
  })
}

/** gzip when the client accepts it, and then only. */
function encodingSpecs({ get }: ExportMarket) {
  it.each(FORMATS)('%s: with Accept-Encoding: gzip the body is gzip of the bytes sent without it', async (format) => {
    const plain = await get(`?format=${format}&country=SV`)
    expect(plain.response.headers.get('content-encoding')).toBeNull()
    const zipped = await get(`?format=${format}&country=SV`, { 'accept-encoding': 'gzip' })
    expect(zipped.response.status).toBe(200)
    expect(zipped.response.headers.get('content-encoding')).toBe('gzip')
    expect(zipped.response.headers.get('vary')).toMatch(/accept-encoding/i)
    expect([...zipped.bytes.slice(0, 2)]).toEqual([0x1f, 0x8b])
    expect(new Uint8Array(gunzipSync(zipped.bytes))).toEqual(plain.bytes)
    expect(zipped.response.headers.get('mirador-cursor')).toBe(plain.response.headers.get('mirador-cursor'))
  })

  it.each([
    ['gzip, deflate, br', 'gzip'],
    ['*', 'gzip'],
    ['x-gzip', 'gzip'],
    ['identity', 'identity'],
    ['br', 'identity'],
    ['gzip;q=0', 'identity'],
    ['br, gzip;q=0', 'identity'],
    ['br, *;q=0', 'identity'],
    ['identity, gzip;q=0.5', 'identity'],
  ])('Accept-Encoding: %s → %s', async (header, coding) => {
    const { response, bytes } = await get('?country=BZ', { 'accept-encoding': header })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-encoding')).toBe(coding === 'gzip' ? 'gzip' : null)
    const text = new TextDecoder().decode(coding === 'gzip' ? gunzipSync(bytes) : bytes)
    expect(JSON.parse(text.trimEnd().split('\n').at(-1)!)).toMatchObject({ cursor: response.headers.get('mirador-cursor') })
  })
}

/** Bad queries and keys: the JSON error, before any byte of an export. */
function refusalSpecs({ env }: ExportMarket) {
  const bad = (...fields: string[]) => ({ status: 400, body: invalidRequest(fields) })
  it.each([
    ['?format=xlsx', 'read', bad('format')],
    ['?format=csv&format=parquet', 'read', bad('format')],
    ['?country=XX', 'read', bad('country')],
    ['?zone=zona-3', 'read', bad('zone')],
    ['?country=GT&zone=zona-0', 'read', bad('zone')],
    ['?format=xlsx&country=XX&zone=zona-3', 'read', bad('format', 'country')],
    ['', 'write', { status: 403, body: { ok: false, error: 'scope_denied', message: expect.stringContaining('read') } }],
    ['', 'none', { status: 401, body: { ok: false, error: 'auth_required', message: expect.any(String) } }],
  ] as const)('GET /listings/export%s with a %s key → the JSON error', async (query, scope, answer) => {
    const given = scope === 'read' ? env.key : scope === 'write' ? (await env.system.ownerWithKey('writer', 'enterprise', ['write'])).key : undefined
    const { response, bytes } = await download(env.system, `/listings/export${query}`, given)
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    expect(response.headers.get('mirador-cursor')).toBeNull()
    expect({ status: response.status, body: JSON.parse(new TextDecoder().decode(bytes)) }).toEqual(answer)
  })
}

/** A place without listings, and a client that goes away. */
function edgeSpecs({ env, inventoryOf, get }: ExportMarket) {
  it('a zone without public listings: NDJSON is the cursor line with count 0, CSV the header, Parquet a file of no rows', async () => {
    const ndjson = await get('?country=GT&zone=zona-999')
    const cursor = ndjson.response.headers.get('mirador-cursor')
    expect(ndjson.response.status).toBe(200)
    expect(new TextDecoder().decode(ndjson.bytes)).toBe(`${JSON.stringify({ cursor, count: 0 })}\n`)

    const csv = await get('?format=csv&country=GT&zone=zona-999')
    expect(new TextDecoder().decode(csv.bytes)).toBe(`${Object.keys(PARQUET_COLUMNS).join(',')}\r\n`)
    expect(await readBack(env.duck, 'csv', csv.bytes)).toMatchObject({ rows: [] })

    const parquet = await get('?format=parquet&country=GT&zone=zona-999')
    expect(await readBack(env.duck, 'parquet', parquet.bytes)).toEqual({ rows: [], cursor, count: 0 })
  })

  it('a client that stops reading after the first chunk leaves the server answering the next requests', async () => {
    for (const headers of [{}, { 'accept-encoding': 'gzip' }] as Record<string, string>[]) {
      const response = await env.system.request('/api/v1/listings/export?format=parquet', { key: env.key, headers })
      expect(response.status).toBe(200)
      const reader = response.body!.getReader()
      expect((await reader.read()).done).toBe(false)
      await reader.cancel()
    }
    const page = await download(env.system, '/listings?country=GT&limit=5', env.key)
    expect(page.response.status).toBe(200)
    expect(JSON.parse(new TextDecoder().decode(page.bytes))).toMatchObject({ ok: true, count: 5 })
    const again = await get('?format=ndjson')
    expect(again.response.status).toBe(200)
    const read = await readBack(env.duck, 'ndjson', again.bytes)
    expect(read.rows.map((row) => row.id)).toEqual((await inventoryOf(PLACES[0]!)).map((listing) => listing.id))
    expect(read.count).toBe(read.rows.length)
  })
}

for (const target of databaseTargets('listings export')) {
  describe(`GET /listings/export on ${target.name}`, () => {
    const market = exportMarket(target)
    contentSpecs(market)
    encodingSpecs(market)
    refusalSpecs(market)
    edgeSpecs(market)
  })
}
