/**
 * Freshness: how long after `npm run cli -- ingest` returns a new listing shows in the answers of
 * the running server: /zone/{slug} (prepared zone statistics) and /listings (the inventory). Runs the
 * real server on the embedded store with the demo market, on PostgreSQL with the demo market, and on
 * PostgreSQL with the 1,000,000-listing market of bench/listings.ts (schema bench_listings_1m, loaded
 * by `npm run bench:listings` or bench/http.ts); the CLI is a separate process, as an operator's is.
 *
 *   npx bun bench/freshness.ts [--rounds 5] [--only embedded|postgres|1m] [--no-write]
 *
 * Results are printed and written to bench/results.md (section "Freshness") unless --no-write.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { openPostgres } from '../src/db/postgres.ts'
import { BUN, freePort, loadAverage, machine, percentile, ROOT, sleep, startProcess, waitFor, writeResultsSection } from './support.ts'

const { values: flags } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    only: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
  },
})
const rounds = Number(flags.rounds)
const baseUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'
const withSchema = (schema: string) => {
  const url = new URL(baseUrl)
  url.searchParams.set('search_path', schema)
  return url.toString()
}

type Setup = { name: string; env: Record<string, string>; cleanup(): Promise<void> }

function embedded(): Setup {
  const dataDir = mkdtempSync(join(os.tmpdir(), 'mirador-fresh-'))
  return { name: 'embedded (PGlite), demo market', env: { DATA_DIR: dataDir }, cleanup: async () => rmSync(dataDir, { recursive: true, force: true }) }
}

function postgres(schema: string, name: string, keep: boolean): Setup {
  const dataDir = mkdtempSync(join(os.tmpdir(), 'mirador-fresh-'))
  return {
    name,
    env: { DATA_DIR: dataDir, DATABASE_URL: withSchema(schema), ...(keep ? { DEMO_SEED: 'false' } : {}) },
    async cleanup() {
      rmSync(dataDir, { recursive: true, force: true })
      if (keep) return
      const db = await openPostgres(baseUrl)
      await db.exec(`drop schema if exists ${schema} cascade`)
      await db.close()
    },
  }
}

/** Runs the CLI as an operator would; returns its stdout. */
function cli(env: Record<string, string>, args: string[]): string {
  const run = spawnSync(BUN, ['src/cli.ts', ...args], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8' })
  if (run.status !== 0) throw new Error(`cli ${args.join(' ')} failed:\n${run.stdout}\n${run.stderr}`)
  return run.stdout
}

/** A verified broker listing in GT Zona 3, new each round. */
function feedLine(id: string): string {
  const now = new Date().toISOString()
  return JSON.stringify({
    source: 'broker',
    source_id: id,
    country: 'GT',
    zone: 'Zona 3',
    operation: 'Venta',
    property_type: 'Casa',
    price: 1_900_000,
    currency: 'GTQ',
    area_m2: 140,
    bedrooms: 3,
    bathrooms: 2,
    title: 'Casa en venta, Zona 3',
    broker: { id: 'gt-brk-01', name: 'Inmobiliaria Los Altos' },
    url: `https://gt-brk-01.example/propiedades/${id}`,
    listed_at: now,
    verified_at: now,
    status: 'active',
    observed_at: now,
  })
}

type Sample = { zoneMs: number; listingsMs: number }

async function measure(setup: Setup): Promise<Sample[]> {
  const port = await freePort()
  const env = { ...setup.env, PORT: String(port), ACCESS_LOG: 'false' }
  const server = startProcess(['src/main.ts'], env)
  const base = `http://127.0.0.1:${port}/api/v1`
  try {
    await waitFor(`${base}/health`, 401, {}, server.output, 300_000)
    const owner = `fresh${Date.now()}`
    cli(env, ['owner', 'create', '--id', owner, '--tier', 'admin'])
    const key = /mrd_[A-Za-z0-9]+/.exec(cli(env, ['key', 'issue', '--owner', owner, '--scopes', 'read', '--actor', owner]))![0]
    const headers = { authorization: `Bearer ${key}` }
    const get = async (path: string) => (await (await fetch(`${base}${path}`, { headers })).json()) as Record<string, unknown>
    const zoneCount = async () => (await get('/zone/zona-3?country=GT')).n_active as number
    const listingTotal = async () => (await get('/listings?country=GT&zone=Zona%203&operation=Venta&property_type=Casa')).total as number
    // Waits until the server has answered zones once (the first preparation) and the key works.
    await waitFor(`${base}/zone/zona-3?country=GT`, 200, { headers }, server.output, 300_000)
    const samples: Sample[] = []
    const dir = mkdtempSync(join(os.tmpdir(), 'mirador-feed-'))
    try {
      for (let round = 0; round < rounds; round++) {
        const [zonesBefore, listingsBefore] = [await zoneCount(), await listingTotal()]
        const file = join(dir, `round-${round}.ndjson`)
        writeFileSync(file, `${feedLine(`fresh-${Date.now()}-${round}`)}\n`)
        cli(env, ['ingest', file])
        const returned = performance.now()
        let zoneMs = Number.NaN
        let listingsMs = Number.NaN
        while (Number.isNaN(zoneMs) || Number.isNaN(listingsMs)) {
          if (Number.isNaN(zoneMs) && (await zoneCount()) > zonesBefore) zoneMs = performance.now() - returned
          if (Number.isNaN(listingsMs) && (await listingTotal()) > listingsBefore) listingsMs = performance.now() - returned
          if (performance.now() - returned > 120_000) throw new Error('the new listing never showed')
          await sleep(2)
        }
        samples.push({ zoneMs, listingsMs })
        console.log(`  round ${round + 1}: /zone after ${zoneMs.toFixed(0)} ms, /listings after ${listingsMs.toFixed(0)} ms`)
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
    return samples
  } finally {
    await server.stop()
  }
}

const setups: Array<{ key: string; make: () => Setup }> = [
  { key: 'embedded', make: embedded },
  { key: 'postgres', make: () => postgres(`bench_fresh_${process.pid}`, 'PostgreSQL, demo market', false) },
  { key: '1m', make: () => postgres('bench_listings_1m', 'PostgreSQL, 1,000,000 listings', true) },
]

const load = loadAverage()
const rows: string[] = []
for (const { key, make } of setups) {
  if (flags.only && flags.only !== key) continue
  const setup = make()
  console.log(setup.name)
  try {
    const samples = await measure(setup)
    const stat = (pick: (s: Sample) => number) => {
      const sorted = samples.map(pick).sort((a, b) => a - b)
      return `${percentile(sorted, 50).toFixed(0)} ms (max ${sorted.at(-1)!.toFixed(0)} ms)`
    }
    rows.push(`| ${setup.name} | ${stat((s) => s.zoneMs)} | ${stat((s) => s.listingsMs)} |`)
  } finally {
    await setup.cleanup()
  }
}

const table = [
  '| store and market | new listing in /zone/{slug}: median | in /listings: median |',
  '|---|---:|---:|',
  ...rows,
].join('\n')
console.log(table)
if (!flags['no-write']) {
  writeResultsSection(
    'Freshness',
    `\`npx bun bench/freshness.ts\` (${rounds} rounds; ${machine()}; load average ${load} at the start). Time from ` +
      '`npm run cli -- ingest` returning (one new verified broker listing) until the running server answers with it, polled every 2 ms. ' +
      'The CLI appends the event; the server projects it, then prepares zone answers and updates its inventory.\n\n' +
      table,
  )
}
