/**
 * How accurate estimates are (GET /api/v1/estimate, docs/statistics.md "Estimates"), measured by
 * hold-out: each public listing (active, verified, broker, in its final state) is estimated in turn
 * with `estimateOf` from the other public listings of its country, zone, operation and property type,
 * its own area, bedrooms and bathrooms as the subject, and compared with its own price (bench/estimate-holdout.ts).
 * Reported per country and operation and overall: listings held out, the share not estimated, the
 * median absolute percentage error |estimate − actual| / actual, and the share of actual prices
 * inside [low_usd, high_usd], overall and per confidence word (bench/estimate-tables.ts).
 *
 * Two markets, both in memory (nothing is loaded into a database):
 * 1. the demo market (generateDemoFeed, DEMO_DEFAULTS): a listing's final state is its last feed line;
 * 2. the synthetic market of N listings (default 1,000,000) of projections/listings/synthetic.ts, its
 *    final states generated chunk by chunk by the generator's SQL in an embedded PGlite (no table
 *    written), in this process: `nice` slows all of it.
 *
 *   npm run bench:estimate -- [--listings 1000000] [--comparables 10] [--chunk 10000] [--skip-large] [--no-write]
 *
 * Results are printed and written to bench/results.md (section "Estimates: hold-out accuracy", the
 * whole section: a run with --skip-large leaves only the demo market in it) unless --no-write or
 * stopped. Ctrl-C stops after the listing or chunk on its way and prints what was done.
 */
import os from 'node:os'
import { parseArgs } from 'node:util'
import { type SyntheticFinalState, syntheticFinalStates } from '../projections/listings/synthetic.ts'
import { openPglite } from '../src/db/pglite.ts'
import { DEMO_DEFAULTS, generateDemoFeed } from '../src/domain/demo/market.ts'
import type { FeedRecord } from '../src/domain/listings/feed.ts'
import { listingId } from '../src/domain/listings/listing.ts'
import { DEFAULT_COMPARABLES, ESTIMATE_METHOD_VERSION } from '../src/domain/market/estimate.ts'
import { DEFAULT_FX } from '../src/domain/market/fx.ts'
import { zoneName } from '../src/domain/market/zone-name.ts'
import { terminalProgress } from '../src/runtime/progress.ts'
import { type FinalState, groupsOf, holdOut, isPublic, newTallies, type PublicListing, publicListingOf, type Tallies } from './estimate-holdout.ts'
import { confidenceTable, confidenceVerdict, marketTable } from './estimate-tables.ts'
import { loadAverage, machine, writeResultsSection } from './support.ts'

const { values: flags } = parseArgs({
  options: {
    listings: { type: 'string', default: '1000000' },
    comparables: { type: 'string', default: String(DEFAULT_COMPARABLES) },
    chunk: { type: 'string', default: '10000' },
    'skip-large': { type: 'boolean', default: false },
    'no-write': { type: 'boolean', default: false },
  },
})
const [listings, comparables, chunk] = [Number(flags.listings), Number(flags.comparables), Number(flags.chunk)]
for (const [name, value] of [['listings', listings], ['comparables', comparables], ['chunk', chunk]] as const) {
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive whole number, not ${flags[name]}`)
}

// ---- Progress and Ctrl-C ----------------------------------------------------------------------

/**
 * The CLI's progress bar (share, rate, time left) on a terminal; piped (a log), the same line at
 * most every 15 s, each on its own line, and the last one when the bar ends.
 */
function progressBar() {
  if (process.stderr.isTTY) return terminalProgress()
  let [printedAt, pending] = [0, '']
  const log = {
    isTTY: true,
    write(text: string) {
      const line = text.replace(/\r|\x1b\[K/g, '')
      if (line.trim() === '') {
        // the bar ends (or is cleared): its last state
        if (pending !== '') console.error(pending)
        pending = ''
      } else if (performance.now() - printedAt >= 15_000) {
        console.error(line)
        ;[printedAt, pending] = [performance.now(), '']
      } else {
        pending = line
      }
      return true
    },
  }
  return terminalProgress(log as unknown as NodeJS.WriteStream)
}
const bar = progressBar()

let stopAsked = false
process.on('SIGINT', () => {
  bar.done()
  if (stopAsked) {
    console.error('interrupted again: stopped at once')
    process.exit(130)
  }
  stopAsked = true
  console.error('interrupted: stopping after the listing or chunk on its way, then the tables of what was done (Ctrl-C again stops at once)')
})

// ---- The markets --------------------------------------------------------------------------------

type Run = {
  name: string
  /** Listings generated (all sources and states) and the public ones among them. */
  generated: number
  publicListings: number
  groups: number
  heldOut: number
  generateSeconds: number
  holdOutSeconds: number
  tallies: Tallies
  complete: boolean
}

/** The demo market's final states: each listing's last feed line (the feed is in time order). */
function demoFinalStates(): FinalState[] {
  const anchor = new Date(Date.UTC(2026, 4, 1)) // any anchor gives the same market, shifted in time
  const last = new Map<string, FeedRecord>()
  for (const line of generateDemoFeed({ seed: DEMO_DEFAULTS.seed, listings: DEMO_DEFAULTS.listings, anchor })) last.set(`${line.source}\n${line.source_id}`, line)
  return [...last.values()].map((r) => ({
    id: listingId(r.source, r.source_id),
    source: r.source,
    status: r.status,
    verified: r.verified_at !== null,
    country: r.country,
    zone: r.zone,
    operation: r.operation,
    propertyType: r.property_type,
    areaM2: r.area_m2,
    bedrooms: r.bedrooms,
    bathrooms: r.bathrooms,
    priceLocal: r.price,
    fxRate: DEFAULT_FX[r.currency],
  }))
}

const fromSynthetic = (s: SyntheticFinalState): FinalState => ({
  id: s.listing_id,
  source: s.source,
  status: s.status,
  verified: s.verified,
  country: s.country,
  zone: zoneName(s.zone_no),
  operation: s.operation,
  propertyType: s.property_type,
  areaM2: s.area_m2,
  bedrooms: s.bedrooms,
  bathrooms: s.bathrooms,
  priceLocal: s.price_local,
  fxRate: s.fx_rate,
})

/** The public listings of synthetic listings 1…count, generated `chunk` at a time; fewer when stopped. */
async function syntheticPublicListings(count: number): Promise<{ generated: number; found: PublicListing[] }> {
  const db = await openPglite()
  const found: PublicListing[] = []
  let generated = 0
  try {
    const label = `generating ${count.toLocaleString('en-US')} synthetic listings`
    bar.progress({ label, done: 0, total: count, unit: 'listings' })
    while (generated < count && !stopAsked) {
      const to = Math.min(count, generated + chunk)
      for (const state of await syntheticFinalStates(db, generated + 1, to + 1)) {
        const final = fromSynthetic(state)
        if (isPublic(final)) found.push(publicListingOf(final))
      }
      generated = to
      bar.progress({ label, done: generated, total: count, unit: 'listings' })
      await new Promise((resolve) => setImmediate(resolve)) // lets Ctrl-C be heard (the query's promise alone does not)
    }
    bar.done()
  } finally {
    await db.close()
  }
  return { generated, found }
}

/** Holds out every public listing of a market, with progress; stops early on Ctrl-C. */
async function run(name: string, generated: number, found: PublicListing[], generateSeconds: number): Promise<Run> {
  const groups = groupsOf(found)
  const tallies = newTallies()
  const started = performance.now()
  const label = `holding out ${name}`
  const heldOut = await holdOut(groups, tallies, {
    comparables,
    progress: (done) => bar.progress({ label, done, total: found.length, unit: 'listings' }),
    stopped: () => stopAsked,
  })
  bar.done()
  const holdOutSeconds = (performance.now() - started) / 1000
  const result = { name, generated, publicListings: found.length, groups: groups.length, heldOut, generateSeconds, holdOutSeconds, tallies, complete: heldOut === found.length }
  console.log(`\n${name}: ${summaryOf(result)}\n\n${marketTable(tallies)}\n\n${confidenceTable(tallies.overall)}\n\n${confidenceVerdict(tallies.overall)}\n`)
  return result
}

const seconds = (s: number) => (s >= 60 ? `${Math.floor(s / 60)} min ${Math.round(s % 60)} s` : s >= 1 ? `${s.toFixed(1)} s` : `${Math.round(s * 1000)} ms`)
const counted = (n: number) => n.toLocaleString('en-US')

/**
 * What was generated and held out, and how long it took: generating grows with the listings; the
 * hold-out with the listings times the size of their groups (each estimate reads its whole group),
 * so its time per listing held out grows with the market.
 */
function summaryOf(r: Run): string {
  const per100k = r.generated >= 100_000 ? `, ${seconds((r.generateSeconds * 100_000) / r.generated)} per 100,000` : ''
  const perListing = r.heldOut > 0 ? `, ${((r.holdOutSeconds * 1e6) / r.heldOut).toFixed(0)} µs per listing held out` : ''
  return (
    `${counted(r.generated)} listings, ${counted(r.publicListings)} public in ${counted(r.groups)} groups (country, zone, operation, type; ` +
    `${(r.publicListings / Math.max(1, r.groups)).toFixed(1)} listings a group on average); final states in ${seconds(r.generateSeconds)}${per100k}; ` +
    `${counted(r.heldOut)} held out in ${seconds(r.holdOutSeconds)}${perListing}${r.complete ? '' : ' (stopped: not all)'}`
  )
}

// ---- The run ----------------------------------------------------------------------------------

const loadAtStart = loadAverage()
const runs: Run[] = []
{
  const started = performance.now()
  const found = demoFinalStates().filter(isPublic).map(publicListingOf)
  runs.push(await run(`demo market (${DEMO_DEFAULTS.listings.toLocaleString('en-US')} listings, seed "${DEMO_DEFAULTS.seed}")`, DEMO_DEFAULTS.listings, found, (performance.now() - started) / 1000))
}
if (!flags['skip-large'] && !stopAsked) {
  const started = performance.now()
  const { generated, found } = await syntheticPublicListings(listings)
  const generateSeconds = (performance.now() - started) / 1000
  if (stopAsked) console.log(`synthetic market: generated ${generated.toLocaleString('en-US')} of ${listings.toLocaleString('en-US')} listings; nothing held out`)
  else runs.push(await run(`synthetic market (${listings.toLocaleString('en-US')} listings)`, generated, found, generateSeconds))
}

if (stopAsked) {
  const done = runs.map((r) => `${r.name}: ${r.heldOut.toLocaleString('en-US')} of ${r.publicListings.toLocaleString('en-US')} public listings held out`)
  const partial = runs.some((r) => !r.complete) ? ' A table of a market not held out fully is over the listings held out (groups in turn, not a sample).' : ''
  console.error(`interrupted, what was done: ${done.join('; ')}.${partial} bench/results.md left unchanged.`)
  process.exit(130)
}

const command = ['npm run bench:estimate', ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : [])].join(' ')
const niceness = os.getPriority()
const busy = Number(loadAtStart) > os.cpus().length / 2
const body = [
  `Run on ${new Date().toISOString().slice(0, 10)}: \`${niceness > 0 ? `nice -n ${niceness} ` : ''}${command}\` (${machine()}; load average ${loadAtStart} at the start, ${loadAverage()} at the end${busy ? ': the machine was shared, times are not comparable with quiet runs' : ''}).`,
  '',
  `Each public listing (active, verified, broker; its final state) held out in turn and estimated by \`estimateOf\` (src/domain/market/estimate.ts, method version ${ESTIMATE_METHOD_VERSION}, ${comparables} comparables) from the other public listings of its country, zone, operation and property type, its own area, bedrooms and bathrooms as the subject. "no estimate": too few comparables even at level 4. "median error": the median of |price_usd − actual| / actual over the estimated listings (exact cents). "inside [low, high]": the share of actual prices within [low_usd, high_usd], overall and per confidence word ("of n": the estimates it is over).`,
  ...runs.flatMap((r) => ['', `### ${r.name}`, '', `${summaryOf(r)}.`, '', marketTable(r.tallies), '', confidenceTable(r.tallies.overall), '', confidenceVerdict(r.tallies.overall)]),
  ...(!flags['skip-large'] && listings < 1_000_000
    ? ['', `The synthetic market here has ${counted(listings)} listings, fewer than the default 1,000,000 (\`--listings\`): at 1,000,000 its groups are ${(1_000_000 / listings).toFixed(0)} times larger, so estimates rest on more candidates and each takes longer.`]
    : []),
].join('\n')
if (!flags['no-write']) writeResultsSection('Estimates: hold-out accuracy', `${body}\n`)
