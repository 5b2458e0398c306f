/**
 * Answers as of a past instant: how long GET /api/v1/zones?as_of=… takes to compute (the route's
 * work: the market at that instant from the listings read model's history, then the publication
 * rules), on the demo market (embedded store, 2,000 listings) and at N listings in PostgreSQL
 * (default 1,000,000, loaded straight into the read model by bench/listings-load.ts, resumable).
 * Instants are drawn uniformly over the market's history; the country is GT (the largest market).
 *
 *   npx bun bench/as-of.ts [--listings 1000000] [--schema bench_listings_1m] [--requests 200] [--skip-large] [--no-write]
 *
 * Results are printed and written to bench/results.md (section "Answers as of a past instant") unless --no-write.
 */
import { parseArgs } from 'node:util'
import { ReadyZones } from '../projections/listings/ready-zones.ts'
import { ProjectionRunner } from '../projections/engine/runner.ts'
import { listingsProjection } from '../projections/listings/projection.ts'
import { MARKET_END } from '../projections/listings/synthetic.ts'
import type { Db } from '../src/db/port.ts'
import { openPglite } from '../src/db/pglite.ts'
import { openPostgres } from '../src/db/postgres.ts'
import { seedDemo } from '../src/demo/seed.ts'
import { DEMO_DEFAULTS, HISTORY_DAYS } from '../src/domain/demo/market.ts'
import { openSqlEventStore } from '../src/eventstore/sql-event-store.ts'
import { zonesAsOf } from '../src/zones/point-in-time.ts'
import { loadListings } from './listings-load.ts'
import { loadAverage, machine, percentile, writeResultsSection } from './support.ts'

const { values: flags } = parseArgs({
  options: {
    listings: { type: 'string', default: '1000000' },
    schema: { type: 'string', default: 'bench_listings_1m' },
    requests: { type: 'string', default: '200' },
    'skip-large': { type: 'boolean', default: false },
    'no-write': { type: 'boolean', default: false },
  },
})
const requests = Number(flags.requests)
const DAY = 86_400_000

type Timing = { name: string; n: number; median: number; p95: number; zones: number; load: string }

/** `requests` answers of /zones?as_of at instants spread over [from, to] (after a warm-up), in ms. */
async function measure(name: string, zones: ReadyZones, from: number, to: number): Promise<Timing> {
  const load = loadAverage()
  const instant = (i: number) => new Date(from + Math.floor(((i * 7919) % requests) * ((to - from) / requests)))
  for (let i = 0; i < Math.min(10, requests); i++) await zonesAsOf(zones, 'GT', instant(i))
  const times: number[] = []
  let count = 0
  for (let i = 0; i < requests; i++) {
    const started = performance.now()
    count = (await zonesAsOf(zones, 'GT', instant(i))).length
    times.push(performance.now() - started)
  }
  times.sort((a, b) => a - b)
  return { name, n: requests, median: percentile(times, 50), p95: percentile(times, 95), zones: count, load }
}

async function withZones<T>(db: Db, run: (zones: ReadyZones) => Promise<T>): Promise<T> {
  const store = await openSqlEventStore(db)
  const runner = new ProjectionRunner(db, store, [listingsProjection])
  await runner.catchUp()
  const zones = ReadyZones.follow(db, runner, (error) => {
    throw error
  })
  try {
    await zones.settled()
    return await run(zones)
  } finally {
    zones.stop()
    await runner.stop()
    await store.close()
  }
}

const results: Timing[] = []

const anchor = new Date(Date.UTC(2026, 4, 1))
const demo = await openPglite()
await seedDemo(await openSqlEventStore(demo), { seed: DEMO_DEFAULTS.seed, listings: DEMO_DEFAULTS.listings, anchor })
results.push(await withZones(demo, (zones) => measure(`demo market (${DEMO_DEFAULTS.listings} listings, embedded)`, zones, anchor.getTime() - HISTORY_DAYS * DAY, anchor.getTime())))
await demo.close()
console.log(results.at(-1))

if (!flags['skip-large']) {
  const baseUrl = new URL(process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test')
  const admin = await openPostgres(baseUrl.toString(), { max: 1 })
  await admin.query(`create schema if not exists ${flags.schema}`)
  await admin.close()
  baseUrl.searchParams.set('search_path', flags.schema)
  const db = await openPostgres(baseUrl.toString())
  await loadListings(db, Number(flags.listings), (line) => console.log(line))
  const end = Date.parse(MARKET_END)
  results.push(await withZones(db, (zones) => measure(`${Number(flags.listings).toLocaleString('en')} listings (PostgreSQL)`, zones, end - 180 * DAY, end)))
  await db.close()
  console.log(results.at(-1))
}

const table = [
  '| market | answers | median | p95 | zones (GT) | load average |',
  '|---|---|---|---|---|---|',
  ...results.map((r) => `| ${r.name} | ${r.n} | ${r.median.toFixed(1)} ms | ${r.p95.toFixed(1)} ms | ${r.zones} | ${r.load} |`),
].join('\n')
console.log(table)
if (!flags['no-write']) {
  writeResultsSection(
    'Answers as of a past instant',
    `\`npx bun bench/as-of.ts\` (${machine()}): the work of \`GET /zones?country=GT&as_of=…\` (the market at the instant from the
listings read model's history, then the publication rules), instants spread over the market's history.\n\n${table}\n`,
  )
}
