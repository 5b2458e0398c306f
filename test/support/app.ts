import { DEFAULT_LEASE_MS } from '../../src/domain/briefings/idempotency.ts'
import type { Db } from '../../src/db/port.ts'
import type { BatchGuarantee, EventStore } from '../../src/eventstore/port.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { Dependency } from '../../src/runtime/dependency.ts'
import { buildApp } from '../../src/app.ts'
import type { Logger } from '../../src/runtime/log.ts'
import type { KeyIndex } from '../../projections/owners-and-keys/key-index.ts'
import type { ReadyZones } from '../../projections/listings/ready-zones.ts'
import type { OperatorContext } from '../../src/operator/command.ts'
import { runOperatorCommand } from '../../src/operator/commands.ts'
import { memoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { defaultRateLimits, type RateLimiter, type RateLimits } from '../../src/ratelimit/port.ts'
import { DEFAULT_QUOTAS } from '../../src/domain/briefings/quota.ts'
import { type Clock, cryptoRandom, systemClock } from '../../src/shared/random.ts'
import { monitorServer } from '../../src/health-monitor.ts'
import { loadedInMemory, memoryQuota, openKeyIndex, openListingInventory, openReadyZones, openUsageIndex } from '../../src/read-models.ts'
import { briefingServiceOn } from '../../src/services.ts'
import { type Storage, storageOn } from '../../src/storage.ts'
import { openPglite } from '../../src/db/pglite.ts'
import type { UsageIndex } from '../../projections/briefings/usage-index.ts'
import type { QuotaReader } from '../../src/health/routes.ts'
import { type ListingFeed, listingFeedOn } from '../../src/listings/feed-deps.ts'
import type { ListingInventory } from '../../projections/listings/inventory.ts'
import type { BriefingService } from '../../src/briefings/service.ts'
import { type BriefingWriter, localAnalyst } from '../../src/domain/briefings/writer.ts'
import type { Metrics } from '../../src/metrics/port.ts'
import type { WebhookService } from '../../src/webhooks/service.ts'
import type { DeliveryOptions } from '../../src/webhooks/outbound.ts'
import { webhookServiceOn } from '../../src/services.ts'

/** The signing key of test systems; their webhooks may reach a receiver on this machine (WEBHOOKS_ALLOW_LOCAL). */
export const TEST_SIGNING_KEY = 'test-signing-key-0123456789abcdefghijklmnop'
export const LOCAL_DELIVERY: DeliveryOptions = { allowHttp: true, allowPrivate: true }

export type TestSystem = {
  storage: Storage
  keys: KeyIndex
  /** The briefing usage in memory, and /health's quota read from it. */
  usage: UsageIndex
  quota: QuotaReader
  zones: ReadyZones
  inventory: ListingInventory
  feed: ListingFeed
  briefings: BriefingService
  webhooks: WebhookService
  app: ReturnType<typeof buildApp>
  logs: string[]
  operator: OperatorContext
  /** Runs an operator command exactly as the CLI would. */
  run<T = Record<string, unknown>>(command: string, args: Record<string, unknown>): Promise<T>
  /** Registers an owner and issues it a key; returns the plaintext key. */
  ownerWithKey(id: string, tier: 'free' | 'pro' | 'enterprise' | 'admin', scopes?: string[]): Promise<{ key: string; keyId: string }>
  /** Waits until the projections, the key index and the listing inventory have caught up with the store. */
  settle(): Promise<void>
  request(path: string, init?: RequestInit & { key?: string }): Promise<Response>
  close(): Promise<void>
}

export type TestSystemOptions = {
  limiter?: RateLimiter
  limits?: RateLimits
  clock?: Clock
  quotas?: { pro: number; enterprise: number }
  /** Defaults to the built-in local analyst. */
  writer?: BriefingWriter
  /** How the event store records batches (default all-or-nothing; see BatchGuarantee). */
  batches?: BatchGuarantee
  /** Where requests, appends and briefings are reported (as with METRICS_PORT); none by default. */
  metrics?: Metrics
  /**
   * The event store as `wrap` makes it of the SQL store on `db`, watched as a server watches an event
   * server it depends on: within a request (`asRequest`) its calls are bounded (src/runtime/dependency.ts).
   */
  eventStore?: (store: EventStore) => EventStore
  /** How webhook calls trust a target: a local receiver allowed unless told (production: `{ allowHttp: false }`). */
  webhookDelivery?: DeliveryOptions
}

/**
 * The whole API on a given database, with the real auth stack, projections and operator commands.
 * Requests go through `app.handle`, exactly as Bun would hand them over.
 */
export async function startTestSystem(db: Db, options: TestSystemOptions = {}): Promise<TestSystem> {
  const logs: string[] = []
  const log: Logger = {
    info: (event, fields) => logs.push(JSON.stringify({ event, ...fields })),
    error: (event, fields) => logs.push(JSON.stringify({ level: 'error', event, ...fields })),
  }
  const wrapped = options.eventStore?.(await openSqlEventStore(db, { batches: options.batches }))
  const watch = wrapped && { events: new Dependency('event store', () => {}), database: new Dependency('read-model database', () => {}) }
  const storage = await storageOn(db, { batches: options.batches, metrics: options.metrics, eventStore: wrapped, watch })
  const onError = (error: unknown) => logs.push(`background error: ${String(error)}`)
  await storage.runner.start(onError)
  const keys = await openKeyIndex(storage, onError)
  const usage = await openUsageIndex(storage, onError)
  const zones = openReadyZones(storage, onError)
  const inventory = await openListingInventory(storage, onError)
  const clock = options.clock ?? systemClock
  const quotas = options.quotas ?? DEFAULT_QUOTAS
  const quota = memoryQuota(usage, quotas)
  const briefings = briefingServiceOn(
    storage,
    { zones, inventory },
    { openai: { apiKey: undefined, baseUrl: undefined, model: 'unused', timeoutMs: 1000 }, quotas, idempotencyLeaseMs: DEFAULT_LEASE_MS },
    clock,
    cryptoRandom,
    options.writer ?? localAnalyst,
    options.metrics,
  )
  const health = monitorServer(storage, [], loadedInMemory({ zones, inventory }))
  const feed = listingFeedOn(storage, options.metrics)
  const webhooks = webhookServiceOn(storage, TEST_SIGNING_KEY, options.webhookDelivery ?? LOCAL_DELIVERY, clock, cryptoRandom)
  const app = buildApp({
    keys,
    limiter: options.limiter ?? memoryRateLimiter(),
    limits: options.limits ?? defaultRateLimits,
    clock,
    log,
    accessLog: true,
    zones,
    inventory,
    feed,
    briefings,
    webhooks,
    quota,
    health,
    metrics: options.metrics,
  })
  const operator: OperatorContext = { ...storage, clock, random: cryptoRandom, progress: () => {} }
  const settle = async () => {
    await storage.runner.catchUp()
    await keys.settled()
    await usage.settled()
    await zones.settled()
    await inventory.settled()
  }
  const run = async <T>(command: string, args: Record<string, unknown>) => (await runOperatorCommand(operator, command, args)) as T
  return {
    storage,
    keys,
    usage,
    quota,
    zones,
    inventory,
    feed,
    briefings,
    webhooks,
    app,
    logs,
    operator,
    run,
    async ownerWithKey(id, tier, scopes = ['read', 'write']) {
      await run('owner create', { id, tier })
      // Free owners cannot get keys: issue while pro, then downgrade, as happens in real life.
      const issuingTier = tier === 'free' ? 'pro' : tier
      if (issuingTier !== tier) await run('owner set-tier', { id, tier: issuingTier, actor: 'test' })
      const admin = tier === 'enterprise' || tier === 'admin' ? id : await ensureAdmin(run)
      const issued = await run<{ key: string; key_id: string }>('key issue', { owner: id, scopes, actor: admin })
      if (tier === 'free') await run('owner set-tier', { id, tier: 'free', actor: 'test' })
      await settle()
      return { key: issued.key, keyId: issued.key_id }
    },
    settle,
    request(path, init = {}) {
      const { key, ...rest } = init
      const headers = new Headers(rest.headers)
      if (key) headers.set('authorization', `Bearer ${key}`)
      return app.handle(new Request(`http://localhost${path}`, { ...rest, headers }))
    },
    async close() {
      health.stop()
      keys.stop()
      usage.stop()
      zones.stop()
      inventory.stop()
      await storage.close()
    },
  }
}

async function ensureAdmin(run: TestSystem['run']): Promise<string> {
  try {
    await run('owner create', { id: 'root', tier: 'admin' })
  } catch (error) {
    if ((error as { code?: string }).code !== 'conflict') throw error
  }
  return 'root'
}

/**
 * A test system on an in-memory PGlite holding the small demo market (112 listings), projected, and
 * the key of an owner `acme` of `tier`: the set-up of specs that ask questions of a known market.
 */
export async function demoMarketSystem(tier: 'free' | 'pro' | 'enterprise' | 'admin'): Promise<{ system: TestSystem; key: string }> {
  const system = await startTestSystem(await openPglite())
  await system.run('demo seed', { listings: 112 })
  await system.settle()
  return { system, key: (await system.ownerWithKey('acme', tier)).key }
}
