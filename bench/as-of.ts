/**
 * Answers as of a past instant: how long GET /api/v1/zones?as_of=… takes to compute (the route's
 * work: the market at that instant from the listings read model's history, then the publication
 * rules), on the demo market (embedded store, 2,000 listings) and at N listings in PostgreSQL
 * (default 1,000,000, loaded straight into the read model by bench/listings-load.ts, resumable; a
 * comma-separated list of counts takes one schema each).
 * Instants are drawn uniformly over the market's history; the country is GT (the largest market).
 * Each market is measured as served (the history in memory: ReadyZones → zone-history.ts, after its
 * load, whose time and RSS growth are reported, as is the first preparation of the answers of /zones) and, in the same run, by the SQL the audit uses
 * (`countryZoneFactsAt`, the way it was served before; `--sql-requests` answers).
 *
 *   npx bun bench/as-of.ts [--listings 100000,1000000] [--schema bench_listings_100k,bench_listings_1m] [--requests 200] [--sql-requests 20] [--skip-large] [--no-write]
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
import { type ZoneAnswers, zonesAsOf } from '../src/zones/point-in-time.ts'
import { countryZoneFactsAt, firstListingEvent } from '../projections/listings/zone-rows.ts'
import { generationTables } from '../projections/engine/generations.ts'
import { liveTables } from '../projections/engine/live-tables.ts'
import type { ListingsTables } from '../projections/listings/projection.ts'
import { loadListings } from './listings-load.ts'
import { loadAverage, machine, percentile, writeResultsSection } from './support.ts'

const { values: flags } = parseArgs({
  options: {
    listings: { type: 'string', default: '1000000' },
    schema: { type: 'string', default: 'bench_listings_1m' },
    requests: { type: 'string', default: '200' },
    'sql-requests': { type: 'string', default: '20' },
    'skip-large': { type: 'boolean', default: false },
    'no-write': { type: 'boolean', default: false },
  },
})
const requests = Number(flags.requests)
const DAY = 86_400_000

type Timing = { name: string; how: string; n: number; median: number; p95: number; p99: number; zones: number; load: string }

/** `n` answers of /zones?as_of at instants spread over [from, to] (after a warm-up), in ms. */
async function measure(name: string, how: string, zones: ZoneAnswers, from: number, to: number, n: number): Promise<Timing> {
  const load = loadAverage()
  const instant = (i: number) => new Date(from + Math.floor(((i * 7919) % n) * ((to - from) / n)))
  for (let i = 0; i < Math.min(3, n); i++) await zonesAsOf(zones, 'GT', instant(i))
  const times: number[] = []
  let count = 0
  for (let i = 0; i < n; i++) {
    const started = performance.now()
    count = (await zonesAsOf(zones, 'GT', instant(i))).length
    times.push(performance.now() - started)
  }
  times.sort((a, b) => a - b)
  return { name, how, n, median: percentile(times, 50), p95: percentile(times, 95), p99: percentile(times, 99), zones: count, load }
}

const mib = (bytes: number) => `${Math.round(bytes / 1_048_576)} MiB`
const loads: string[] = []

/** The market both ways: from the history in memory (after loading it: time and RSS growth noted) and by the SQL of countryZoneFactsAt. */
async function measureBoth(name: string, db: Db, from: number, to: number): Promise<void> {
  await withZones(db, async (zones) => {
    Bun.gc(true)
    const rss = process.memoryUsage().rss
    const started = performance.now()
    await zones.firstEvent() // starts loading the history (answered from SQL meanwhile)
    await zones.settled()
    const loadMs = performance.now() - started
    Bun.gc(true)
    loads.push(`${name}: history loaded in ${(loadMs / 1000).toFixed(1)} s, RSS ${mib(rss)} → ${mib(process.memoryUsage().rss)} (after a full collection)`)
    console.log(loads.at(-1))
    results.push(await measure(name, 'in memory', zones, from, to, requests))
    console.log(results.at(-1))
  })
  const t = generationTables(listingsProjection, await liveTables(db).of(listingsProjection)) as ListingsTables
  const sql: ZoneAnswers = {
    factsAt: (country, at, zoneNo, figures) => countryZoneFactsAt(db, t, country, at, zoneNo, figures),
    firstEvent: () => firstListingEvent(db, t),
  }
  results.push(await measure(name, 'SQL (before)', sql, from, to, Number(flags['sql-requests'])))
  console.log(results.at(-1))
}

async function withZones<T>(db: Db, run: (zones: ReadyZones) => Promise<T>): Promise<T> {
  const store = await openSqlEventStore(db)
  const runner = new ProjectionRunner(db, store, [listingsProjection])
  await runner.catchUp()
  const zones = ReadyZones.follow(db, runner, (error) => {
    throw error
  })
  try {
    const started = performance.now()
    await zones.settled()
    loads.push(`zone answers (/zones, /zone) first prepared in ${((performance.now() - started) / 1000).toFixed(2)} s`)
    console.log(loads.at(-1))
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
await measureBoth(`demo market (${DEMO_DEFAULTS.listings} listings, embedded)`, demo, anchor.getTime() - HISTORY_DAYS * DAY, anchor.getTime())
await demo.close()

if (!flags['skip-large']) {
  const schemas = flags.schema.split(',')
  for (const [i, count] of flags.listings.split(',').map(Number).entries()) {
    const schema = schemas[i]!
    const baseUrl = new URL(process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test')
    const admin = await openPostgres(baseUrl.toString(), { max: 1 })
    await admin.query(`create schema if not exists ${schema}`)
    await admin.close()
    baseUrl.searchParams.set('search_path', schema)
    const db = await openPostgres(baseUrl.toString())
    await loadListings(db, count, (line) => console.log(line))
    const end = Date.parse(MARKET_END)
    await measureBoth(`${count.toLocaleString('en')} listings (PostgreSQL)`, db, end - 180 * DAY, end)
    await db.close()
  }
}

const table = [
  '| market | computed | answers | median | p95 | p99 | zones (GT) | load average |',
  '|---|---|---|---|---|---|---|---|',
  ...results.map((r) => `| ${r.name} | ${r.how} | ${r.n} | ${r.median.toFixed(1)} ms | ${r.p95.toFixed(1)} ms | ${r.p99.toFixed(1)} ms | ${r.zones} | ${r.load} |`),
].join('\n')
console.log(table)
if (!flags['no-write']) {
  writeResultsSection(
    'Answers as of a past instant',
    `\`npx bun bench/as-of.ts\` (${machine()}): the work of \`GET /zones?country=GT&as_of=…\` (the market at the instant from the
listings read model's history, then the publication rules), instants spread over the market's history; "in memory" is how
it is served (zone-history.ts), "SQL (before)" the same answers by \`countryZoneFactsAt\` in the same run. Aimed at (issue 18):
under 20 ms at the median on the demo market, under 200 ms at 1,000,000 listings. The machine is shared: compare rows of one run.\n\n${table}\n\n${loads.map((l) => `- ${l}`).join('\n')}\n`,
  )
}
