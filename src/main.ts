/**
 * Server entry (Bun): configuration → storage → projections → key index → rate limiter → HTTP.
 * Also serves operator commands on DATA_DIR/mirador.sock so the CLI works while the server owns the data.
 */
import { chmodSync, mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig } from './config.ts'
import { buildApp } from './http/app.ts'
import { jsonLogger } from './http/errors.ts'
import { operatorHandler } from './operator/socket-handler.ts'
import { memoryRateLimiter } from './ratelimit/memory.ts'
import { openRedisRateLimiter } from './ratelimit/redis.ts'
import { DEMO_DEFAULTS, demoAnchor } from './demo/market.ts'
import { seedDemo } from './demo/seed.ts'
import { lockDataDir } from './runtime/data-dir-lock.ts'
import { terminalProgress } from './runtime/progress.ts'
import { cryptoRandom, systemClock } from './shared/random.ts'
import { briefingServiceOn, openKeyIndex, openStorage, projectionLagOf } from './system.ts'
import { liveTables } from '../projections/live.ts'

const config = loadConfig(process.env)
const log = jsonLogger
const reportError = (error: unknown) =>
  log.error('background_error', { error: error instanceof Error ? error.message : String(error) })

const started = Date.now()
mkdirSync(config.dataDir, { recursive: true })
// PGlite files belong to one process; with PostgreSQL any number of servers share the database.
const unlock = config.databaseUrl ? () => {} : lockDataDir(config.dataDir)
const storage = await openStorage(config, reportError)
liveTables(storage.db).onChange((projection, generation) => log.info('generation_live', { projection, generation: generation.id }))
if (config.demoOnEmpty && (await storage.store.headPosition()) === 0) {
  // A fresh install serves a plausible market at once: the deterministic demo, ingested like any feed.
  const seeding = Date.now()
  const bar = terminalProgress()
  const summary = await seedDemo(
    storage.store,
    { seed: DEMO_DEFAULTS.seed, listings: config.demoListings ?? DEMO_DEFAULTS.listings, anchor: demoAnchor(systemClock()) },
    (done, total) => bar.progress({ label: 'demo seed', done, total }),
  )
  bar.done()
  log.info('demo_seeded', { ...summary, seconds: (Date.now() - seeding) / 1000 })
}
const catchingUp = Date.now()
await storage.runner.start(reportError)
log.info('projections_ready', { seconds: (Date.now() - catchingUp) / 1000 })
const keys = await openKeyIndex(storage, reportError)
const limiter = config.redisUrl
  ? await openRedisRateLimiter({ url: config.redisUrl, log: (message) => log.info('redis', { message }) })
  : memoryRateLimiter()

const app = buildApp({
  keys,
  limiter,
  limits: config.rateLimits,
  clock: systemClock,
  log,
  accessLog: config.accessLog,
  db: storage.db,
  briefings: briefingServiceOn(storage, config, systemClock, cryptoRandom),
  projectionLag: projectionLagOf(storage),
})

const http = Bun.serve({
  port: config.port,
  hostname: config.host,
  // A backstop only: the API answers 413 payload_too_large itself above 16 KiB.
  maxRequestBodySize: 1024 * 1024,
  fetch: (request) => app.handle(request),
})

const socketPath = join(config.dataDir, 'mirador.sock')
rmSync(socketPath, { force: true })
const operator = Bun.serve({
  unix: socketPath,
  fetch: operatorHandler((progress) => ({ ...storage, clock: systemClock, random: cryptoRandom, progress })),
})
chmodSync(socketPath, 0o600)

log.info('listening', {
  url: `http://${config.host}:${http.port}`,
  store: config.databaseUrl ? 'postgres' : `pglite:${config.dataDir}`,
  rate_limiter: config.redisUrl ? 'redis' : 'memory',
  operator_socket: socketPath,
  startup_ms: Date.now() - started,
})

let stopping = false
async function shutdown(signal: string) {
  if (stopping) return
  stopping = true
  log.info('stopping', { signal })
  await http.stop()
  await operator.stop(true)
  rmSync(socketPath, { force: true })
  keys.stop()
  await limiter.close()
  await storage.close()
  unlock()
  process.exit(0)
}
process.on('SIGINT', () => void shutdown('SIGINT'))
process.on('SIGTERM', () => void shutdown('SIGTERM'))
