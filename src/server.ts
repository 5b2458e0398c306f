/**
 * The server's start-up, the same on every runtime: configuration → data directory → lock → port →
 * storage → projections → key index → rate limiter → HTTP. Also serves operator commands on
 * DATA_DIR/mirador.sock (embedded store) so the CLI works while the server owns the data. Anything
 * that stops the start ends with one line on stderr and exit code 1, before the store is touched
 * where it can be. What a runtime adds is only how it listens (`RuntimeEdge`), one small entry per
 * runtime: src/main.ts (Bun), src/main-node.ts (Node), src/main-deno.ts (Deno).
 */
import { chmodSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, loadConfig } from './config.ts'
import { buildApp } from './app.ts'
import { operatorHandler } from './operator/socket-handler.ts'
import { memoryRateLimiter } from './ratelimit/memory.ts'
import { openRedisRateLimiter } from './ratelimit/redis.ts'
import { DEMO_DEFAULTS, demoAnchor } from './domain/demo/market.ts'
import { lacksMarketData, seedDemo } from './demo/seed.ts'
import { preparePrivateDataDir } from './runtime/data-dir.ts'
import { bufferedJsonLogger, processOutput } from './runtime/log.ts'
import { DataDirBusy, lockDataDir } from './runtime/data-dir-lock.ts'
import { terminalProgress } from './runtime/progress.ts'
import { AppError, fail } from './shared/errors.ts'
import { discardUnreadBody } from './http/body.ts'
import { cryptoRandom, systemClock } from './shared/random.ts'
import { briefingServiceOn, memoryQuota, monitorServer, openKeyIndex, openListingInventory, openReadyZones, openStorage, openUsageIndex } from './system.ts'
import { isWriteToClosedConnection } from './db/postgres.ts'
import { asRequest, Dependency, type DependencyLog, isUnavailable } from './runtime/dependency.ts'
import { liveTables } from '../projections/engine/live-tables.ts'
import { metricsHandler, prometheusMetrics } from './metrics/prometheus.ts'

/** How long a log line may wait in memory before it is written (lines are written in batches). */
const LOG_FLUSH_MS = 100
const log = bufferedJsonLogger(processOutput, Date.now)
/** How long a crashing process waits for its log to be written before it exits (then writes the rest at once). */
const CRASH_DRAIN_MS = 1000
// An outage is logged by its dependency, once when it starts and once when it ends, not per retry.
const reportError = (error: unknown) => {
  if (!isUnavailable(error)) log.error('background_error', { error: error instanceof Error ? error.message : String(error) })
}
const dependencyLog: DependencyLog = (event, fields) => log.info(event, fields)
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

function refuseToStart(message: string, code = 1): never {
  log.flushNow()
  console.error(`mirador: ${message}`)
  process.exit(code)
}

/** A JSON error answer built outside Elysia (while starting, or if the runtime's server catches a failure). */
function errorResponse(error: AppError, status: number): Response {
  return Response.json(error.body(), { status, headers: { 'x-request-id': crypto.randomUUID(), ...error.headers } })
}

/** How every runtime's server calls the API: a request in, a response out. */
export type Handler = (request: Request) => Response | Promise<Response>

/** A listening server; `stop` stops accepting, lets requests in progress finish, then closes. */
export type Listening = { stop(): Promise<void> }

/**
 * The little that differs between runtimes, one implementation per runtime (src/main.ts,
 * src/main-node.ts, src/main-deno.ts); everything else about serving is here, the same on each.
 */
export type RuntimeEdge = {
  /** `bun`, `node` or `deno`, as the start-up log says. */
  runtime: string
  /**
   * Listens on TCP (request bodies of any size reach `handler`; the API refuses large ones itself).
   * `failed` answers a request whose handler threw. Throws an error with `code: 'EADDRINUSE'` when
   * the port is taken. `idleSeconds`: how long a silent connection stays open, where the runtime
   * closes them by itself (Bun); Node and Deno keep them open until the answer.
   */
  listen(options: { port: number; hostname: string; handler: Handler; failed(error: Error): Response; idleSeconds?: number }): Promise<Listening & { port: number }>
  /** Serves `handler` on a Unix socket created at `path`; its `stop` also closes connections in progress. */
  listenUnix(path: string, handler: Handler): Promise<Listening>
}

/** Starts the server on `edge`'s runtime; returns once it listens (SIGTERM or SIGINT stop it). */
export async function runServer(edge: RuntimeEdge): Promise<void> {
  setInterval(log.flush, LOG_FLUSH_MS).unref()
  // Every way out (shutdown, refusal to start, a crash) writes what is still buffered; a shutdown
  // first waits for the batch being written in the background (SIGKILL: docs/decisions.md).
  process.on('exit', log.flushNow)
  // Any other uncaught error ends the process as it would without this handler.
  process.on('uncaughtException', (error) => {
    if (isWriteToClosedConnection(error)) return
    log.error('uncaught_error', { error: messageOf(error), stack: error.stack })
    // The batch being written in the background finishes first, so that batches stay whole and in order.
    void Promise.race([log.drain(), new Promise((resolve) => setTimeout(resolve, CRASH_DRAIN_MS))]).finally(() => process.exit(1))
  })

  const started = Date.now()
  let config: ReturnType<typeof loadConfig>
  try {
    config = loadConfig(process.env)
  } catch (error) {
    if (error instanceof ConfigError) refuseToStart(error.message, 2)
    throw error
  }

  const { looseMode } = preparePrivateDataDir(config.dataDir)
  if (looseMode) {
    log.info('data_dir_permissions', {
      level: 'warn',
      data_dir: config.dataDir,
      mode: looseMode,
      message: `other users can open ${config.dataDir}; run: chmod 700 ${config.dataDir}`,
    })
  }

  // PGlite files belong to one process; with PostgreSQL any number of servers share the database.
  let unlock = () => {}
  if (!config.databaseUrl) {
    try {
      unlock = lockDataDir(config.dataDir)
    } catch (error) {
      if (error instanceof DataDirBusy) refuseToStart(`${config.dataDir} is in use by another server (process ${error.pid}); stop it or set DATA_DIR`)
      throw error
    }
  }

  // The port is taken before the store is opened, so a port in use changes nothing on disk.
  let http: Listening & { port: number }
  // Until the API is ready every request is answered 503 (below: `answer` becomes the app).
  let answer: Handler = () => errorResponse(fail.serviceUnavailable('the server is starting; retry in a moment', 1), 503)
  try {
    http = await edge.listen({
      port: config.port,
      hostname: config.host,
      handler: (request) => answer(request),
      // Longer than a briefing may take (two writer timeouts), since a request waits at most
      // CALL_DEADLINE_MS per dependency (src/runtime/dependency.ts): a slow answer is never cut off.
      idleSeconds: Math.min(255, Math.ceil((2 * config.openai.timeoutMs) / 1000) + 10),
      failed(error) {
        log.error('unhandled_error', { error: messageOf(error), stack: error.stack })
        return errorResponse(fail.internal('internal error'), 500)
      },
    })
  } catch (error) {
    unlock()
    const inUse = (error as { code?: string }).code === 'EADDRINUSE'
    refuseToStart(inUse ? `port ${config.port} on ${config.host} is in use; stop what listens there or set PORT` : `cannot listen on ${config.host}:${config.port}: ${messageOf(error)}`)
  }

  // Metrics on a port of their own (METRICS_PORT), taken before the store is opened too: no key, no limit.
  const metrics = config.metricsPort === undefined ? undefined : prometheusMetrics()
  let metricsServer: (Listening & { port: number }) | undefined
  if (metrics) {
    try {
      metricsServer = await edge.listen({
        port: config.metricsPort!,
        hostname: config.host,
        handler: metricsHandler(metrics),
        failed: () => errorResponse(fail.internal('internal error'), 500),
      })
    } catch (error) {
      await http.stop()
      unlock()
      refuseToStart(`cannot serve metrics on ${config.host}:${config.metricsPort}: ${messageOf(error)}; stop what listens there or set METRICS_PORT`)
    }
  }

  async function start() {
    const storage = await openStorage(config, reportError, dependencyLog, metrics)
    log.info('event_store', {
      events: config.esdbConnectionString ? 'kurrentdb' : config.databaseUrl ? 'postgres' : 'pglite',
      server_version: storage.eventServer?.version ?? null,
      batches: storage.store.batches,
      reason: storage.eventServer?.reason ?? (config.singleStreamAppends ? 'SINGLE_STREAM_APPENDS is on' : 'one transaction per batch'),
    })
    liveTables(storage.db).onChange((projection, generation) => log.info('generation_live', { projection, generation: generation.id }))
    if (config.demoOnEmpty && (await lacksMarketData(storage.store))) {
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
    const usage = await openUsageIndex(storage, reportError)
    const preparing = Date.now()
    const zones = openReadyZones(storage, reportError)
    void zones.settled().then(() => log.info('zones_ready', { seconds: (Date.now() - preparing) / 1000 }))
    const loadingInventory = Date.now()
    const inventory = await openListingInventory(storage, reportError)
    log.info('inventory_ready', { listings: inventory.size.listings, seconds: (Date.now() - loadingInventory) / 1000 })
    const redis = config.redisUrl ? new Dependency('rate limiter', dependencyLog) : undefined
    const redisLimiter = config.redisUrl
      ? await openRedisRateLimiter({ url: config.redisUrl, dependency: redis, log: (message) => log.info('redis', { message }) })
      : undefined
    const limiter = redisLimiter ?? memoryRateLimiter()
    const health = monitorServer(storage, redis && redisLimiter ? [{ dependency: redis, probe: () => redisLimiter.ping() }] : [])
    const app = buildApp({
      keys,
      limiter,
      limits: config.rateLimits,
      clock: systemClock,
      log,
      accessLog: config.accessLog,
      zones,
      inventory,
      briefings: briefingServiceOn(storage, zones, config, systemClock, cryptoRandom, undefined, metrics),
      quota: memoryQuota(usage, config.quotas),
      health,
      metrics,
    })
    answer = (request) => {
      const answered = asRequest(() => app.handle(request))
      if (request.method === 'GET' || request.method === 'HEAD') return answered
      return answered.then((response) => discardUnreadBody(request).then(() => response))
    }

    // With PostgreSQL the CLI works on the database directly; the socket serves the embedded store only.
    const socketPath = join(config.dataDir, 'mirador.sock')
    const operator = config.databaseUrl
      ? undefined
      : (rmSync(socketPath, { force: true }),
        await edge.listenUnix(socketPath, operatorHandler((progress) => ({ ...storage, clock: systemClock, random: cryptoRandom, progress }))))
    if (operator) chmodSync(socketPath, 0o600)
    return { storage, keys, usage, inventory, limiter, health, operator, socketPath }
  }

  let running: Awaited<ReturnType<typeof start>>
  try {
    running = await start()
  } catch (error) {
    unlock()
    refuseToStart(`cannot start: ${messageOf(error)}`)
  }

  log.info('listening', {
    url: `http://${config.host}:${http.port}`,
    runtime: edge.runtime,
    store: config.databaseUrl ? 'postgres' : `pglite:${config.dataDir}`,
    events: config.esdbConnectionString ? 'kurrentdb' : config.databaseUrl ? 'postgres' : 'pglite',
    rate_limiter: config.redisUrl ? 'redis' : 'memory',
    operator_socket: running.operator ? running.socketPath : null,
    metrics: metricsServer ? `http://${config.host}:${metricsServer.port}/metrics` : null,
    startup_ms: Date.now() - started,
  })

  let stopping = false
  async function shutdown(signal: string) {
    if (stopping) return
    stopping = true
    log.info('stopping', { signal })
    await http.stop()
    await metricsServer?.stop()
    if (running.operator) {
      await running.operator.stop()
      rmSync(running.socketPath, { force: true })
    }
    running.health.stop()
    running.keys.stop()
    running.usage.stop()
    running.inventory.stop()
    await running.limiter.close()
    await running.storage.close()
    unlock()
    // The last line: a request answered before the signal may be logged after "stopping" (its line is
    // written after its answer is sent), never after this.
    log.info('stopped', { signal })
    await log.drain()
    process.exit(0)
  }
  process.on('SIGINT', () => void shutdown('SIGINT'))
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
}
