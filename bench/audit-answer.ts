/**
 * `audit answer`'s memory as the log grows: the CLI (`bun src/cli.ts audit answer PATH --until NOW`,
 * in its own process, no server) rebuilding the listings read model from every event of a
 * PostgreSQL store holding the demo market of `--listings` listings (a comma-separated list of sizes),
 * its peak RSS (VmHWM) and time per path. With `--before DIR`, the same commands from another checkout (e.g. the code before the
 * page-by-page build) in the same run, as the baseline.
 *
 *   npx bun bench/audit-answer.ts [--listings 100000,300000] [--paths zones,listings] [--before /work/wt-before] [--no-write]
 *
 * Each store is kept between runs (schema `bench_audit_<listings>`) and reused when it holds the market.
 */
import { parseArgs } from 'node:util'
import { openPostgres } from '../src/db/postgres.ts'
import { generateDemoFeed } from '../src/domain/demo/market.ts'
import { DEFAULT_FX } from '../src/domain/market/fx.ts'
import { ingestRecords } from '../src/listings/ingest.ts'
import { storageOn } from '../src/storage.ts'
import { loadAverage, machine, memoryOf, ROOT, sleep, startProcess, writeResultsSection } from './support.ts'

const SECTION = 'Audit answer: memory as the log grows'
const PATHS = ['/api/v1/zones?country=GT', '/api/v1/listings?country=GT&sort=price_desc&limit=50']

const { values: flags } = parseArgs({
  options: {
    listings: { type: 'string', default: '100000,300000' },
    /** Which of PATHS to ask, by a word of their path. */
    paths: { type: 'string', default: 'zones,listings' },
    before: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
  },
})
const sizes = flags.listings.split(',').map(Number)
const paths = PATHS.filter((path) => flags.paths.split(',').some((word) => path.includes(`/${word}?`)))
const baseUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'
const urlOf = (listings: number) => `${baseUrl}${baseUrl.includes('?') ? '&' : '?'}search_path=bench_audit_${listings}`
const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`)

/**
 * The store of the demo market of `listings`, ingested unless it is there already, its read models
 * caught up (as a CLI command does first: measured here, they would count in the first command's
 * time and memory); its head position.
 */
async function market(listings: number): Promise<number> {
  const storage = await storageOn(await openPostgres(urlOf(listings)))
  try {
    if ((await storage.store.headPosition()) === 0) {
      const records = generateDemoFeed({ seed: 'bench-audit', listings, anchor: new Date('2026-11-01T00:00:00Z') })
      log(`ingesting ${records.length} feed lines of ${listings} listings …`)
      await ingestRecords(storage.store, records, DEFAULT_FX, { concurrency: 4 })
    }
    log('catching the read models up …')
    await storage.runner.catchUp()
    return await storage.store.headPosition()
  } finally {
    await storage.close()
  }
}

type Run = { listings: number; events: number; code: string; path: string; seconds: number; peakMiB: number; bytes: number; exit: number | null }

/** One `audit answer` in its own process from checkout `cwd`, its RSS sampled every 50 ms. */
async function audit(market: { listings: number; events: number }, code: string, cwd: string, path: string): Promise<Run> {
  const started = performance.now()
  const child = startProcess(['src/cli.ts', 'audit', 'answer', path, '--until', new Date().toISOString()], { DATABASE_URL: urlOf(market.listings) }, { cwd })
  let peakMiB = 0
  const exited = new Promise<number | null>((done) => child.child.once('exit', (exit) => done(exit)))
  let exit: number | null | undefined
  void exited.then((e) => (exit = e))
  while (exit === undefined) {
    try {
      // A process that has exited (a zombie) shows no memory: NaN, left out.
      const { peakMiB: now } = memoryOf(child.pid)
      if (!Number.isNaN(now)) peakMiB = Math.max(peakMiB, now)
    } catch {
      // gone between the check and the read
    }
    await sleep(50)
  }
  const seconds = (performance.now() - started) / 1000
  return { ...market, code, path, seconds, peakMiB, bytes: child.output().length, exit }
}

const loadStart = loadAverage()
const runs: Run[] = []
for (const listings of sizes) {
  const events = await market(listings)
  for (const path of paths) {
    for (const [code, cwd] of [['this checkout', ROOT], ...(flags.before ? [['before', flags.before]] : [])] as const) {
      log(`${listings} listings, ${code}: audit answer ${path} …`)
      const run = await audit({ listings, events }, code, cwd, path)
      log(`  ${run.seconds.toFixed(1)} s, peak RSS ${run.peakMiB.toFixed(0)} MiB, exit ${run.exit}`)
      runs.push(run)
    }
  }
}
const body = `\`bun src/cli.ts audit answer PATH --until NOW\` in its own process (no server) on PostgreSQL, over the demo market
(schemas \`bench_audit_<listings>\`): the listings read model rebuilt from every event. Peak RSS is the process's VmHWM,
sampled every 50 ms.${flags.before ? ` "before" is the checkout at ${flags.before} (events held in memory, one transaction; no /listings: exit 2).` : ''}

- Date: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC
- Machine: ${machine()}; load average ${loadStart} at start, ${loadAverage()} at end
- Command: \`npx bun bench/audit-answer.ts --listings ${flags.listings} --paths ${flags.paths}${flags.before ? ` --before ${flags.before}` : ''}\`

| listings | events | code | path | seconds | peak RSS | exit |
|---:|---:|---|---|---:|---:|---:|
${runs.map((r) => `| ${r.listings.toLocaleString('en')} | ${r.events.toLocaleString('en')} | ${r.code} | \`${r.path}\` | ${r.seconds.toFixed(1)} | ${r.peakMiB.toFixed(0)} MiB | ${r.exit} |`).join('\n')}
`
console.log(body)
if (!flags['no-write']) writeResultsSection(SECTION, body)
