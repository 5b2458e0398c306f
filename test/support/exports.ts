import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { expect } from 'vitest'
import { COUNTRIES } from '../../src/domain/market/vocabulary.ts'
import type { TestSystem } from './app.ts'

/**
 * What a client of GET /listings/export sees, read back as a data engineer would: with DuckDB,
 * from a file of the downloaded bytes. And what the same client sees paging GET /listings, the
 * inventory the export must hold. test/listings/export.test.ts compares the two.
 */

export const FORMATS = ['ndjson', 'csv', 'parquet'] as const
export type Format = (typeof FORMATS)[number]
export type Row = Record<string, unknown>

/** The fields of an exported record as DuckDB should read them: NDJSON as is, CSV and Parquet with broker flattened. */
const FIELD_TYPES: [string, string][] = [
  ['id', 'VARCHAR'],
  ['country', 'VARCHAR'],
  ['zone', 'VARCHAR'],
  ['zone_slug', 'VARCHAR'],
  ['operation', 'VARCHAR'],
  ['property_type', 'VARCHAR'],
  ['title', 'VARCHAR'],
  ['price_usd', 'DOUBLE'],
  ['price_local', 'DOUBLE'],
  ['currency', 'VARCHAR'],
  ['area_m2', 'DOUBLE'],
  ['price_per_m2_usd', 'DOUBLE'],
  ['bedrooms', 'INTEGER'],
  ['bathrooms', 'DOUBLE'],
  ['broker', 'STRUCT(id VARCHAR, name VARCHAR)'],
  ['verified_at', 'TIMESTAMP'],
  ['listed_at', 'TIMESTAMP'],
  ['url', 'VARCHAR'],
]
const FLAT_TYPES: [string, string][] = FIELD_TYPES.flatMap(([name, type]): [string, string][] =>
  name === 'broker' ? [['broker_id', 'VARCHAR'], ['broker_name', 'VARCHAR']] : [[name, type]],
)
/** The columns of CSV and Parquet, in order, with the DuckDB type Parquet declares (times: TIMESTAMP_MILLIS). */
export const PARQUET_COLUMNS = Object.fromEntries(FLAT_TYPES)
/** Compared as instants: DuckDB gives them as epoch milliseconds, the API as ISO text. */
const TIMES = new Set(['verified_at', 'listed_at'])

/** A record with its broker as two columns, as CSV and Parquet carry it. */
export function flattened(record: Row): Row {
  const flat: Row = {}
  for (const [name, value] of Object.entries(record)) {
    if (name !== 'broker') flat[name] = value
    else Object.assign(flat, { broker_id: (value as Row | null)?.id ?? null, broker_name: (value as Row | null)?.name ?? null })
  }
  return flat
}

/** A record for comparison: times as epoch milliseconds, numbers as numbers (DuckDB may give a BIGINT as text). */
export function comparable(record: Row): Row {
  const out: Row = {}
  for (const [name, value] of Object.entries(record)) {
    if (value === null || value === undefined) out[name] = null
    else if (TIMES.has(name)) out[name] = typeof value === 'string' && !/^-?\d+$/.test(value) ? Date.parse(value) : Number(value)
    else if (typeof value === 'bigint') out[name] = Number(value)
    else out[name] = value
  }
  return out
}

/** DuckDB in memory and a temp dir for the files it reads; `close` removes both. */
export async function duckReader() {
  const instance = await DuckDBInstance.create(':memory:')
  const connection = await instance.connect()
  const dir = await mkdtemp(join(tmpdir(), 'mirador-export-'))
  let files = 0
  const query = async (sql: string): Promise<Row[]> => (await connection.runAndReadAll(sql)).getRowObjectsJson() as Row[]
  const saved = async (bytes: Uint8Array, extension: string) => {
    const path = join(dir, `export-${++files}.${extension}`)
    await writeFile(path, bytes)
    return path
  }
  /** Times as epoch milliseconds: DuckDB reads them as timestamps (text would not convert). */
  const epochs = (exclude = '') => `* ${exclude} replace (epoch_ms(verified_at) as verified_at, epoch_ms(listed_at) as listed_at)`
  const columns = (types: [string, string][]) => `{${types.map(([name, type]) => `'${name}': '${type}'`).join(', ')}}`
  return {
    query,
    saved,
    /** NDJSON records (the lines before the last), typed as the record declares them. */
    ndjson: async (path: string) => query(`select ${epochs()} from read_json('${path}', format = 'newline_delimited', columns = ${columns(FIELD_TYPES)})`),
    /** CSV after its header, as RFC 4180 reads it, typed as the columns declare them (nothing guessed). */
    csv: async (path: string) =>
      query(
        `select ${epochs()} from read_csv('${path}', header = true, auto_detect = false, delim = ',', quote = '"', escape = '"', ` +
          `columns = ${columns(FLAT_TYPES.map(([name, type]) => [name, TIMES.has(name) ? 'TIMESTAMPTZ' : type]))})`,
      ),
    /** Parquet rows, in file order, typed as the file declares them. */
    parquet: async (path: string) => query(`select ${epochs('exclude (file_row_number)')} from read_parquet('${path}', file_row_number = true) order by file_row_number`),
    /** The DuckDB type of each Parquet column, in order. */
    parquetTypes: async (path: string) =>
      Object.fromEntries((await query(`describe select * from read_parquet('${path}')`)).map((c) => [c.column_name, c.column_type])),
    /** The Parquet file's key-value metadata, as text. */
    parquetMetadata: async (path: string) =>
      Object.fromEntries((await query(`select decode(key) as key, decode(value) as value from parquet_kv_metadata('${path}')`)).map((kv) => [kv.key, kv.value])),
    async close() {
      connection.closeSync()
      instance.closeSync()
      await rm(dir, { recursive: true, force: true })
    },
  }
}
export type DuckReader = Awaited<ReturnType<typeof duckReader>>

/** The answer of a GET, its body read whole. */
export async function download(system: TestSystem, path: string, key: string | undefined, headers: Record<string, string> = {}) {
  const response = await system.request(`/api/v1${path}`, { key, headers })
  return { response, bytes: new Uint8Array(await response.arrayBuffer()) }
}

/**
 * The public inventory as GET /listings pages it (every country unless `country`; in `zone` if
 * given), 200 a page, without `days_on_market`, in id order. Every page says the same total.
 */
export async function pagedInventory(system: TestSystem, key: string, place: { country?: string; zone?: string }): Promise<Row[]> {
  const listings: Row[] = []
  for (const country of place.country ? [place.country] : COUNTRIES) {
    const zone = place.zone ? `&zone=${place.zone}` : ''
    for (let offset: number | null = 0; offset !== null; ) {
      const { response, bytes } = await download(system, `/listings?country=${country}${zone}&limit=200&offset=${offset}`, key)
      expect(response.status).toBe(200)
      const page = JSON.parse(new TextDecoder().decode(bytes)) as { total: number; next_offset: number | null; listings: Row[] }
      listings.push(...page.listings.map(({ days_on_market: _, ...record }) => record))
      offset = page.next_offset
      if (offset === null) expect(listings.filter((l) => l.country === country)).toHaveLength(page.total)
    }
  }
  expect(new Set(listings.map((l) => l.id)).size).toBe(listings.length)
  return listings.sort((a, b) => (String(a.id) < String(b.id) ? -1 : 1))
}
