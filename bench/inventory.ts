/**
 * The listing inventory at size, in process: how long the live generation of the listings read
 * model takes to load into memory, the process's resident memory, and what the index costs per
 * search (page ids + records + response object, no HTTP) for typical and deep pages.
 *
 *   DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?search_path=bench_listings_1m' npx bun bench/inventory.ts [--miss-pages 4000] [--miss-concurrency 50] [--miss-only]
 *
 * Last, the miss-heavy pattern of bench/results.md ("pages rotating over 8 countries × 3 orders ×
 * 500 offsets", 20 a page: nearly every page misses the record cache), `--miss-pages` pages,
 * `--miss-concurrency` at a time (each answer serialised), with the process's peak RSS (VmHWM) and its RSS sampled; `--miss-only`
 * measures only that, right after the load.
 *
 * Uses the schema bench/listings-load.ts fills. Prints its results; the HTTP side is bench/listings.ts.
 */
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { openPostgres } from '../src/db/postgres.ts'
import { ListingInventory, RECORD_CAPACITY } from '../projections/listings/inventory.ts'
import { MAX_LIMIT, MAX_OFFSET } from '../projections/listings/search.ts'
import { listingSearchOf } from '../src/listings/search-query.ts'
import { COUNTRIES } from '../src/domain/market/vocabulary.ts'

const { values: flags } = parseArgs({ options: { 'miss-pages': { type: 'string', default: '4000' }, 'miss-only': { type: 'boolean', default: false }, 'miss-concurrency': { type: 'string', default: '50' } } })
const databaseUrl = process.env.DATABASE_URL
if (!databaseUrl) throw new Error('DATABASE_URL is not set')
const megabytes = (bytes: number) => Math.round(bytes / 1e6)

const db = await openPostgres(databaseUrl)
const started = performance.now()
// Nothing is ingested meanwhile: no runner to follow.
const inventory = await ListingInventory.open(db, { onLiveAdvanced: () => () => {} })
const loadSeconds = (performance.now() - started) / 1000
Bun.gc(true)
console.log(
  JSON.stringify({ event: 'loaded', seconds: Number(loadSeconds.toFixed(2)), ...inventory.size, rss_mb: megabytes(process.memoryUsage().rss) }),
)

const now = new Date()
if (!flags['miss-only']) {
  const shapes: Record<string, string>[] = [
    { country: 'GT' },
    { country: 'GT', zone: 'Zona 10' },
    { country: 'GT', zone: 'Zona 10', operation: 'Venta', property_type: 'Apartamento', price_min: '100000', price_max: '400000', sort: 'price_asc' },
    { country: 'GT', operation: 'Venta', sort: 'price_asc' },
    { country: 'CR', price_min: '100000', price_max: '200000' },
    { country: 'GT', price_min: '100000', price_max: '100500' },
    { country: 'GT', offset: '10000', limit: '200' },
    { country: 'GT', offset: '10000', limit: '200', sort: 'price_desc' },
    { country: 'GT', price_min: '100000', price_max: '300000', offset: '5000' },
    { country: 'GT', price_min: '100000', price_max: '300000', offset: '10000', limit: '200' },
  ]
  const rounds = 2000
  for (const raw of shapes) {
    const search = listingSearchOf(raw)
    // The first answer fetches records that are not in memory (at this size none are at start).
    await inventory.search(search, now)
    const from = performance.now()
    let total = 0
    for (let i = 0; i < rounds; i++) total = (await inventory.search(search, now)).total
    const micros = ((performance.now() - from) / rounds) * 1000
    console.log(JSON.stringify({ search: new URLSearchParams(raw).toString(), total, us_per_search: Number(micros.toFixed(1)) }))
  }
  console.log(JSON.stringify({ event: 'shapes done', ...inventory.size, rss_mb: megabytes(process.memoryUsage().rss) }))

  // The record cache filled to its capacity: pages of 200 over every country and order, each a miss at first.
  const filling = performance.now()
  let misses = 0
  for (const country of COUNTRIES) {
    for (const sort of ['newest', 'price_asc', 'price_desc']) {
      for (let offset = 0; offset <= MAX_OFFSET && inventory.size.records < RECORD_CAPACITY; offset += MAX_LIMIT) {
        await inventory.search(listingSearchOf({ country, sort, offset: String(offset), limit: String(MAX_LIMIT) }), now)
        misses += 1
      }
    }
  }
  Bun.gc(true)
  console.log(
    JSON.stringify({
      event: 'records cached',
      pages: misses,
      ms_per_page_with_fetch: Number(((performance.now() - filling) / misses).toFixed(2)),
      ...inventory.size,
      rss_mb: megabytes(process.memoryUsage().rss),
    }),
  )
}
const peakRss = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1000
const missPages = Number(flags['miss-pages'])
const sorts = ['newest', 'price_asc', 'price_desc']
const missing = performance.now()
let highest = 0
// `--miss-concurrency` searches in flight at once, like wrk's connections.
const concurrency = Number(flags['miss-concurrency'])
for (let first = 0; first < missPages; first += concurrency) {
  const pages = Array.from({ length: Math.min(concurrency, missPages - first) }, (_, i) => first + i)
  await Promise.all(
    pages.map((page) => {
      // Consecutive pages differ in country, order and offset, like wrk rotating over the URLs.
      const [country, sort, offset] = [COUNTRIES[page % 8]!, sorts[Math.floor(page / 8) % 3]!, ((Math.floor(page / 24) * 7919) % 500) * 20]
      return inventory.search(listingSearchOf({ country, sort, offset: String(offset) }), now).then((answer) => JSON.stringify(answer).length)
    }),
  )
  highest = Math.max(highest, process.memoryUsage().rss)
}
console.log(
  JSON.stringify({
    event: 'miss-heavy pages',
    pages: missPages,
    ms_per_page: Number(((performance.now() - missing) / missPages).toFixed(2)),
    ...inventory.size,
    rss_mb_sampled_max: megabytes(highest),
    peak_rss_mb: Math.round(peakRss()),
  }),
)
inventory.stop()
await db.close()
