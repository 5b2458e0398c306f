/**
 * The embedded store (PGlite) as a newcomer meets it: `npm start` on an empty data directory (the
 * first start: a cluster, the demo market, the projections), its memory after the read load of
 * `bench:http` (GET /zones, /zone and a /listings page, wrk, 64 connections), then a restart on the
 * same directory. The code at --baseline (a checkout with its own node_modules, e.g. a `git worktree`
 * of an earlier commit) and this tree, alternately, `--rounds` times, in the same run.
 *
 *   npx bun bench/embedded.ts [--baseline DIR] [--baseline-label TEXT] [--rounds 3] [--seconds 5] [--no-write]
 *
 * The server starts and restarts on every core, as `npm start` does on a user's machine; for the read
 * load it is pinned to one core and wrk to the other.
 * "First answer": spawn to the first answer of GET /api/v1/health (a 401 without a key: the server
 * answers requests); "ready": spawn to the first 200 of GET /readyz (the zone statistics and the
 * listings are in memory, decision 0125: a /zones or /listings request is answered at once); `startup_ms` is the server's own log (from its first line to listening). RSS is
 * the server process's (/proc VmRSS), peak its VmHWM. Written to bench/results.md, section
 * "Embedded store: memory and first start", unless --no-write.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { BUN, canPin, freePort, pinRunning, loadAverage, machine, memoryOf, quiesce, ROOT, requireWrk, startProcess, waitFor, wrk, writeResultsSection } from './support.ts'

const { values: flags } = parseArgs({
  options: {
    baseline: { type: 'string' },
    'baseline-label': { type: 'string', default: 'before' },
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '5' },
    'no-write': { type: 'boolean', default: false },
  },
})
requireWrk()

const SERVER_CPU = '1'
const WRK_CPU = '0'
const PATHS = ['/api/v1/zones?country=GT', '/api/v1/zone/zona-3?country=GT', '/api/v1/listings?country=GT&operation=Venta&limit=20']

type Run = { firstAnswerS: number; firstReadyS: number; startupMs: number; rssStart: number; rssLoaded: number; peak: number; restartS: number; restartReadyS: number; rssRestart: number }

const work = mkdtempSync(join(os.tmpdir(), 'bench-embedded-'))

/** Starts the server of `code` on `dataDir`; resolves once it answers, with the seconds from spawn. */
async function start(code: string, dataDir: string, port: number, log: string) {
  const env = { PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: '', ESDB_CONNECTION_STRING: '', OPENAI_API_KEY: '', ACCESS_LOG: 'off', RATE_LIMIT_PRO: '1000000000' }
  const started = performance.now()
  // Started on every core, as `npm start` runs on a user's machine; pinned only for the read load.
  const server = startProcess(['src/main.ts'], env, { cwd: code, logFile: log })
  await waitFor(`http://127.0.0.1:${port}/api/v1/health`, 401, {}, server.output, 300_000)
  const seconds = (performance.now() - started) / 1000
  await waitFor(`http://127.0.0.1:${port}/readyz`, 200, {}, server.output, 300_000)
  const readySeconds = (performance.now() - started) / 1000
  // Read once the server has stopped: its log is written in the background.
  const startupMs = () => Number(/"startup_ms":(\d+)/.exec(readFileSync(log, 'utf8'))?.[1] ?? Number.NaN)
  const cli = (...args: string[]) => JSON.parse(execFileSync(BUN, ['src/cli.ts', ...args, '--json'], { cwd: code, env: { ...process.env, ...env }, encoding: 'utf8' }))
  return { server, seconds, readySeconds, startupMs, cli }
}

async function round(code: string, label: string, n: number): Promise<Run> {
  const dataDir = mkdtempSync(join(work, 'data-'))
  const port = await freePort()
  const first = await start(code, dataDir, port, join(work, `${label}-${n}-first.log`))
  const rssStart = memoryOf(first.server.pid).rssMiB
  try {
    // A pro key, issued by an admin (a pro owner cannot issue its own).
    const [admin, owner] = [`bench-admin-${n}`, `bench-pro-${n}`]
    first.cli('owner', 'create', '--id', admin, '--tier', 'admin')
    first.cli('owner', 'create', '--id', owner, '--tier', 'pro')
    const { key } = first.cli('key', 'issue', '--owner', owner, '--scopes', 'read', '--actor', admin) as { key: string }
    await waitFor(`http://127.0.0.1:${port}/api/v1/health`, 200, { headers: { authorization: `Bearer ${key}` } }, first.server.output)
    pinRunning(first.server.pid, SERVER_CPU)
    for (const path of PATHS) {
      const result = wrk(`http://127.0.0.1:${port}${path}`, { threads: 2, connections: 64, seconds: Number(flags.seconds), authorization: `Bearer ${key}`, cpus: WRK_CPU })
      if (result.errors) throw new Error(`${label} ${path}: ${result.errors}`)
      await quiesce(first.server.pid)
    }
  } catch (error) {
    await first.server.stop()
    throw error
  }
  const loaded = memoryOf(first.server.pid)
  await first.server.stop()
  const again = await start(code, dataDir, port, join(work, `${label}-${n}-restart.log`))
  const rssRestart = memoryOf(again.server.pid).rssMiB
  await again.server.stop()
  rmSync(dataDir, { recursive: true, force: true })
  return { firstAnswerS: first.seconds, firstReadyS: first.readySeconds, startupMs: first.startupMs(), rssStart, rssLoaded: loaded.rssMiB, peak: loaded.peakMiB, restartS: again.seconds, restartReadyS: again.readySeconds, rssRestart }
}

const codes = [...(flags.baseline ? [{ label: flags['baseline-label'], dir: flags.baseline }] : []), { label: 'this tree', dir: ROOT }]
const runs = new Map(codes.map((c) => [c.label, [] as Run[]]))
const loads = [loadAverage()]
for (let n = 1; n <= Number(flags.rounds); n++) {
  for (const code of codes) {
    const run = await round(code.dir, code.label.replace(/\W+/g, '-'), n)
    runs.get(code.label)!.push(run)
    console.log(`round ${n} ${code.label}: ${JSON.stringify(run)}`)
  }
  loads.push(loadAverage())
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const cell = (values: number[], digits: number) =>
  `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`
const rows = codes.map(({ label }) => {
  const r = runs.get(label)!
  const col = (f: (run: Run) => number, digits: number) => cell(r.map(f), digits)
  return `| ${label} | ${col((x) => x.firstAnswerS, 2)} | ${col((x) => x.firstReadyS, 2)} | ${col((x) => x.startupMs, 0)} | ${col((x) => x.rssStart, 0)} | ${col((x) => x.rssLoaded, 0)} | ${col((x) => x.peak, 0)} | ${col((x) => x.restartS, 2)} | ${col((x) => x.restartReadyS, 2)} | ${col((x) => x.rssRestart, 0)} |`
})
const MB = 1_000_000 / 2 ** 20
/** Each goal of issue 34 for the embedded store, judged on the medians of `r`. */
function goals(r: Run[]): string[] {
  const judged = (what: string, value: number, goal: number, unit: string, digits: number) =>
    `${what} ${value.toFixed(digits)} ${unit} (goal ≤ ${goal} ${unit}: ${value <= goal ? 'met' : 'missed'})`
  const loadedMb = median(r.map((x) => x.rssLoaded)) / MB
  return [
    judged('first start', median(r.map((x) => x.firstAnswerS)), 3, 's', 2),
    judged('restart', median(r.map((x) => x.restartS)), 1, 's', 2),
    judged('restart to ready', median(r.map((x) => x.restartReadyS)), 1, 's', 2),
    judged('RSS after the read load', loadedMb, 250, 'MB', 0),
  ]
}
const body = `Measured ${new Date().toISOString().slice(0, 16)} UTC on ${machine()}; load average (1 min) before the first round and after each: ${loads.join(', ')}.
Starts and restarts on every core (as \`npm start\` on a user's machine); for the read load the server pinned to cpu ${SERVER_CPU}, wrk to cpu ${WRK_CPU}${canPin ? '' : ' (not pinned: taskset unavailable)'}; ${flags.rounds} rounds, the codes alternating; median (range).
\`npx bun bench/embedded.ts ${process.argv.slice(2).map((a) => (a.startsWith('/') ? 'DIR' : a)).join(' ')}\`

| code | first start → first answer (s) | first start → ready (s) | startup_ms | RSS after first start (MiB) | RSS after the read load (MiB) | peak RSS (MiB) | restart → first answer (s) | restart → ready (s) | RSS after restart (MiB) |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}

The read load: ${PATHS.map((p) => `\`${p}\``).join(', ')}, each ${flags.seconds} s with wrk (2 threads, 64 connections), a pro key.

Issue 34's goals, this tree's medians: ${goals(runs.get('this tree')!).join('; ')}.
`
console.log(body)
if (!flags['no-write']) writeResultsSection('Embedded store: memory and first start', body)
rmSync(work, { recursive: true, force: true })
