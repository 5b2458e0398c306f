/**
 * Reads while the embedded store ingests (issue 34: "/zones stays answered from memory meanwhile"):
 * the real server on a new embedded store (the demo market), an owner and a pro key made with the CLI,
 * then `GET /api/v1/zones?country=GT` asked one at a time (5 ms apart) for 2 s idle, then while
 * `bun src/cli.ts ingest` records a generated feed of `--listings` listings through the server's
 * socket. Reported: the requests answered in each phase and their latency (p50, p99, worst), and how
 * many took over 100 ms. The code at --baseline (a checkout with its own node_modules, e.g. a
 * `git worktree` of an earlier commit) and this tree, alternately, `--rounds` times, in the same run.
 *
 *   npx bun bench/reads-during-ingest.ts [--baseline DIR] [--baseline-label TEXT] [--listings 10000] [--rounds 2] [--no-write]
 *
 * The server is pinned to one core; the CLI and this process share the other. Written to
 * bench/results.md, section "Reads while the embedded store ingests", unless --no-write.
 */
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { generateDemoFeed } from '../src/domain/demo/market.ts'
import { BUN, freePort, loadAverage, machine, percentile, ROOT, sleep, startProcess, waitFor, writeResultsSection } from './support.ts'

const { values: flags } = parseArgs({
  options: {
    baseline: { type: 'string' },
    'baseline-label': { type: 'string', default: 'before' },
    listings: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '2' },
    'no-write': { type: 'boolean', default: false },
  },
})

const SERVER_CPU = '1'
const PATH = '/api/v1/zones?country=GT'
const IDLE_MS = 2000
const work = mkdtempSync(join(os.tmpdir(), 'mirador-bench-reads-'))
const feed = join(work, 'feed.ndjson')
const records = generateDemoFeed({ seed: 'bench', listings: Number(flags.listings), anchor: new Date('2026-11-01T00:00:00.000Z') })
writeFileSync(feed, records.map((r) => `${JSON.stringify(r)}\n`).join(''))

type Latencies = number[]
type Run = { idle: Latencies; during: Latencies; ingestS: number }

/** Asks PATH one request at a time, 5 ms apart, until `done()`; the latencies in ms, sorted. */
async function readUntil(base: string, key: string, done: () => boolean): Promise<Latencies> {
  const ms: number[] = []
  while (!done()) {
    const started = performance.now()
    const response = await fetch(`${base}${PATH}`, { headers: { authorization: `Bearer ${key}` } })
    await response.arrayBuffer()
    if (response.status !== 200) throw new Error(`${PATH}: ${response.status}`)
    ms.push(performance.now() - started)
    await sleep(5)
  }
  return ms.sort((a, b) => a - b)
}

async function round(code: string): Promise<Run> {
  const dataDir = mkdtempSync(join(work, 'data-'))
  const port = await freePort()
  const env = { PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: '', ESDB_CONNECTION_STRING: '', OPENAI_API_KEY: '', ACCESS_LOG: 'off', RATE_LIMIT_PRO: '1000000000' }
  const server = startProcess(['src/main.ts'], env, { cwd: code, cpus: SERVER_CPU })
  try {
    const base = `http://127.0.0.1:${port}`
    await waitFor(`${base}/api/v1/health`, 401, {}, server.output, 300_000)
    const cli = (...args: string[]) => JSON.parse(execFileSync(BUN, ['src/cli.ts', ...args, '--json'], { cwd: code, env: { ...process.env, ...env }, encoding: 'utf8' }))
    cli('owner', 'create', '--id', 'bench-admin', '--tier', 'admin')
    cli('owner', 'create', '--id', 'bench-pro', '--tier', 'pro')
    const { key } = cli('key', 'issue', '--owner', 'bench-pro', '--scopes', 'read', '--actor', 'bench-admin') as { key: string }
    await waitFor(`${base}${PATH}`, 200, { headers: { authorization: `Bearer ${key}` } }, server.output)
    const idleUntil = performance.now() + IDLE_MS
    const idle = await readUntil(base, key, () => performance.now() > idleUntil)
    const started = performance.now()
    let ingested = false
    const ingest = spawn(BUN, ['src/cli.ts', 'ingest', feed], { cwd: code, env: { ...process.env, ...env }, stdio: 'ignore' })
    const exited = new Promise<number | null>((done) => ingest.once('exit', (status) => done(status)))
    void exited.then(() => (ingested = true))
    const during = await readUntil(base, key, () => ingested)
    if ((await exited) !== 0) throw new Error(`ingest in ${code} failed`)
    return { idle, during, ingestS: (performance.now() - started) / 1000 }
  } finally {
    await server.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

const codes = [...(flags.baseline ? [{ label: flags['baseline-label'], dir: flags.baseline }] : []), { label: 'this tree', dir: ROOT }]
const runs = new Map(codes.map((c) => [c.label, [] as Run[]]))
const loads = [loadAverage()]
for (let n = 1; n <= Number(flags.rounds); n++) {
  for (const code of codes) {
    const run = await round(code.dir)
    runs.get(code.label)!.push(run)
    console.log(`round ${n} ${code.label}: ingest ${run.ingestS.toFixed(1)} s, ${run.during.length} reads during it, worst ${run.during.at(-1)?.toFixed(0)} ms`)
  }
  loads.push(loadAverage())
}

const f = (ms: number) => ms.toFixed(1)
const row = (label: string, phase: string, ms: Latencies, ingestS?: number) =>
  `| ${label} | ${phase} | ${ms.length}${ingestS ? ` in ${ingestS.toFixed(1)} s` : ''} | ${f(percentile(ms, 50))} | ${f(percentile(ms, 99))} | ${f(ms.at(-1)!)} | ${ms.filter((x) => x > 100).length} |`
const rows = codes.flatMap(({ label }) =>
  runs.get(label)!.flatMap((run, i) => [row(`${label}, round ${i + 1}`, 'idle', run.idle), row(`${label}, round ${i + 1}`, 'during the ingest', run.during, run.ingestS)]),
)
const body = `Measured ${new Date().toISOString().slice(0, 16)} UTC on ${machine()}; load average (1 min) before the first round and after each: ${loads.join(', ')}.
The server (embedded store, demo market) pinned to cpu ${SERVER_CPU}; \`GET ${PATH}\` with a pro key, one request at a time, 5 ms apart, ${IDLE_MS / 1000} s idle, then while \`bun src/cli.ts ingest\` records ${records.length.toLocaleString('en')} lines (${Number(flags.listings).toLocaleString('en')} listings); ${flags.rounds} rounds, the codes alternating.
\`npx bun bench/reads-during-ingest.ts ${process.argv.slice(2).map((a) => (a.startsWith('/') ? 'DIR' : a)).join(' ')}\`

| code | phase | reads answered | p50 (ms) | p99 (ms) | worst (ms) | over 100 ms |
|---|---|---:|---:|---:|---:|---:|
${rows.join('\n')}
`
console.log(body)
if (!flags['no-write']) writeResultsSection('Reads while the embedded store ingests', body)
rmSync(work, { recursive: true, force: true })
