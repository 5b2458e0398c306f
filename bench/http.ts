/**
 * The API's read paths under load on each runtime, next to that runtime's raw server answering a
 * small JSON in the same run (`Bun.serve`, `node:http`, `Deno.serve`: bench/raw-server*.ts): the real
 * server (started as `npm start`, `npm run start:node`, `npm run start:deno` start it) on the embedded
 * store (PGlite, demo market) and on PostgreSQL (a fresh schema, demo market), each row one `wrk`
 * run; then how the cost of /zones, /listings and /estimate grows from 10,000 to 1,000,000 listings on
 * PostgreSQL (on Bun), with the listing query shapes of bench/listings.ts, the API process's memory
 * and its start-up time at each size.
 *
 *   npx bun bench/http.ts [--duration 5] [--connections 64] [--only embedded,postgres,growth]
 *                         [--runtimes bun,node,deno] [--rows briefing] [--no-write]
 * --rows keeps only the rows whose name contains one of its words (e.g. `briefing`), with the raw runs around them;
 * such a partial run is printed, never written to bench/results.md.
 * KEEP_BENCH_WORK=1 keeps the servers' logs (access log included) in the work directory it names.
 * Each row also prints the server's CPU time per answer (`cpu … µs/request`, from /proc): on a
 * loaded machine it moves far less than req/s, so before/after comparisons can rest on it.
 *
 * Server and wrk run on separate cores (`taskset`: server on cpu 1, wrk on cpu 0) where the machine
 * has two or more; PostgreSQL is not pinned. Uses DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/test); the growth section's listings are loaded once into the
 * schemas bench_listings_10k / _100k / _1m (bench/listings-load.ts; later runs reuse them). Needs
 * `wrk`. Results are printed and written to bench/results.md (sections "HTTP read paths" and "How
 * cost grows") unless --no-write.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { listingsProjection } from '../projections/listings/projection.ts'
import { listingCount } from '../projections/listings/table-measures.ts'
import { liveTables } from '../projections/engine/live-tables.ts'
import { type Db, toNumber } from '../src/db/port.ts'
import { openPostgres } from '../src/db/postgres.ts'
import { SHAPES, WRK_QUERY } from './listing-shapes.ts'
import { loadListings } from './listings-load.ts'
import {
  BUN,
  canPin,
  type Child,
  cpuMsOf,
  freePort,
  loadAverage,
  machine,
  memoryOf,
  quiesce,
  ROOT,
  sleep,
  startProcess,
  waitFor,
  type WrkResult,
  requireWrk,
  rotatingPathsScript,
  wrk,
  wrkVersion,
  writeResultsSection,
} from './support.ts'

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '64' },
    only: { type: 'string' },
    runtimes: { type: 'string', default: 'bun,node,deno' },
    rows: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
  },
})
requireWrk()
const rowFilter = flags.rows?.split(',').map((word) => word.toLowerCase())
const PARTS = ['embedded', 'postgres', 'growth'] as const
type Part = (typeof PARTS)[number]
const only = flags.only?.split(',')
if (only !== undefined && (only.length === 0 || only.some((part) => !PARTS.includes(part as Part)))) {
  console.error(`--only takes a list of ${PARTS.join(', ')}`)
  process.exit(2)
}
const runs = (part: Part) => only === undefined || only.includes(part)
const RUNTIMES = ['bun', 'node', 'deno'] as const
type Runtime = (typeof RUNTIMES)[number]
const runtimes = flags.runtimes!.split(',') as Runtime[]
if (runtimes.length === 0 || runtimes.some((runtime) => !RUNTIMES.includes(runtime))) {
  console.error(`--runtimes takes a list of ${RUNTIMES.join(', ')}`)
  process.exit(2)
}
const RUNTIME_NAMES: Record<Runtime, string> = { bun: 'Bun', node: 'Node', deno: 'Deno' }
const bin = (name: string) => join(ROOT, 'node_modules/.bin', name)
/** The real server's program on each runtime: the `start` scripts of package.json, as npm runs them. */
const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts
function serverProgram(runtime: Runtime): string[] {
  // The script `exec`s its runtime (so that npm's signals reach it); here the runtime is spawned directly.
  const [program, ...args] = scripts[runtime === 'bun' ? 'start' : `start:${runtime}`]!.replace(/^exec /, '').split(' ')
  return [program === 'bun' ? BUN : bin(program!), ...args]
}
/** Each runtime's raw server: a bare server of its own, answering a small JSON. */
const RAW: Record<Runtime, { name: string; program: string[] }> = {
  bun: { name: 'raw Bun.serve', program: [BUN, 'bench/raw-server.ts'] },
  node: { name: 'raw node:http', program: [bin('node'), 'bench/raw-server-node.ts'] },
  deno: { name: 'raw Deno.serve', program: [bin('deno'), 'run', '--allow-net=127.0.0.1', '--allow-env=PORT', 'bench/raw-server-deno.ts'] },
}
const seconds = Number(flags.duration)
const connections = Number(flags.connections)
/** The connections of the listing-shape goal (≥ 13,390 req/s, p99 ≤ 50 ms). */
const SHAPE_CONNECTIONS = 50
const SERVER_CPU = '1'
const WRK_CPU = '0'
const SIZES = [
  { listings: 10_000, schema: 'bench_listings_10k' },
  { listings: 100_000, schema: 'bench_listings_100k' },
  { listings: 1_000_000, schema: 'bench_listings_1m' },
]
const GOALS = { shapeRps: 13_390, shapeP99Ms: 50, startupMs: 15_000 }
/** Issue 22's goal for each row (by the start of its name): its ratio to the runtime's raw server. */
const ROW_GOALS: [prefix: string, ratio: number][] = [
  ['401', 0.75],
  ['429', 0.5],
  ['GET /health, admin', 0.6],
  ['GET /health, pro', 0.5],
  ['GET /zones', 0.6],
  ['GET /zone/', 0.5],
  ['GET /listings', 0.3],
  ['POST /briefings', 0.3],
]
const goalOf = (name: string) => ROW_GOALS.find(([prefix]) => name.startsWith(prefix))?.[1]

const baseUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'
const urlOf = (schema: string) => {
  const url = new URL(baseUrl)
  url.searchParams.set('search_path', schema)
  return url.toString()
}
const work = mkdtempSync(join(os.tmpdir(), 'mirador-bench-http-'))
/** Owner ids unique to this run: the growth schemas keep the owners of earlier runs. */
const run = Date.now().toString(36)

// ---- servers -----------------------------------------------------------------------------------

type Server = { base: string; pid: number; proc: Child; logFile: string; startupMs: number; cli(...args: string[]): unknown }

async function startRaw(runtime: Runtime = 'bun'): Promise<Server> {
  const port = await freePort()
  const logFile = join(work, `raw-${port}.log`)
  const started = Date.now()
  const [program, ...args] = RAW[runtime].program
  const proc = startProcess(args, { PORT: String(port) }, { cpus: SERVER_CPU, logFile, program: [program!] })
  const base = `http://127.0.0.1:${port}`
  await waitFor(`${base}/api/v1/health`, 200, {}, proc.output)
  return { base, pid: proc.pid, proc, logFile, startupMs: Date.now() - started, cli: () => undefined }
}

/** The rows measured against the same work on raw `Bun.serve` too (issue 34): answers ready in memory. */
const SAME_WORK_ROWS = ['GET /zones', 'GET /zone/', 'GET /listings']
const SAME_WORK_GOAL = 0.6
const hasSameWork = (name: string) => SAME_WORK_ROWS.some((prefix) => name.startsWith(prefix))

/**
 * bench/raw-same-work.ts (`Bun.serve`) or bench/raw-same-work-elysia.ts (a minimal Elysia app) beside
 * `mirador`: the same bytes for `paths`, the same key checks, counter and headers.
 */
async function startSameWork(program: string, mirador: Server, key: string, paths: string[]): Promise<Server> {
  const port = await freePort()
  const logFile = join(work, `same-work-${port}.log`)
  const started = Date.now()
  const proc = startProcess([program], { PORT: String(port), MIRADOR: mirador.base, KEY: key, PATHS: paths.join(',') }, { cpus: SERVER_CPU, logFile })
  const base = `http://127.0.0.1:${port}`
  await waitFor(`${base}${paths[0]}`, 200, { headers: { authorization: `Bearer ${key}` } }, proc.output)
  return { base, pid: proc.pid, proc, logFile, startupMs: Date.now() - started, cli: () => undefined }
}

/**
 * The real server with its default settings (access log on, to a file) except: memory rate limiter,
 * the local analyst for briefings, pro keys limited to 10⁹ requests an hour (counted, never refused)
 * and enterprise keys to 1 (the 429 row). `ready` runs before the server is started (e.g. issuing
 * keys on PostgreSQL); start-up is timed from spawn to the first 200 of /health with `probeKey`.
 */
async function startMirador(
  label: string,
  store: Record<string, string>,
  ready: (cli: Server['cli']) => string | undefined = () => undefined,
  runtime: Runtime = 'bun',
): Promise<Server> {
  const port = await freePort()
  const dataDir = mkdtempSync(join(work, 'data-'))
  const env = {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    DATABASE_URL: '',
    REDIS_URL: '',
    ESDB_CONNECTION_STRING: '',
    OPENAI_API_KEY: '',
    ACCESS_LOG: 'on',
    RATE_LIMIT_PRO: '1000000000',
    RATE_LIMIT_ENTERPRISE: '1',
    ...store,
  }
  const cli = (...args: string[]) =>
    JSON.parse(execFileSync(BUN, ['src/cli.ts', ...args, '--json'], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8' }))
  const probeKey = ready(cli)
  const logFile = join(work, `${label}.log`)
  const started = Date.now()
  const [program, ...args] = serverProgram(runtime)
  const proc = startProcess(args, env, { cpus: SERVER_CPU, logFile, program: [program!] })
  const base = `http://127.0.0.1:${port}`
  const probe = probeKey ? { headers: { authorization: `Bearer ${probeKey}` } } : {}
  await waitFor(`${base}/api/v1/health`, probeKey ? 200 : 401, probe, proc.output, 600_000)
  // Ready: the zone statistics and the listings in memory (decision 0125), so no measured request waits for them.
  await waitFor(`${base}/readyz`, 200, {}, proc.output, 600_000)
  return { base, pid: proc.pid, proc, logFile, startupMs: Date.now() - started, cli }
}

async function stop(server: Server) {
  await server.proc.stop()
}

/** Requests the server wrote an access-log line for (the log is flushed on SIGTERM). */
const accessLogLines = (server: Server) => (readFileSync(server.logFile, 'utf8').match(/"event":"request"/g) ?? []).length

// ---- measuring ---------------------------------------------------------------------------------

type Row = { name: string; path: string; method?: 'POST'; body?: string; key?: string; expect: number }
type Measured = WrkResult & { name: string; path: string; valid: boolean; cpuUsPerRequest: number }

const luaString = (text: string) => JSON.stringify(text)
function luaScript(name: string, lines: string[]): string {
  const file = join(work, `${name}.lua`)
  writeFileSync(file, `${lines.join('\n')}\n`)
  return file
}
const postScript = (body: string) =>
  luaScript(`post-${Math.random().toString(36).slice(2)}`, [
    'wrk.method = "POST"',
    `wrk.body = ${luaString(body)}`,
    'wrk.headers["Content-Type"] = "application/json"',
  ])
/** Requests cycle through `paths`, one after the other. */
const rotateScript = (paths: string[]) => rotatingPathsScript(work, paths)

async function answer(server: Server, row: Row): Promise<{ status: number; body: string }> {
  const headers: Record<string, string> = row.key ? { authorization: `Bearer ${row.key}` } : {}
  if (row.body) headers['content-type'] = 'application/json'
  const response = await fetch(`${server.base}${row.path}`, { method: row.method ?? 'GET', headers, body: row.body })
  return { status: response.status, body: await response.text() }
}

/**
 * One wrk run after a warm-up; the answer is checked first (status), and a run is valid only when
 * every answer had the expected kind of status and no socket failed.
 */
async function measure(
  server: Server,
  row: Row,
  options: { connections?: number; script?: string; warmup?: number; pauseMs?: number; alsoIdle?: Server } = {},
): Promise<Measured> {
  // Requests queued in PostgreSQL leave the API process nearly idle: a pause lets them drain too.
  if (options.pauseMs) await sleep(options.pauseMs)
  if (options.alsoIdle) await quiesce(options.alsoIdle.pid)
  await quiesce(server.pid)
  const seen = await answer(server, row)
  if (seen.status !== row.expect) throw new Error(`${row.name}: ${row.path} answered ${seen.status}, not ${row.expect}: ${seen.body.slice(0, 300)}`)
  const script = options.script ?? (row.body ? postScript(row.body) : undefined)
  const wrkOptions = {
    threads: 1,
    connections: options.connections ?? connections,
    authorization: row.key && `Bearer ${row.key}`,
    script,
    cpus: WRK_CPU,
  }
  if (options.warmup !== 0) wrk(`${server.base}${row.path}`, { ...wrkOptions, seconds: options.warmup ?? 1 })
  const cpuBefore = cpuMsOf(server.pid)
  const result = wrk(`${server.base}${row.path}`, { ...wrkOptions, seconds })
  // The server's CPU time per answer: unlike req/s, barely moved by load elsewhere on the machine.
  const cpuUsPerRequest = ((cpuMsOf(server.pid) - cpuBefore) * 1000) / Math.max(1, result.requests)
  const refusals = row.expect >= 400
  const valid = !/socket errors/.test(result.errors ?? '') && (refusals ? result.non2xx === result.requests : result.non2xx === 0)
  console.log(
    `  ${row.name.padEnd(44)} ${result.requestsPerSecond.toFixed(0).padStart(7)} req/s  p50 ${ms(result.p50Ms)}  p99 ${ms(result.p99Ms)}  cpu ${cpuUsPerRequest.toFixed(1)} µs/request${valid ? '' : `  !! ${result.errors}`}`,
  )
  return { ...result, name: row.name, path: row.path, valid, cpuUsPerRequest }
}

const ms = (value: number) => `${value.toFixed(2)} ms`
const pct = (ratio: number) => `${(100 * ratio).toFixed(0)} %`
const mib = (value: number) => `${value.toFixed(0)} MiB`
const verdict = (met: boolean) => (met ? 'met' : '**missed**')

// ---- HTTP read paths, per store ----------------------------------------------------------------

const BRIEFING = { zone: 'Zona 3', profile: 'balanced', country: 'GT', language: 'en', budget_usd: 250000 }

/** A row and its ratio to the raw runs just before and after it. */
/** `cpuRatio`: the raw server's CPU time per answer over this row's, a view of the ratio that load elsewhere barely moves. */
type Compared = Measured & { rawAround: number; ratio: number; cpuRatio: number; sameWork?: SameWork }
/** The same work on raw `Bun.serve` and by a minimal Elysia app, measured right after the row; the row's ratios to the first. */
type SameWork = { run: Measured; elysia: Measured; ratio: number; cpuRatio: number }
type StoreRun = { store: string; runtime: Runtime; raw: Measured[]; rows: Compared[]; startupMs: number; logLines: number; counted: number }

/** Issues the benchmark's keys through the CLI: admin, pro (read+write, counted) and enterprise (limit 1). */
function issueKeys(cli: Server['cli']) {
  const key = (owner: string, tier: string, scopes: string, actor: string) => {
    cli('owner', 'create', '--id', owner, '--tier', tier)
    return (cli('key', 'issue', '--owner', owner, '--scopes', scopes, '--actor', actor) as { key: string }).key
  }
  const root = `bench-root-${run}`
  const admin = key(root, 'admin', 'read', root)
  const pro = key(`bench-pro-${run}`, 'pro', 'read,write', root)
  const limited = key(`bench-limited-${run}`, 'enterprise', 'read', root)
  return { admin, pro, limited }
}

async function measureStore(store: string, env: Record<string, string>, runtime: Runtime): Promise<StoreRun> {
  console.log(`\n${store} on ${RUNTIME_NAMES[runtime]}`)
  const server = await startMirador(`${store}-${runtime}`.replace(/\W+/g, '-'), env, undefined, runtime)
  const raw = await startRaw(runtime)
  let sameWork: Server | undefined
  let sameWorkElysia: Server | undefined
  try {
    const keys = issueKeys(server.cli)
    // The CLI's change reaches the server's key index within a second.
    await waitFor(`${server.base}/api/v1/health`, 200, { headers: { authorization: `Bearer ${keys.limited}` } }, server.proc.output)
    const briefing: Row = { name: 'POST /briefings/investor, cache hit', path: '/api/v1/briefings/investor', method: 'POST', body: JSON.stringify(BRIEFING), key: keys.pro, expect: 200 }
    // Cheap rows first; every row also waits until the server has answered what the previous one left queued.
    const rows: Row[] = [
      { name: '401: /health without a key', path: '/api/v1/health', expect: 401 },
      { name: '429: /health, key over its hourly limit', path: '/api/v1/health', key: keys.limited, expect: 429 },
      { name: 'GET /health, admin key (not counted)', path: '/api/v1/health', key: keys.admin, expect: 200 },
      { name: 'GET /health, pro key (counted)', path: '/api/v1/health', key: keys.pro, expect: 200 },
      { name: 'GET /zones?country=GT', path: '/api/v1/zones?country=GT', key: keys.pro, expect: 200 },
      { name: 'GET /zone/zona-3?country=GT', path: '/api/v1/zone/zona-3?country=GT', key: keys.pro, expect: 200 },
      { name: 'GET /listings, GT, Venta, 20 a page', path: '/api/v1/listings?country=GT&operation=Venta&limit=20', key: keys.pro, expect: 200 },
      briefing,
    ].filter((row) => !rowFilter || rowFilter.some((word) => row.name.toLowerCase().includes(word)))
    // The first briefing is written (and charged); every later one with this body is a cache hit.
    await answer(server, briefing)
    const hit = await answer(server, briefing)
    if (!(JSON.parse(hit.body) as { cached?: boolean }).cached) throw new Error(`the second briefing was not a cache hit: ${hit.body.slice(0, 300)}`)

    const sameWorkPaths = runtime === 'bun' ? rows.filter((row) => hasSameWork(row.name)).map((row) => row.path) : []
    if (sameWorkPaths.length > 0) {
      sameWork = await startSameWork('bench/raw-same-work.ts', server, keys.pro, sameWorkPaths)
      sameWorkElysia = await startSameWork('bench/raw-same-work-elysia.ts', server, keys.pro, sameWorkPaths)
    }
    const rawRow: Row = { name: `${RAW[runtime].name}, small JSON`, path: '/api/v1/health', expect: 200 }
    // The raw server runs before the first row and after every row: each row is compared with the two
    // raw runs around it, so that load elsewhere on the machine, which drifts, falls on both alike.
    const rawRuns = [await measure(raw, rawRow, { warmup: 2, alsoIdle: server })]
    const measured: Compared[] = []
    for (const [i, row] of rows.entries()) {
      const result = await measure(server, row, { warmup: i === 0 ? 3 : 1 })
      rawRuns.push(await measure(raw, rawRow, { warmup: 0, alsoIdle: server }))
      const rawAround = (rawRuns[i]!.requestsPerSecond + rawRuns[i + 1]!.requestsPerSecond) / 2
      const rawCpuAround = (rawRuns[i]!.cpuUsPerRequest + rawRuns[i + 1]!.cpuUsPerRequest) / 2
      const same = sameWork && hasSameWork(row.name) ? await measure(sameWork, { ...row, name: '  same work on raw Bun.serve' }, { warmup: 1, alsoIdle: server }) : undefined
      const elysia = same && sameWorkElysia ? await measure(sameWorkElysia, { ...row, name: '  same work, minimal Elysia' }, { warmup: 1, alsoIdle: server }) : undefined
      measured.push({
        ...result,
        rawAround,
        ratio: result.requestsPerSecond / rawAround,
        cpuRatio: rawCpuAround / result.cpuUsPerRequest,
        sameWork: same && elysia && { run: same, elysia, ratio: result.requestsPerSecond / same.requestsPerSecond, cpuRatio: same.cpuUsPerRequest / result.cpuUsPerRequest },
      })
    }
    const counted = measured.reduce((sum, m) => sum + m.requests, 0)
    await stop(server)
    return { store, runtime, raw: rawRuns, rows: measured, startupMs: server.startupMs, logLines: accessLogLines(server), counted }
  } finally {
    await stop(server)
    await stop(raw)
    if (sameWork) await stop(sameWork)
    if (sameWorkElysia) await stop(sameWorkElysia)
  }
}

// ---- How cost grows (PostgreSQL) ---------------------------------------------------------------

type SizeRun = {
  listings: number
  rows: Measured[]
  shapes: Measured[]
  startupMs: number
  rssAfterStart: number
  peak: number
}

/** Listings in the live listings read model of a schema (0 before the first load). */
async function listingCountOf(db: Db): Promise<number> {
  const [registry] = await db.query<{ present: string | null }>(`select to_regclass('mirador_generations')::text as present`)
  if (!registry?.present) return 0
  const live = await liveTables(db).of(listingsProjection).catch(() => null)
  return live ? listingCount(db, live.tables) : 0
}

/** A month before the synthetic market's end (projections/listings/synthetic.ts MARKET_END). */
const ESTIMATE_AS_OF = '2026-10-01T00:00:00Z'
/** Estimates asked in every country's busiest zone: a sale flat, a sale house, a rented flat. */
const ESTIMATE_SUBJECTS = ['GT', 'SV', 'HN', 'CR', 'BZ', 'DO', 'PA', 'BR'].flatMap((country) => [
  `country=${country}&zone=zona-1&operation=Venta&property_type=Apartamento&area_m2=90&bedrooms=2`,
  `country=${country}&zone=zona-1&operation=Venta&property_type=Casa&area_m2=200&bedrooms=3&bathrooms=2.5`,
  `country=${country}&zone=zona-2&operation=Renta&property_type=Apartamento&area_m2=70`,
])

/**
 * Past instants are answered from SQL until the first one has loaded the history into memory (seconds
 * at a million listings), then from memory: the row measures the latter, so it waits until an answer
 * comes back in under 100 ms twice in a row (at most two minutes).
 */
async function historyLoaded(server: Server, row: Row): Promise<void> {
  let fast = 0
  for (const until = Date.now() + 120_000; fast < 2 && Date.now() < until; ) {
    const started = performance.now()
    await answer(server, row)
    fast = performance.now() - started < 100 ? fast + 1 : 0
    if (fast === 0) await sleep(500)
  }
}

async function measureSize(size: (typeof SIZES)[number]): Promise<SizeRun> {
  console.log(`\n${size.listings.toLocaleString('en')} listings (schema ${size.schema})`)
  const db = await openPostgres(urlOf(size.schema))
  let listings: number
  try {
    // A schema that other benchmarks added listings to (e.g. through the API) is measured as it is.
    const present = await listingCountOf(db)
    listings = present > size.listings ? present : (await loadListings(db, size.listings, (line) => console.log(`  ${line}`))).listings
    if (present > size.listings) console.log(`  the schema holds ${present.toLocaleString('en')} listings: measured as it is`)
  } finally {
    await db.close()
  }
  let key = ''
  const server = await startMirador(`growth-${size.schema}`, { DATABASE_URL: urlOf(size.schema), DEMO_SEED: 'off', RATE_LIMIT_ENTERPRISE: '1000000000' }, (cli) => {
    const owner = `bench-http-${run}`
    cli('owner', 'create', '--id', owner, '--tier', 'enterprise')
    key = (cli('key', 'issue', '--owner', owner, '--scopes', 'read', '--actor', owner) as { key: string }).key
    return key
  })
  try {
    const rssAfterStart = memoryOf(server.pid).rssMiB
    console.log(`  start-up ${server.startupMs} ms, RSS ${mib(rssAfterStart)}`)
    const rows = [
      await measure(server, { name: 'GET /zones?country=GT', path: '/api/v1/zones?country=GT', key, expect: 200 }, { warmup: 3 }),
      await measure(server, { name: 'GET /listings, filtered page', path: `/api/v1/listings?${WRK_QUERY}`, key, expect: 200 }, { pauseMs: 1000 }),
    ]
    const estimates = ESTIMATE_SUBJECTS.map((subject) => `/api/v1/estimate?${subject}`)
    const estimatesThen = estimates.map((path) => `${path}&as_of=${ESTIMATE_AS_OF}`)
    rows.push(await measure(server, { name: 'GET /estimate', path: estimates[0]!, key, expect: 200 }, { script: rotateScript(estimates), pauseMs: 1000 }))
    const thenRow: Row = { name: 'GET /estimate, as_of', path: estimatesThen[0]!, key, expect: 200 }
    await historyLoaded(server, thenRow)
    rows.push(await measure(server, thenRow, { script: rotateScript(estimatesThen), pauseMs: 1000 }))
    const shapes: Measured[] = []
    if (size === SIZES[SIZES.length - 1]) {
      for (const shape of SHAPES) {
        const paths = shape.variants.map((variant) => `/api/v1/listings?${variant}`)
        const row: Row = { name: shape.name, path: paths[0]!, key, expect: 200 }
        shapes.push(await measure(server, row, { connections: SHAPE_CONNECTIONS, script: rotateScript(paths), pauseMs: 1000 }))
      }
    }
    const peak = memoryOf(server.pid).peakMiB
    return { listings, rows, shapes, startupMs: server.startupMs, rssAfterStart, peak }
  } finally {
    await stop(server)
  }
}

// ---- run ---------------------------------------------------------------------------------------

const loadStart = loadAverage()
const began = Date.now()
console.log(`machine: ${machine()}; load average ${loadStart}; pinning: ${canPin ? `server cpu ${SERVER_CPU}, wrk cpu ${WRK_CPU}` : 'not possible here'}`)
const stores: StoreRun[] = []
const sizes: SizeRun[] = []
let growthRaw: Measured | undefined
try {
  if (runs('embedded')) for (const runtime of runtimes) stores.push(await measureStore('embedded (PGlite)', {}, runtime))
  if (runs('postgres')) {
    for (const runtime of runtimes) {
      const schema = `bench_http_${run}_${runtime}`
      try {
        stores.push(await measureStore('PostgreSQL', { DATABASE_URL: urlOf(schema) }, runtime))
      } finally {
        const db = await openPostgres(baseUrl)
        await db.exec(`drop schema if exists ${schema} cascade`)
        await db.close()
      }
    }
  }
  if (runs('growth')) {
    const raw = await startRaw()
    try {
      console.log('\nraw Bun.serve')
      growthRaw = await measure(raw, { name: 'raw Bun.serve, small JSON', path: '/api/v1/health', expect: 200 }, { warmup: 2 })
    } finally {
      await stop(raw)
    }
    for (const size of SIZES) sizes.push(await measureSize(size))
  }
} finally {
  if (!process.env.KEEP_BENCH_WORK) rmSync(work, { recursive: true, force: true })
}
const loadEnd = loadAverage()
const minutes = ((Date.now() - began) / 60_000).toFixed(1)
console.log(`\ndone in ${minutes} min; load average ${loadEnd}`)

// ---- report ------------------------------------------------------------------------------------

/** `Node 22.23.3`, `Deno 2.9.6`: the version each runtime's program reports. */
function runtimeVersion(runtime: Runtime): string {
  const printed = execFileSync(bin(runtime), ['--version'], { encoding: 'utf8' })
  return `${RUNTIME_NAMES[runtime]} ${/\d+\.\d+\.\d+/.exec(printed)![0]}`
}

const date = new Date().toISOString().slice(0, 16).replace('T', ' ')
const environment = [
  `- Date: ${date} UTC; whole run ${minutes} min`,
  `- Machine: ${machine()}; load average ${loadStart} at start, ${loadEnd} at end`,
  `- Software: ${[`Bun ${Bun.version}`, ...runtimes.filter((r) => r !== 'bun').map(runtimeVersion)].join(', ')}, ${wrkVersion()}`,
  `- Pinning: ${canPin ? `every server (raw and real) on cpu ${SERVER_CPU}, wrk on cpu ${WRK_CPU} (\`taskset\`); PostgreSQL unpinned` : 'none (taskset missing or one core)'}`,
]
const invalidNote = (m: Measured) => (m.valid ? '' : ` (!! ${m.errors})`)

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

/** One table per store: each row on each runtime, compared with that runtime's raw server around it. */
function storeTable(store: string, on: StoreRun[]): string[] {
  const rawLines = on.map((s) => {
    const rawRps = s.raw.map((r) => r.requestsPerSecond)
    return `| ${RAW[s.runtime].name}, small JSON (${s.raw.length} runs: median, range) | ${RUNTIME_NAMES[s.runtime]} | ${median(rawRps).toFixed(0)} (${Math.min(...rawRps).toFixed(0)}–${Math.max(...rawRps).toFixed(0)}) | ${ms(median(s.raw.map((r) => r.p50Ms)))} | ${ms(median(s.raw.map((r) => r.p99Ms)))} | | 100 % | ${median(s.raw.map((r) => r.cpuUsPerRequest)).toFixed(1)} | 100 % | |`
  })
  const rowLines = on[0]!.rows.flatMap((_, i) =>
    on.map((s) => {
      const m = s.rows[i]!
      const goal = goalOf(m.name)
      const verdictCell = goal === undefined ? '' : `≥ ${pct(goal)}: ${verdict(m.ratio >= goal)}`
      return `| ${m.name}${invalidNote(m)} | ${RUNTIME_NAMES[s.runtime]} | ${m.requestsPerSecond.toFixed(0)} | ${ms(m.p50Ms)} | ${ms(m.p99Ms)} | ${m.rawAround.toFixed(0)} | ${pct(m.ratio)} | ${m.cpuUsPerRequest.toFixed(1)} | ${pct(m.cpuRatio)} | ${verdictCell} |`
    }),
  )
  const sameWorkLines = on.flatMap((s) =>
    s.rows.flatMap((m) =>
      m.sameWork
        ? [
            `| ${m.name} | ${m.requestsPerSecond.toFixed(0)} | ${m.sameWork.run.requestsPerSecond.toFixed(0)}${invalidNote(m.sameWork.run)} | ${pct(m.sameWork.ratio)} | ${m.cpuUsPerRequest.toFixed(1)} | ${m.sameWork.run.cpuUsPerRequest.toFixed(1)} | ${pct(m.sameWork.cpuRatio)} | ${m.sameWork.elysia.requestsPerSecond.toFixed(0)}${invalidNote(m.sameWork.elysia)} | ${m.sameWork.elysia.cpuUsPerRequest.toFixed(1)} | ≥ ${pct(SAME_WORK_GOAL)}: ${verdict(m.sameWork.ratio >= SAME_WORK_GOAL)} |`,
          ]
        : [],
    ),
  )
  const sameWorkTable = sameWorkLines.length
    ? [
        'Against the same work on raw `Bun.serve` (bench/raw-same-work.ts: the key looked up in a map, the counter and its',
        'rate-limit headers, a request id, the bytes of the real answer with its headers), measured right after the row, then',
        'the same work done by a minimal Elysia app (bench/raw-same-work-elysia.ts: one route, no hooks):',
        '',
        '| request (Bun) | Mirador req/s | same work req/s | ratio | Mirador CPU per answer (µs) | same work CPU per answer (µs) | ratio by CPU | minimal Elysia, same work (req/s) | its CPU per answer (µs) | goal (issue 34) |',
        '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
        ...sameWorkLines,
        '',
      ]
    : []
  return [
    `### ${store}`,
    '',
    "| request | runtime | req/s | p50 | p99 | the runtime's raw server around it (req/s) | ratio to raw | server CPU per answer (µs) | ratio by CPU | goal (issue 22) |",
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---|',
    ...rawLines,
    ...rowLines,
    '',
    ...sameWorkTable,
    ...on.flatMap((s) => [
      `${RUNTIME_NAMES[s.runtime]}: start-up with the demo market (spawn to ready, /readyz 200) ${(s.startupMs / 1000).toFixed(1)} s; access log ${s.logLines.toLocaleString('en')} lines written for ${s.counted.toLocaleString('en')} requests counted by wrk in the measured runs (plus warm-ups and probes; none lost at shutdown).`,
      '',
    ]),
  ]
}

function storeGoals(s: StoreRun): string[] {
  const judged = s.rows.filter((m) => goalOf(m.name) !== undefined)
  const met = judged.filter((m) => m.ratio >= goalOf(m.name)!)
  const same = s.rows.filter((m) => m.sameWork)
  const sameMet = same.filter((m) => m.sameWork!.ratio >= SAME_WORK_GOAL)
  return [
    `- ${s.store} on ${RUNTIME_NAMES[s.runtime]}: ${met.length} of ${judged.length} rows meet their goal${met.length ? ` (${met.map((m) => m.name).join('; ')})` : ''}`,
    ...(same.length ? [`- ${s.store} on ${RUNTIME_NAMES[s.runtime]}, against the same work on raw Bun.serve (issue 34, ≥ ${pct(SAME_WORK_GOAL)}): ${sameMet.length} of ${same.length} rows`] : []),
  ]
}

if (stores.length > 0 && !rowFilter) {
  const body = [
    'Each row is one `wrk -t1` run against one server over loopback, after a warm-up (3 s on the first row of a server, 1 s',
    "otherwise) and once the server is idle again. Each runtime's real server is compared with that runtime's own raw server",
    'answering a small JSON (`Bun.serve` bench/raw-server.ts, `node:http` bench/raw-server-node.ts, `Deno.serve`',
    'bench/raw-server-deno.ts), measured before the first row and after every row; each ratio is to the mean of the two raw',
    'runs around that row (the machine is shared: its load drifts during a run). The real server runs as its npm script',
    'starts it (`bun src/main.ts`, `npm run start:node`, `npm run start:deno`), with its defaults (access log on, written to a file) except:',
    'memory rate limiter, the local analyst, `RATE_LIMIT_PRO=1000000000` (pro keys are counted, never refused) and',
    '`RATE_LIMIT_ENTERPRISE=1`: the 429 row uses an enterprise key that spent its hour on the first request (the same',
    'limiter path as any tier). Keys come from the CLI (admin; pro with read+write; enterprise). Zones, zone and listings read',
    'the demo market (2,000 listings); the briefing row posts the same body as the first, charged request, so every request',
    'is a cache hit. The server\'s CPU time per answer (from /proc, around each wrk run) is given beside req/s: the raw',
    "server's over the row's is the ratio by CPU, which load elsewhere on the machine moves far less than req/s.",
    '',
    ...environment,
    `- Command: \`npm run bench:http -- --duration ${seconds} --connections ${connections}${flags.only ? ` --only ${flags.only}` : ''} --runtimes ${runtimes.join(',')}\` (\`wrk -t1 -c${connections} -d${seconds}s\`)`,
    '',
    ...[...new Set(stores.map((s) => s.store))].flatMap((store) => storeTable(store, stores.filter((s) => s.store === store))),
    "**Goals** (ratio to the runtime's raw server in the same run):",
    '',
    ...stores.flatMap(storeGoals),
    '',
    '**Reading the numbers**:',
    '',
    '- A bare response with the headers every answer has (`X-Request-Id`, `Content-Type`) already costs Bun ~15 % of the raw',
    '  `Response.json`; a counted key adds the rate-limit headers. On the embedded store the PGlite pollers share the',
    "  server's thread (~8 % of a core when idle).",
    '- `/zones` and `/zone/{slug}` answer from statistics prepared in memory and `/listings` from the in-memory inventory:',
    '  no database on their request path; what is left is building and serialising the JSON (a /zones answer is ~3 KB,',
    '  a listings page of 20 ~9 KB).',
    '- Runtimes: each is compared with its own raw server in the same run. Node and Deno answer through the same Elysia',
    "  `app.handle` as Bun, which Elysia compiles for Bun first; on Node the edge (src/main-node.ts) also turns every",
    '  `IncomingMessage` into a web `Request` and reads the `Response` back before writing it, work a bare `node:http` does',
    "  not do. Elysia's own Node adapter would write to the `ServerResponse` directly, at the price of building the app for",
    '  one runtime (docs/decisions.md). Not profiled further: the numbers above come from a machine shared with other work.',
    '- Against the same work (issue 34): a minimal Elysia app doing it answers at about the raw server\'s CPU per answer',
    "  (the last two columns), so Elysia's routing and its Response from `set` are not the gap: Mirador's own hooks and",
    '  per-request work are. A CPU profile of /zones on the embedded store (2026-11-28, 20 s of wrk): inputs read by their',
    '  schemas ~5 % of samples, key check and rate-limit headers ~5 %, the access log ~5 % (on by default; 5–10 µs an',
    '  answer by turning it off), the embedded store\'s background work ~10 % before decision 0122; removing one hook at a',
    '  time (request ids, finishing, the error plugin) moved the CPU per answer by less than the run-to-run noise: the rest',
    '  is spread over the gate, the operation wrapper, the handler\'s awaits and the ETag.',
    '- The briefing cache hit records every hit as a `BriefingServedFromCache` event (the quota audit), appended with group',
    "  commit on the event loop's next turn. Each batch is one commit; on the embedded store PGlite runs that transaction on",
    "  the server's own thread. Recording hits outside the response (acknowledging before the record is durable) would lift",
    '  this row, at the price of audit records lost in a crash: not done.',
  ]
  if (!flags['no-write']) writeResultsSection('HTTP read paths', body.join('\n'))
}

if (sizes.length > 0) {
  const sizeHeader = sizes.map((s) => s.listings.toLocaleString('en'))
  const rowNames = sizes[0]!.rows.map((m) => m.name)
  const cell = (m: Measured) => `${m.requestsPerSecond.toFixed(0)} / ${ms(m.p99Ms)}${invalidNote(m)}`
  const shapes = sizes.find((s) => s.shapes.length > 0)?.shapes ?? []
  const shapeMet = (m: Measured) => m.valid && m.requestsPerSecond >= GOALS.shapeRps && m.p99Ms <= GOALS.shapeP99Ms
  const biggest = sizes[sizes.length - 1]!
  const body = [
    'The real server on PostgreSQL schemas holding 10,000, 100,000 and 1,000,000 synthetic listings, loaded straight into',
    'the live listings read model by bench/listings-load.ts (no listing events, so `DEMO_SEED=off`), with an enterprise key',
    'whose limit is never reached (`RATE_LIMIT_ENTERPRISE=1000000000`, counted), access log on (to a file), memory rate',
    `limiter. Each cell is one \`wrk -t1 -c${connections} -d${seconds}s\` run (req/s / p99) after a warm-up. The listing query shapes are those of`,
    `bench/listings.ts, each rotating through its variants over all eight countries, at ${SHAPE_CONNECTIONS} connections.`,
    'RSS: the API process right after its first 200, and its peak (VmHWM) after all rows. Start-up: spawn to the first 200 of',
    '`/api/v1/health`.',
    '',
    ...environment,
    `- Command: \`npm run bench:http -- --duration ${seconds} --connections ${connections}${flags.only ? ` --only ${flags.only}` : ''}\``,
    `- Raw Bun.serve, small JSON, same run: ${growthRaw ? `${growthRaw.requestsPerSecond.toFixed(0)} req/s, p99 ${ms(growthRaw.p99Ms)}` : '–'}`,
    '',
    `| listings | ${sizeHeader.join(' | ')} |`,
    `|---|${sizes.map(() => '---:').join('|')}|`,
    ...rowNames.map((name, i) => `| ${name} (req/s / p99) | ${sizes.map((s) => cell(s.rows[i]!)).join(' | ')} |`),
    `| ratio of the filtered page to raw | ${sizes.map((s) => (growthRaw ? pct(s.rows[1]!.requestsPerSecond / growthRaw.requestsPerSecond) : '–')).join(' | ')} |`,
    `| start-up to ready (/readyz 200) | ${sizes.map((s) => `${(s.startupMs / 1000).toFixed(1)} s`).join(' | ')} |`,
    `| RSS after start / peak | ${sizes.map((s) => `${mib(s.rssAfterStart)} / ${mib(s.peak)}`).join(' | ')} |`,
    '',
    `### Listing query shapes at ${biggest.listings.toLocaleString('en')} listings (\`wrk -t1 -c${SHAPE_CONNECTIONS} -d${seconds}s\`)`,
    '',
    '| query shape | variants | req/s | p50 | p99 | goal (≥ 13,390 req/s, p99 ≤ 50 ms) |',
    '|---|---:|---:|---:|---:|---|',
    ...shapes.map((m) => {
      const shape = SHAPES.find((s) => s.name === m.name)!
      return `| ${m.name}${invalidNote(m)} | ${shape.variants.length} | ${m.requestsPerSecond.toFixed(0)} | ${ms(m.p50Ms)} | ${ms(m.p99Ms)} | ${verdict(shapeMet(m))} |`
    }),
    '',
    '**Goals**:',
    '',
    `- Filtered pages at ${biggest.listings.toLocaleString('en')} listings, ${SHAPE_CONNECTIONS} connections: ${shapes.filter(shapeMet).length} of ${shapes.length} shapes meet ≥ 13,390 req/s with p99 ≤ 50 ms (${verdict(shapes.length > 0 && shapes.every(shapeMet))}).`,
    `- Start-up at ${biggest.listings.toLocaleString('en')} listings: ${(biggest.startupMs / 1000).toFixed(1)} s (goal ≤ 15 s: ${verdict(biggest.startupMs <= GOALS.startupMs)}).`,
    '',
    'wrk counts a request not answered within 2 s as a socket timeout; a row with any is marked (!!). PostgreSQL is not',
    'pinned: it shares both cores with the API and wrk.',
  ]
  if (!flags['no-write']) writeResultsSection('How cost grows', body.join('\n'))
}
if (!flags['no-write'] && ((stores.length > 0 && !rowFilter) || sizes.length > 0)) console.log('written to bench/results.md')
