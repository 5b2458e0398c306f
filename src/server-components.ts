/**
 * The server's components, in start order: data directory → lock → port → metrics port → prepared
 * demo → storage → demo → projections → key index → usage → zone answers → listing inventory → rate limiter →
 * health monitor → operator socket → webhooks → API. src/runtime/components.ts starts them in this order and
 * stops them in reverse; a component that fails to start stops those before it again.
 *
 * The ports are taken before the store is opened, so that a port in use changes nothing on disk,
 * and until the last component serves the API every request is answered 503, except /livez (200:
 * the process is alive while it starts; /readyz says it is not ready). That last component
 * is the first stopped: it stops accepting requests and lets those in progress finish before
 * anything they use is stopped.
 */
import { chmodSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { listingFeedOn } from './listings/feed-deps.ts'
import { buildApp } from './app.ts'
import type { Config } from './config.ts'
import { lacksMarketData, seedDemo } from './demo/seed.ts'
import { monitorServer } from './health-monitor.ts'
import { probeWhileStarting } from './health/routes.ts'
import { discardUnreadBody } from './http/body.ts'
import { operatorHandler } from './operator/socket-handler.ts'
import { memoryRateLimiter } from './ratelimit/memory.ts'
import { followListingInventory, loadedInMemory, memoryQuota, openKeyIndex, openReadyZones, openUsageIndex } from './read-models.ts'
import { Components } from './runtime/components.ts'
import { DataDirBusy, lockDataDir } from './runtime/data-dir-lock.ts'
import { preparePrivateDataDir } from './runtime/data-dir.ts'
import { asRequest, Dependency, type DependencyLog } from './runtime/dependency.ts'
import type { Handler, Listening, RuntimeEdge } from './runtime/edge.ts'
import type { Logger } from './runtime/log.ts'
import { terminalProgress } from './runtime/progress.ts'
import { PACKAGE_VERSION } from './runtime/version.ts'
import { briefingServiceOn, deliveryOptionsOf, webhookServiceOn, webhookWorkerOn } from './services.ts'
import { webhookSigningKey } from './runtime/signing-key.ts'
import { AppError, fail } from './shared/errors.ts'
import { copyPreparedDemo, demoOfFirstStart } from './prepared-demo.ts'
import { cryptoRandom, systemClock } from './shared/random.ts'
import { openStorage, type Storage } from './storage.ts'
import { liveTables } from '../projections/engine/live-tables.ts'

/** What every component may use without starting it. */
export type ServerGiven = {
  config: Config
  edge: RuntimeEdge
  log: Logger
  /** Where a background failure is reported (an outage is its dependency's to log). */
  reportError: (error: unknown) => void
  dependencyLog: DependencyLog
}

/** A start refused with a message of its own; any other failure is reported as "cannot start: …". */
export class Refusal extends Error {}

/** Where the events are kept, as the start-up log names it. */
export const eventsKeptIn = (config: Config) => (config.esdbConnectionString ? 'kurrentdb' : config.databaseUrl ? 'postgres' : 'pglite')

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** A JSON error answer built outside Elysia (while starting, or if the runtime's server catches a failure). */
const errorResponse = (error: AppError, status: number): Response =>
  Response.json(error.body(), { status, headers: { 'x-request-id': crypto.randomUUID(), ...error.headers } })

/** `listening`, stopped once however often asked: the API stops it first, its own component again. */
function stoppedOnce<L extends Listening>(listening: L): L {
  let stopped: Promise<void> | undefined
  return { ...listening, stop: () => (stopped ??= listening.stop()) }
}

/** The API's port; `serve` replaces the answers given while starting. */
type ApiPort = Listening & { port: number; serve(handler: Handler): void }

/** The path of a request's URL, read past its authority without parsing it (an odd Host must not make it throw). */
function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('://') + 3)
  if (start < 0) return '/'
  const end = url.search(/[?#]/)
  return url.slice(start, end > start ? end : undefined)
}

/** Until the API serves: /livez 200 and /readyz 503 (src/health/routes.ts), anything else 503, with Retry-After. */
function answerWhileStarting(request: Request): Response {
  const probe = probeWhileStarting(request.method, pathOf(request.url))
  if (probe && !(probe instanceof AppError)) return Response.json(probe, { headers: { 'x-request-id': crypto.randomUUID() } })
  return errorResponse(probe ?? fail.serviceUnavailable('the server is starting; retry in a moment', 1), 503)
}

async function openApiPort({ config, edge, log }: ServerGiven): Promise<ApiPort> {
  let answer: Handler = answerWhileStarting
  try {
    const http = await edge.listen({
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
    return { ...stoppedOnce(http), serve: (handler) => (answer = handler) }
  } catch (error) {
    const inUse = (error as { code?: string }).code === 'EADDRINUSE'
    throw new Refusal(inUse ? `port ${config.port} on ${config.host} is in use; stop what listens there or set PORT` : `cannot listen on ${config.host}:${config.port}: ${messageOf(error)}`)
  }
}

/** Metrics on a port of their own (METRICS_PORT): no key, no limit; nothing without METRICS_PORT. */
async function openMetricsPort({ config, edge }: ServerGiven) {
  if (config.metricsPort === undefined) return { metrics: undefined, server: undefined }
  // Loaded only here: prom-client costs a server without METRICS_PORT ~60 ms of start-up.
  const { metricsHandler, prometheusMetrics } = await import('./metrics/prometheus.ts')
  const metrics = prometheusMetrics({ version: PACKAGE_VERSION, runtime: edge.runtime })
  try {
    const server = await edge.listen({
      port: config.metricsPort,
      hostname: config.host,
      handler: metricsHandler(metrics),
      failed: () => errorResponse(fail.internal('internal error'), 500),
    })
    return { metrics, server: stoppedOnce(server) }
  } catch (error) {
    throw new Refusal(`cannot serve metrics on ${config.host}:${config.metricsPort}: ${messageOf(error)}; stop what listens there or set METRICS_PORT`)
  }
}
type MetricsPort = Awaited<ReturnType<typeof openMetricsPort>>

async function openLoggedStorage({ config, log, reportError, dependencyLog, metricsPort }: ServerGiven & { metricsPort: MetricsPort }) {
  const storage = await openStorage(config, reportError, dependencyLog, metricsPort.metrics)
  log.info('event_store', {
    events: eventsKeptIn(config),
    server_version: storage.eventServer?.version ?? null,
    batches: storage.store.batches,
    reason: storage.eventServer?.reason ?? (config.singleStreamAppends ? 'SINGLE_STREAM_APPENDS is on' : 'one transaction per batch'),
  })
  liveTables(storage.db).onChange((projection, generation) => log.info('generation_live', { projection, generation: generation.id }))
  return storage
}

/** A first start copies the demo market prepared at install when it is the one it would seed (decision 0123). */
function copyDemoPreparedAtInstall({ config, log }: ServerGiven) {
  const copying = Date.now()
  const now = systemClock()
  const prepared = copyPreparedDemo(config, now)
  if (prepared) log.info('demo_seeded', { prepared, listings: demoOfFirstStart(config, now).listings, seconds: secondsSince(copying) })
}

/** A fresh install serves a plausible market at once: the deterministic demo, ingested like any feed. */
async function seedDemoIfEmpty({ config, log, storage }: ServerGiven & { storage: Storage }) {
  if (!config.demoOnEmpty || !(await lacksMarketData(storage.store))) return
  const seeding = Date.now()
  const bar = terminalProgress()
  const summary = await seedDemo(
    storage.store,
    demoOfFirstStart(config, systemClock()),
    (done, total) => bar.progress({ label: 'demo seed', done, total, unit: 'lines' }),
  )
  bar.done()
  log.info('demo_seeded', { ...summary, seconds: (Date.now() - seeding) / 1000 })
}

/** Redis when REDIS_URL is set (watched by the health monitor), else counted in memory. */
async function openRateLimiter({ config, log, dependencyLog }: ServerGiven) {
  if (!config.redisUrl) return { limiter: memoryRateLimiter(), watched: [] }
  const dependency = new Dependency('rate limiter', dependencyLog)
  // Loaded only here: the redis client costs a server that counts in memory ~0.15 s of start-up.
  const { openRedisRateLimiter } = await import('./ratelimit/redis.ts')
  const redis = await openRedisRateLimiter({ url: config.redisUrl, dependency, log: (message) => log.info('redis', { message }) })
  return { limiter: redis, watched: [{ dependency, probe: () => redis.ping() }] }
}

/** The CLI's way in while this server owns the embedded store; with PostgreSQL the CLI opens the database itself. */
async function serveOperatorSocket({ config, edge, storage }: ServerGiven & { storage: Storage }) {
  if (config.databaseUrl) return undefined
  const path = join(config.dataDir, 'mirador.sock')
  rmSync(path, { force: true })
  const listening = await edge.listenUnix(path, operatorHandler((progress) => ({ ...storage, clock: systemClock, random: cryptoRandom, progress })))
  chmodSync(path, 0o600)
  return { path, stop: () => listening.stop().then(() => rmSync(path, { force: true })) }
}

/** How the API answers a request: bounded calls, and an unread request body discarded after a write's answer. */
function answeredBy(app: ReturnType<typeof buildApp>): Handler {
  return (request) => {
    const answered = asRequest(() => app.handle(request))
    if (request.method === 'GET' || request.method === 'HEAD') return answered
    return answered.then((response) => discardUnreadBody(request).then(() => response))
  }
}

/** Seconds since `from`, for the start-up log. */
const secondsSince = (from: number) => (Date.now() - from) / 1000

export const serverComponents = Components.given<ServerGiven>()
  .add({
    name: 'dataDir',
    start({ config, log }) {
      const { looseMode } = preparePrivateDataDir(config.dataDir)
      if (!looseMode) return
      const message = `other users can open ${config.dataDir}; run: chmod 700 ${config.dataDir}`
      log.info('data_dir_permissions', { level: 'warn', data_dir: config.dataDir, mode: looseMode, message })
    },
  })
  .add({
    // PGlite files belong to one process; with PostgreSQL any number of servers share the database.
    name: 'lock',
    start({ config }) {
      if (config.databaseUrl) return () => {}
      try {
        return lockDataDir(config.dataDir)
      } catch (error) {
        if (error instanceof DataDirBusy) throw new Refusal(`${config.dataDir} is in use by another server (process ${error.pid}); stop it or set DATA_DIR`)
        throw error
      }
    },
    stop: (unlock) => unlock(),
  })
  .add({ name: 'port', start: openApiPort, stop: (port) => port.stop() })
  .add({ name: 'metricsPort', start: openMetricsPort, stop: ({ server }) => server?.stop() })
  .add({ name: 'preparedDemo', start: copyDemoPreparedAtInstall })
  .add({ name: 'storage', start: openLoggedStorage, stop: (storage) => storage.close() })
  .add({ name: 'demo', start: seedDemoIfEmpty })
  .add({
    name: 'projections',
    async start({ storage, log, reportError }) {
      const catchingUp = Date.now()
      await storage.runner.start(reportError)
      log.info('projections_ready', { seconds: secondsSince(catchingUp) })
    },
  })
  .add({ name: 'keys', start: ({ storage, reportError }) => openKeyIndex(storage, reportError), stop: (keys) => keys.stop() })
  .add({ name: 'usage', start: ({ storage, reportError }) => openUsageIndex(storage, reportError), stop: (usage) => usage.stop() })
  .add({
    // Prepared in the background: the API answers zones as soon as they are ready.
    name: 'zones',
    start({ storage, log, reportError }) {
      const preparing = Date.now()
      const zones = openReadyZones(storage, reportError)
      void zones.firstLoaded.then(() => log.info('zones_ready', { seconds: secondsSince(preparing) }))
      return zones
    },
    stop: (zones) => zones.stop(),
  })
  .add({
    // Loaded in the background, beside the zones: /listings answers as soon as they are (decision 0125).
    name: 'inventory',
    start({ storage, log, reportError }) {
      const loading = Date.now()
      const inventory = followListingInventory(storage, reportError)
      void inventory.firstLoaded.then(() => log.info('inventory_ready', { listings: inventory.size.listings, seconds: secondsSince(loading) }))
      return inventory
    },
    stop: (inventory) => inventory.stop(),
  })
  .add({ name: 'rateLimiter', start: openRateLimiter, stop: ({ limiter }) => limiter.close() })
  .add({
    name: 'health',
    start: ({ storage, rateLimiter, zones, inventory }) => monitorServer(storage, rateLimiter.watched, loadedInMemory({ zones, inventory })),
    stop: (health) => health.stop(),
  })
  .add({ name: 'operatorSocket', start: serveOperatorSocket, stop: (socket) => socket?.stop() })
  .add({
    // Subscriptions answered by the API, and the worker delivering them (not without a signing key).
    name: 'webhooks',
    start({ config, storage, zones, metricsPort, reportError }) {
      const signingKey = webhookSigningKey(config)
      const delivery = deliveryOptionsOf(config)
      const service = webhookServiceOn(storage, signingKey, delivery, systemClock, cryptoRandom)
      const worker = signingKey === null ? null : webhookWorkerOn(storage, zones, signingKey, delivery, systemClock, cryptoRandom, metricsPort.metrics, reportError)
      worker?.start()
      return { service, worker }
    },
    stop: ({ worker }) => worker?.stop(),
  })
  .add({
    // Last, so the first stopped: it stops accepting requests and lets those in progress finish
    // before anything they use is stopped.
    name: 'api',
    start({ config, edge, log, port, metricsPort, storage, keys, usage, zones, inventory, rateLimiter, health, webhooks }) {
      const metrics = metricsPort.metrics
      const app = buildApp({
        keys,
        limiter: rateLimiter.limiter,
        limits: config.rateLimits,
        clock: systemClock,
        log,
        accessLog: config.accessLog,
        zones,
        inventory,
        feed: listingFeedOn(storage, metrics, { collectGarbage: () => edge.collectGarbage?.() }),
        briefings: briefingServiceOn(storage, { zones, inventory }, config, systemClock, cryptoRandom, undefined, metrics),
        quota: memoryQuota(usage, config.quotas),
        webhooks: webhooks.service,
        health,
        metrics,
      })
      port.serve(answeredBy(app))
      return { port, metricsServer: metricsPort.server }
    },
    async stop({ port, metricsServer }) {
      await port.stop()
      await metricsServer?.stop()
    },
  })
