/**
 * Throughput of an authenticated GET /api/v1/health with each rate-limiter adapter, against a raw
 * `Bun.serve` answering a small JSON, in the same run. Each server is its own process and `wrk`
 * (a separate process) loads one server at a time over loopback, in interleaved rounds.
 *
 *   npx bun bench/ratelimit.ts [--duration 10] [--threads 2] [--connections 50] [--rounds 2] [--no-write]
 *
 * Needs `wrk` on PATH. The Redis run uses REDIS_URL (default redis://127.0.0.1:6379) and is left out,
 * saying so, when Redis does not answer. Results are printed and written to bench/results.md
 * (section "Rate limiting") unless --no-write.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { createClient } from 'redis'
import { BUN, RESULTS, ROOT, freePort, loadAverage, machine, requireWrk, startProcess, waitFor, wrk, type WrkResult, wrkVersion, writeResultsSection } from './support.ts'

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    threads: { type: 'string', default: '2' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '2' },
    'no-write': { type: 'boolean', default: false },
  },
})
requireWrk()
const duration = Number(flags.duration)
const threads = Number(flags.threads)
const connections = Number(flags.connections)
const roundCount = Number(flags.rounds)
const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379'

type Target = { name: string; url: string; authorization?: string; stop(): Promise<void> }
type Result = WrkResult & { name: string }

async function startRaw(): Promise<Target> {
  const port = await freePort()
  const proc = startProcess(['bench/raw-server.ts'], { PORT: String(port) })
  const url = `http://127.0.0.1:${port}/api/v1/health`
  await waitFor(url, 200, {}, proc.output)
  return { name: 'raw Bun.serve', url, stop: proc.stop }
}

/**
 * The real server (`bun src/main.ts`) on an empty embedded store, with an enterprise key whose limit is
 * never reached, and an admin key (never counted) to show what the rest of the request costs.
 */
async function startMirador(name: string, extraEnv: Record<string, string>): Promise<Target & { keyId: string; admin: Target }> {
  const port = await freePort()
  const dataDir = mkdtempSync(join(os.tmpdir(), 'mirador-bench-'))
  const env = {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    DEMO_SEED: 'off',
    ACCESS_LOG: 'off',
    RATE_LIMIT_ENTERPRISE: '100000000',
    DATABASE_URL: '',
    REDIS_URL: '',
    ...extraEnv,
  }
  const proc = startProcess(['src/main.ts'], env)
  const url = `http://127.0.0.1:${port}/api/v1/health`
  await waitFor(url, 401, {}, proc.output)

  const cli = (...args: string[]) =>
    JSON.parse(execFileSync(BUN, ['src/cli.ts', ...args, '--json'], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8' }))
  cli('owner', 'create', '--id', 'bench', '--tier', 'enterprise')
  const issued = cli('key', 'issue', '--owner', 'bench', '--scopes', 'read', '--actor', 'bench') as { key: string; key_id: string }
  const authorization = `Bearer ${issued.key}`
  await waitFor(url, 200, { headers: { authorization } }, proc.output)
  cli('owner', 'create', '--id', 'root', '--tier', 'admin')
  const admin = cli('key', 'issue', '--owner', 'root', '--scopes', 'read', '--actor', 'root') as { key: string }
  await waitFor(url, 200, { headers: { authorization: `Bearer ${admin.key}` } }, proc.output)

  return {
    name,
    url,
    authorization,
    keyId: issued.key_id,
    admin: { name: 'mirador, admin key (no limiter)', url, authorization: `Bearer ${admin.key}`, stop: async () => {} },
    async stop() {
      await proc.stop()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

async function measure(target: Target): Promise<Result> {
  const options = { threads, connections, authorization: target.authorization }
  wrk(target.url, { ...options, seconds: 2 }) // warm-up: JIT, connection pools, Redis script cache
  const result: Result = { name: target.name, ...wrk(target.url, { ...options, seconds: duration }) }
  console.log(
    `${result.name.padEnd(32)} ${result.requestsPerSecond.toFixed(0).padStart(8)} req/s   p50 ${result.p50Ms.toFixed(2)} ms   p99 ${result.p99Ms.toFixed(2)} ms${result.errors ? `   !! ${result.errors}` : ''}`,
  )
  return result
}

async function redisAvailable(): Promise<string | null> {
  const client = createClient({ url: redisUrl, socket: { connectTimeout: 1_000, reconnectStrategy: false } })
  client.on('error', () => {})
  try {
    await client.connect()
    const info = await client.info('server')
    return /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown'
  } catch {
    return null
  } finally {
    client.destroy()
  }
}

async function dropCounters(keyId: string) {
  const client = createClient({ url: redisUrl })
  client.on('error', () => {})
  await client.connect()
  const keys = await client.keys(`mirador:rl:${keyId}:*`)
  if (keys.length) await client.del(keys)
  client.destroy()
}

const redisVersion = await redisAvailable()
const loadBefore = loadAverage()
console.log(`machine: ${machine()}; load average ${loadBefore}`)
console.log(`wrk -t${threads} -c${connections} -d${duration}s --latency (after a 2 s warm-up), one server at a time, ${roundCount} round(s)\n`)

// All servers start first and wait idle; wrk loads one at a time, round after round, so a burst of
// load from elsewhere on the machine hits one round of one target, not a whole target.
const servers: Target[] = []
const targets: Target[] = []
const rounds: Result[][] = []
let results: Result[]
try {
  const rawServer = await startRaw()
  servers.push(rawServer)
  const memoryServer = await startMirador('mirador, memory', {})
  servers.push(memoryServer)
  targets.push(rawServer, memoryServer, memoryServer.admin)
  if (redisVersion) {
    const redisServer = await startMirador('mirador, Redis', { REDIS_URL: redisUrl })
    servers.push({ ...redisServer, stop: async () => (await redisServer.stop(), await dropCounters(redisServer.keyId)) })
    targets.push(redisServer)
  } else {
    console.log(`[skipped] Redis adapter: no Redis answers at ${redisUrl}`)
  }
  for (let round = 1; round <= roundCount; round++) {
    console.log(`round ${round}/${roundCount}`)
    const measured: Result[] = []
    for (const target of targets) measured.push(await measure(target))
    rounds.push(measured)
  }
  // Interference only ever slows a run down, so each target's best round is the least disturbed one.
  results = targets.map((_, t) => rounds.map((r) => r[t]!).reduce((best, r) => (r.requestsPerSecond > best.requestsPerSecond ? r : best)))
} finally {
  for (const server of servers) await server.stop()
}
console.log(`\nbest of ${roundCount} round(s):`)
for (const r of results) console.log(`${r.name.padEnd(32)} ${r.requestsPerSecond.toFixed(0).padStart(8)} req/s   p50 ${r.p50Ms.toFixed(2)} ms   p99 ${r.p99Ms.toFixed(2)} ms`)

const [raw, memory, admin, redis] = results as [Result, Result, Result, Result | undefined]
const ratios: Array<[string, number]> = [
  ['memory / raw', memory.requestsPerSecond / raw.requestsPerSecond],
  ['memory / admin (no limiter)', memory.requestsPerSecond / admin.requestsPerSecond],
  ...(redis
    ? ([
        ['Redis / raw', redis.requestsPerSecond / raw.requestsPerSecond],
        ['Redis / memory', redis.requestsPerSecond / memory.requestsPerSecond],
        ['Redis / admin (no limiter)', redis.requestsPerSecond / admin.requestsPerSecond],
      ] as Array<[string, number]>)
    : []),
]
console.log(`\nratios (req/s): ${ratios.map(([name, value]) => `${name} ${value.toFixed(3)}`).join(', ')}`)

if (rounds.flat().some((r) => r.errors)) {
  console.error('some runs had errors: the numbers are not valid; results.md left unchanged')
  process.exit(1)
}

if (!flags['no-write']) {
  const date = new Date().toISOString().slice(0, 16).replace('T', ' ')
  const section = [
    `Authenticated \`GET /api/v1/health\` (enterprise key, \`RATE_LIMIT_ENTERPRISE=100000000\` so every request is counted and allowed,`,
    '`ACCESS_LOG=off`, embedded store, `DEMO_SEED=off`) on the real server with each rate-limiter adapter, against a raw `Bun.serve`',
    'returning a small JSON, in the same run. Each server is its own process; `wrk` loads one at a time from another process over loopback.',
    'The admin-key row is the same memory server with a key that is never counted: the gap between it and the memory row is what',
    'counting costs (limiter, X-RateLimit headers, rate_limit in the body); the gap between it and raw is Elysia, auth and the handler.',
    'The machine is shared with other jobs: compare ratios from one run, not absolute numbers across runs.',
    '',
    `- Date: ${date} UTC`,
    `- Machine: ${machine()}; load average ${loadBefore} at start (other jobs may share the machine)`,
    `- Software: Bun ${Bun.version}, ${wrkVersion()}, Redis ${redisVersion ?? 'not available'} on the same host`,
    `- Command: \`npx bun bench/ratelimit.ts --duration ${duration} --threads ${threads} --connections ${connections} --rounds ${roundCount}\``,
    `  (per target and round: 2 s warm-up, then \`wrk -t${threads} -c${connections} -d${duration}s --latency -H 'Authorization: Bearer …' http://127.0.0.1:PORT/api/v1/health\`;`,
    `  targets interleaved, ${roundCount} round(s), the best round of each target reported)`,
    '',
    '| server | req/s | p50 latency | p99 latency | requests |',
    '|---|---:|---:|---:|---:|',
    ...results.map(
      (r) => `| ${r.name} | ${r.requestsPerSecond.toFixed(0)} | ${r.p50Ms.toFixed(2)} ms | ${r.p99Ms.toFixed(2)} ms | ${r.requests} |`,
    ),
    '',
    `Ratios (req/s): ${ratios.map(([name, value]) => `${name} **${value.toFixed(3)}**`).join(', ')}.`,
    '',
  ].join('\n')

  writeResultsSection('Rate limiting', section)
  console.log(`written to ${RESULTS}`)
}
