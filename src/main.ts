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
import { lockDataDir } from './runtime/data-dir-lock.ts'
import { cryptoRandom, systemClock } from './shared/random.ts'
import { openKeyIndex, openStorage } from './system.ts'

const config = loadConfig(process.env)
const log = jsonLogger(config.accessLog)
const reportError = (error: unknown) =>
  log.error('background_error', { error: error instanceof Error ? error.message : String(error) })

const started = Date.now()
mkdirSync(config.dataDir, { recursive: true })
// PGlite files belong to one process; with PostgreSQL any number of servers share the database.
const unlock = config.databaseUrl ? () => {} : lockDataDir(config.dataDir)
const storage = await openStorage(config)
await storage.runner.start(reportError)
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
  quota: async (_owner, tier) => ({
    used: 0,
    quota: tier === 'admin' ? 0 : config.quotas[tier],
    unlimited: tier === 'admin',
  }),
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
