/**
 * Ingestion and demo seeding, measured on the real server and CLI processes:
 * - start-up: a fresh `bun src/main.ts` on an empty embedded store seeds the demo market (2,000
 *   listings by default), catches its projections up and listens; its own log gives the seconds of
 *   each phase and `startup_ms`;
 * - bulk ingestion: a generated feed of `--listings` demo listings written as NDJSON, recorded with
 *   `bun src/cli.ts ingest FILE` against a running server (embedded store: through the server's
 *   socket; PostgreSQL: the CLI writes to the database itself), then the time until the server's
 *   read models have caught up. The feed is given to the CLI in files of `--chunk-lines` lines (one
 *   `ingest` each, as a feed arrives day by day), so that the rate is printed per chunk: whether a
 *   line costs more as the store grows. The CLI's peak RSS (VmHWM) is sampled while it runs.
 *
 *   npx bun bench/ingest.ts [--listings 50000] [--startups 3] [--no-pglite] [--no-postgres] [--no-write]
 *                           [--chunk-lines 100000] [--batches all-or-nothing,stream-by-stream]
 *                           [--baseline DIR [--baseline-label TEXT] [--baseline-listings N]]
 *
 * `--batches` names how the event store records each batch of listings: all or nothing (one
 * transaction) and/or stream by stream (one append per listing, as on KurrentDB before 25.1: the
 * testing knob SINGLE_STREAM_APPENDS, given to the server and the CLI); each is measured on every
 * store. `--startups 0` skips the start-ups.
 *
 * `--baseline DIR` runs the same measurements, interleaved, on another checkout of the project
 * (e.g. `git worktree add /tmp/base <commit>` with node_modules linked), for a before/after under
 * the same machine load; with `--baseline-listings N` both ingest a feed of N listings (a slow
 * baseline would take too long on the big one) and this tree also ingests the big one. PostgreSQL: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test),
 * schema `bench_ingest`, dropped before and after. Results are printed and written to
 * bench/results.md (section "Ingestion and demo seeding") unless --no-write.
 */
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import postgres from 'postgres'
import { generateDemoFeed } from '../src/domain/demo/market.ts'
import { BUN, RESULTS, ROOT, freePort, sleep, startProcess } from './support.ts'

const SECTION = 'Ingestion and demo seeding'
const SCHEMA = 'bench_ingest'

const { values: flags } = parseArgs({
  options: {
    listings: { type: 'string', default: '50000' },
    startups: { type: 'string', default: '3' },
    baseline: { type: 'string' },
    'baseline-label': { type: 'string', default: 'before' },
    'baseline-listings': { type: 'string' },
    'no-pglite': { type: 'boolean', default: false },
    'no-postgres': { type: 'boolean', default: false },
    'no-write': { type: 'boolean', default: false },
    batches: { type: 'string', default: 'all-or-nothing,stream-by-stream' },
    'chunk-lines': { type: 'string', default: '100000' },
  },
})
type Batches = 'all-or-nothing' | 'stream-by-stream'
const batchModes = flags.batches.split(',').map((b) => {
  if (b !== 'all-or-nothing' && b !== 'stream-by-stream') throw new Error(`--batches: ${b} is neither all-or-nothing nor stream-by-stream`)
  return b as Batches
})
const listings = Number(flags.listings)
const baselineListings = flags.baseline && flags['baseline-listings'] ? Number(flags['baseline-listings']) : listings
const startups = Number(flags.startups)
const chunkLines = Number(flags['chunk-lines'])
const databaseUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'

type Code = { label: string; root: string }
const codes: Code[] = [
  ...(flags.baseline ? [{ label: flags['baseline-label'], root: resolve(flags.baseline) }] : []),
  { label: flags.baseline ? 'after' : 'this tree', root: ROOT },
]

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!

type Server = { started: number; output: () => string; log(event: string): Record<string, unknown> | undefined; stop(): Promise<void> }

/** `bun src/main.ts` of `root`; resolves once it logs `listening`. */
async function startServer(root: string, extraEnv: Record<string, string>): Promise<Server> {
  const started = performance.now()
  const env = { HOST: '127.0.0.1', PORT: String(await freePort()), ACCESS_LOG: 'off', REDIS_URL: '', DATABASE_URL: '', ...extraEnv }
  const { child, output, stop } = startProcess(['src/main.ts'], env, { cwd: root })
  const log = (event: string) => {
    for (const line of output().split('\n')) {
      if (!line.includes(`"event":"${event}"`)) continue
      return JSON.parse(line) as Record<string, unknown>
    }
    return undefined
  }
  const server: Server = { started, output, log, stop }
  const deadline = Date.now() + 180_000
  while (!log('listening')) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`server in ${root} did not start:\n${output()}`)
    await sleep(50)
  }
  return server
}

/** Peak resident memory (VmHWM) of a process in MiB, 0 once it is gone. */
async function peakMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '')
  const kib = /VmHWM:\s+(\d+)/.exec(status)?.[1]
  return kib ? Number(kib) / 1024 : 0
}

/** Runs the CLI; `peak` is its peak RSS as last sampled (every 200 ms) before it exited. */
async function cliMeasured(root: string, env: Record<string, string>, ...args: string[]): Promise<{ result: Record<string, unknown>; peak: number }> {
  let peak = 0
  let child: ReturnType<typeof execFile> | undefined
  const sampler = setInterval(() => {
    if (child?.pid) void peakMiB(child.pid).then((mib) => (peak = Math.max(peak, mib)))
  }, 200)
  try {
    const result = await new Promise<Record<string, unknown>>((done, fail) => {
      child = execFile(
        BUN,
        ['src/cli.ts', ...args, '--json'],
        { cwd: root, env: { ...process.env, REDIS_URL: '', DATABASE_URL: '', ...env }, maxBuffer: 64 * 2 ** 20 },
        (error, stdout, stderr) => (error ? fail(new Error(`cli ${args.join(' ')}: ${error.message}\n${stderr}`)) : done(JSON.parse(stdout))),
      )
    })
    return { result, peak }
  } finally {
    clearInterval(sampler)
  }
}

const cli = async (root: string, env: Record<string, string>, ...args: string[]) => (await cliMeasured(root, env, ...args)).result

type Startup = { seed: number; projections: number; startupMs: number; untilListening: number }

async function measureStartup(code: Code): Promise<Startup> {
  const dataDir = mkdtempSync(join(os.tmpdir(), 'mirador-bench-start-'))
  const server = await startServer(code.root, { DATA_DIR: dataDir, DEMO_SEED: 'on' })
  const untilListening = (performance.now() - server.started) / 1000
  await server.stop()
  rmSync(dataDir, { recursive: true, force: true })
  const seeded = server.log('demo_seeded')
  if (!seeded) throw new Error(`no demo was seeded:\n${server.output()}`)
  return {
    seed: Number(seeded.seconds),
    projections: Number(server.log('projections_ready')!.seconds),
    startupMs: Number(server.log('listening')!.startup_ms),
    untilListening,
  }
}

/** The feed, and the same lines cut into files of `chunkLines` lines. */
type Feed = { listings: number; lines: number; chunks: { path: string; lines: number }[] }
/** One chunk's CLI run: its lines, the CLI's own ingest time, and its wall time (start-up and the catch-up before exit included). */
type Chunk = { lines: number; ingestSeconds: number; wallSeconds: number }
type Ingest = {
  code: string
  store: string
  batches: Batches
  feed: Feed
  events: number
  seconds: number
  currentAfter: number
  chunks: Chunk[]
  cliPeakMiB: number
}

async function dropSchema() {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  await sql.unsafe(`drop schema if exists ${SCHEMA} cascade`)
  await sql.end()
}

async function measureIngest(code: Code, store: 'pglite' | 'postgres', feed: Feed, batches: Batches): Promise<Ingest> {
  const dataDir = mkdtempSync(join(os.tmpdir(), 'mirador-bench-ingest-'))
  const url = new URL(databaseUrl)
  url.searchParams.set('search_path', SCHEMA)
  const env = {
    DATA_DIR: dataDir,
    DEMO_SEED: 'off',
    SINGLE_STREAM_APPENDS: batches === 'stream-by-stream' ? 'on' : 'off',
    ...(store === 'postgres' ? { DATABASE_URL: url.toString() } : {}),
  }
  if (store === 'postgres') await dropSchema()
  const server = await startServer(code.root, env)
  try {
    // A tree older than the knob has no such line (and records batches all or nothing).
    const logged = server.log('event_store')?.batches
    if (logged !== undefined && logged !== batches) throw new Error(`the server records batches ${logged}, not ${batches}`)
    const started = performance.now()
    const chunks: Chunk[] = []
    let cliPeakMiB = 0
    let linesDone = 0
    for (const chunk of feed.chunks) {
      const chunkStarted = performance.now()
      const { result, peak } = await cliMeasured(code.root, env, 'ingest', chunk.path)
      if (Number(result.read) !== chunk.lines || Number(result.rejected) !== 0) throw new Error(`unexpected ingest result ${JSON.stringify(result)}`)
      const run = { lines: chunk.lines, ingestSeconds: Number(result.seconds), wallSeconds: (performance.now() - chunkStarted) / 1000 }
      chunks.push(run)
      cliPeakMiB = Math.max(cliPeakMiB, peak)
      linesDone += chunk.lines
      console.log(
        `  ${code.label} ${store} lines ${linesDone - chunk.lines + 1}–${linesDone}: ${(run.lines / run.wallSeconds).toFixed(0)} lines/s ` +
          `(CLI ingest ${(run.lines / run.ingestSeconds).toFixed(0)} lines/s; wall ${run.wallSeconds.toFixed(1)} s), CLI peak RSS ${peak.toFixed(0)} MiB, load ${os.loadavg()[0]!.toFixed(2)}`,
      )
    }
    const seconds = (performance.now() - started) / 1000
    let status: { projection: string; state: string; head: number; lag_events: number }[]
    for (;;) {
      // `generations` since projections have generations (`projections` with `lag` before).
      const answer = await cli(code.root, env, 'projections', 'status')
      status = (answer.generations ?? answer.projections) as typeof status
      if (status.every((g) => (g.lag_events ?? (g as unknown as { lag: number }).lag) === 0 || g.state === 'previous' || g.state === 'retired')) break
      await sleep(100)
    }
    const currentAfter = (performance.now() - started) / 1000
    const line = { code: code.label, store, batches, feed, events: status[0]!.head, seconds, currentAfter, chunks, cliPeakMiB }
    console.log(
      `${line.code.padEnd(24)} ${store.padEnd(9)} ${batches.padEnd(16)} ${feed.lines} lines → ${line.events} events in ${seconds.toFixed(1)} s ` +
        `(${(feed.lines / seconds).toFixed(0)} lines/s); read models current after ${currentAfter.toFixed(1)} s`,
    )
    return line
  } finally {
    await server.stop()
    rmSync(dataDir, { recursive: true, force: true })
    if (store === 'postgres') await dropSchema()
  }
}

async function postgresAnswers(): Promise<boolean> {
  const sql = postgres(databaseUrl, { max: 1, connect_timeout: 2, onnotice: () => {} })
  try {
    await sql`select 1`
    return true
  } catch {
    return false
  } finally {
    await sql.end({ timeout: 1 })
  }
}

const machine = `${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${os.type()} ${os.release()}`
const loadBefore = os.loadavg()[0]!.toFixed(2)
console.log(`machine: ${machine}; load average ${loadBefore}`)

// Start-up, interleaved: a burst of load from elsewhere hits one round, not one variant.
const startupRuns = new Map(codes.map((c) => [c.label, [] as Startup[]]))
for (let round = 1; round <= startups; round++) {
  for (const code of codes) {
    const run = await measureStartup(code)
    startupRuns.get(code.label)!.push(run)
    console.log(
      `start-up ${round}/${startups} ${code.label.padEnd(24)} seed ${run.seed.toFixed(2)} s, projections ${run.projections.toFixed(2)} s, ` +
        `startup_ms ${run.startupMs}, process start → listening ${run.untilListening.toFixed(2)} s`,
    )
  }
}

const feedDir = mkdtempSync(join(os.tmpdir(), 'mirador-bench-feed-'))
/** A demo feed of `size` listings as NDJSON, in observation order like a real export. */
async function writeFeed(size: number): Promise<Feed> {
  const records = generateDemoFeed({ seed: 'bench', listings: size, anchor: new Date('2026-11-01T00:00:00.000Z') })
  const write = (file: string, from: number, to: number) =>
    new Promise<void>((done, fail) => {
      const out = createWriteStream(file)
      out.on('error', fail)
      for (let i = from; i < to; i++) out.write(`${JSON.stringify(records[i])}\n`)
      out.end(done)
    })
  const chunks: Feed['chunks'] = []
  for (let from = 0; from < records.length; from += chunkLines) {
    const to = Math.min(records.length, from + chunkLines)
    const file = join(feedDir, `feed-${size}-${chunks.length}.ndjson`)
    await write(file, from, to)
    chunks.push({ path: file, lines: to - from })
  }
  const mib = chunks.reduce((n, chunk) => n + Bun.file(chunk.path).size, 0) / 2 ** 20
  console.log(`feed: ${size} listings, ${records.length} lines in ${chunks.length} files, ${mib.toFixed(1)} MiB`)
  return { listings: size, lines: records.length, chunks }
}

const stores: ('pglite' | 'postgres')[] = flags['no-pglite'] ? [] : ['pglite']
if (flags['no-postgres']) console.log('[skipped] PostgreSQL ingestion: --no-postgres')
else if (await postgresAnswers()) stores.push('postgres')
else console.log(`[skipped] PostgreSQL ingestion: nothing answers at ${databaseUrl}`)
const ingests: Ingest[] = []
try {
  const big = await writeFeed(listings)
  const small = baselineListings === listings ? big : await writeFeed(baselineListings)
  for (const store of stores) {
    for (const batches of batchModes) {
      for (const code of codes) ingests.push(await measureIngest(code, store, small, batches))
      if (small !== big) ingests.push(await measureIngest(codes.at(-1)!, store, big, batches))
    }
  }
} finally {
  rmSync(feedDir, { recursive: true, force: true })
}

if (!flags['no-write']) {
  const range = (xs: number[], digits: number) =>
    `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`
  const body = [
    'A fresh `npm start` on an empty embedded store (PGlite) seeds the deterministic demo market (2,000 listings), catches the',
    'projections up and listens; the server logs each phase (`demo_seeded`, `projections_ready`, `startup_ms` from the first line',
    'of main.ts; "process start" adds Bun start-up and module loading). Then a generated demo feed is recorded with',
    '`bun src/cli.ts ingest FILE` against a running server (embedded store: through its socket; PostgreSQL: the CLI writes to the',
    'database itself while the server projects), and the time until every projection has caught up is read with',
    '`projections status`. "ingest" is the wall time of the CLI process (with PostgreSQL it also catches the projections up',
    `before it exits); the feed is given in files of ${chunkLines.toLocaleString('en')} lines, one CLI run each, and "per chunk" is`,
    "each run's lines over its wall time (start-up and the catch-up before it exits included) for the first, the last and",
    'the slowest full chunk. "CLI peak RSS" is the highest VmHWM of those runs, sampled every 200 ms. "batches": each batch',
    'of listings recorded all or nothing (one transaction), or stream by stream (one',
    'append per listing, as on KurrentDB before 25.1; `SINGLE_STREAM_APPENDS=on`). Medians of the start-ups, range in',
    'parentheses. `--baseline` rows come from a copy of an earlier commit',
    'measured in the same run, on a smaller feed when it is too slow for the big one. The machine is shared with other jobs.',
    '',
    `- Date: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    `- Machine: ${machine}; load average ${loadBefore} at start`,
    `- Software: Bun ${Bun.version}, PGlite (embedded), PostgreSQL on the same host`,
    `- Command: \`npx bun bench/ingest.ts --listings ${listings} --startups ${startups} --batches ${flags.batches} --chunk-lines ${chunkLines}${flags.baseline ? ` --baseline DIR --baseline-label '${flags['baseline-label']}' --baseline-listings ${baselineListings}` : ''}\``,
    '',
    ...(startups === 0
      ? []
      : [
          '| code | demo seeded (s) | projections ready (s) | startup_ms | process start → listening (s) |',
          '|---|---:|---:|---:|---:|',
          ...codes.map((code) => {
            const runs = startupRuns.get(code.label)!
            return `| ${code.label} | ${range(runs.map((r) => r.seed), 2)} | ${range(runs.map((r) => r.projections), 2)} | ${range(runs.map((r) => r.startupMs), 0)} | ${range(runs.map((r) => r.untilListening), 2)} |`
          }),
          '',
        ]),
    '| code | store | batches | listings | lines | events | ingest (s) | lines/s | per chunk: first / last / slowest (lines/s) | CLI peak RSS (MiB) | read models current after (s) |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...ingests.map((r) => {
      // A short last chunk is mostly the CLI's start-up: the full ones tell how the rate moves.
      const full = r.chunks.filter((c) => c.lines === chunkLines)
      const rates = (full.length > 0 ? full : r.chunks).map((c) => c.lines / c.wallSeconds)
      const perChunk = `${rates[0]!.toFixed(0)} / ${rates.at(-1)!.toFixed(0)} / ${Math.min(...rates).toFixed(0)}`
      return (
        `| ${r.code} | ${r.store} | ${r.batches} | ${r.feed.listings} | ${r.feed.lines} | ${r.events} | ${r.seconds.toFixed(1)} | ` +
        `${(r.feed.lines / r.seconds).toFixed(0)} | ${perChunk} | ${r.cliPeakMiB.toFixed(0)} | ${r.currentAfter.toFixed(1)} |`
      )
    }),
    '',
    `Load average at the end: ${os.loadavg()[0]!.toFixed(2)}.`,
  ].join('\n')
  // Read just before writing: other benchmarks may have rewritten their sections meanwhile.
  const existing = existsSync(RESULTS) ? readFileSync(RESULTS, 'utf8') : '# Benchmark results\n'
  const heading = `## ${SECTION}`
  const section = `${heading}\n\n${body}\n`
  const start = existing.search(new RegExp(`^${heading}$`, 'm'))
  const next = start < 0 ? -1 : existing.indexOf('\n## ', start + 1)
  const updated =
    start < 0
      ? `${existing.trimEnd()}\n\n${section}`
      : existing.slice(0, start) + section + (next < 0 ? '' : `\n${existing.slice(next + 1)}`)
  writeFileSync(RESULTS, updated)
  console.log(`written to ${RESULTS}`)
}
