import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from './config.ts'
import { openPglite } from './db/pglite.ts'
import type { Db } from './db/port.ts'
import { openPostgres } from './db/postgres.ts'
import { openEsdbEventStore } from './eventstore/esdb-event-store.ts'
import type { ServerMode } from './eventstore/esdb-mapping.ts'
import type { BatchGuarantee, EventStore } from './eventstore/port.ts'
import { openSqlEventStore } from './eventstore/sql-event-store.ts'
import { KeyIndex } from '../projections/owners-and-keys/key-index.ts'
import { ListingInventory } from '../projections/listings/inventory.ts'
import { preparePrivateDataDir } from './runtime/data-dir.ts'
import { zoneFactsFrom } from './briefings/facts-source.ts'
import { writerFor } from './briefings/openai-writer.ts'
import { BriefingReadModel } from '../projections/briefings/read-model.ts'
import { type BriefingService, briefingService } from './briefings/service.ts'
import type { BriefingWriter } from './domain/briefings/writer.ts'
import type { Clock, RandomSource } from './shared/random.ts'
import type { ProjectionLagRow, QuotaReader, ServerHealth } from './health/routes.ts'
import { UsageIndex } from '../projections/briefings/usage-index.ts'
import { monthResetsAt, type QuotaPolicy, quotaMonth, usageOf } from './domain/briefings/quota.ts'
import { Dependency, type DependencyLog, watchDependencies } from './runtime/dependency.ts'
import { watchedDb } from './db/watched.ts'
import { watchedEventStore } from './eventstore/watched.ts'
import { ProjectionRunner } from '../projections/engine/runner.ts'
import { apiKeysProjection } from '../projections/owners-and-keys/api-keys.ts'
import { ownersProjection } from '../projections/owners-and-keys/owners.ts'
import { listingsProjection } from '../projections/listings/projection.ts'
import { briefingCacheProjection } from '../projections/briefings/cache.ts'
import { briefingUsageProjection } from '../projections/briefings/usage.ts'
import type { Projection } from '../projections/engine/projection.ts'
import { liveTables } from '../projections/engine/live-tables.ts'
import { ReadyZones } from '../projections/listings/ready-zones.ts'
import type { BriefingOutcome, Metrics } from './metrics/port.ts'
import { measuredEventStore } from './metrics/event-store.ts'
import type { BriefingEventSchemas } from './domain/briefings/events.ts'

/** Every read model the system maintains, in the order they are caught up. */
export const allProjections: readonly Projection[] = [
  ownersProjection,
  apiKeysProjection,
  listingsProjection,
  briefingCacheProjection,
  briefingUsageProjection,
]

/**
 * The storage side of the system: one database, the event store on it, and the read models;
 * `eventServer` says how the events are kept when they are in KurrentDB (for the start-up log).
 */
export type Storage = {
  db: Db
  store: EventStore
  runner: ProjectionRunner
  eventServer: ServerMode | null
  /** The servers this storage depends on (none when embedded: PGlite cannot go away), each with its probe. */
  dependencies: { dependency: Dependency; probe(): Promise<unknown> }[]
  close(): Promise<void>
}

/**
 * The dependencies a storage keeps (its `db` already watched by `database`), none for an embedded
 * store; `probeDb`: the database's own connection for the monitor's probes (closed with the storage).
 */
type StorageWatch = { database: Dependency; events: Dependency; probeDb?: Db }

/** Where the embedded store keeps its files inside DATA_DIR. */
export const embeddedStoreDir = (dataDir: string) => join(dataDir, 'pglite')
/** Whether DATA_DIR already holds an embedded store (PostgreSQL writes PG_VERSION first thing). */
export const embeddedStoreExists = (dataDir: string) => existsSync(join(embeddedStoreDir(dataDir), 'PG_VERSION'))

/**
 * The one place where configuration picks the adapters: read models in PostgreSQL or PGlite, events
 * beside them or, with ESDB_CONNECTION_STRING, in KurrentDB.
 */
export async function openStorage(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'esdbConnectionString' | 'singleStreamAppends'>,
  onError?: (error: unknown) => void,
  log: DependencyLog = () => {},
  metrics?: Metrics,
): Promise<Storage> {
  let db: Db
  // A server can go away: its calls are watched (bounded within requests, outages answered 503).
  const dependencies = { database: new Dependency('read-model database', log), events: new Dependency('event store', log) }
  let watch: StorageWatch | undefined
  if (config.databaseUrl) {
    // Probed on a connection of its own, so that a busy pool is not taken for an absent server.
    watch = { ...dependencies, probeDb: await openPostgres(config.databaseUrl, { max: 1 }) }
    db = watchedDb(await openPostgres(config.databaseUrl), dependencies.database)
  } else {
    preparePrivateDataDir(config.dataDir)
    db = await openPglite(embeddedStoreDir(config.dataDir))
  }
  try {
    const { singleStreamAppends } = config
    if (config.esdbConnectionString) watch ??= dependencies
    if (!config.esdbConnectionString) {
      return await storageOn(db, { onError, batches: singleStreamAppends ? 'stream-by-stream' : 'all-or-nothing', watch, metrics })
    }
    const eventStore = await openEsdbEventStore(config.esdbConnectionString, { singleStreamAppends })
    return { ...(await storageOn(db, { eventStore, onError, watch, metrics })), eventServer: eventStore.server }
  } catch (error) {
    await db.close()
    await watch?.probeDb?.close()
    throw error
  }
}

/** The briefing events, as the metrics count them. */
const BRIEFING_OUTCOMES: Partial<Record<keyof typeof BriefingEventSchemas | 'BriefingReplayed', BriefingOutcome>> = {
  BriefingGenerated: 'generated',
  BriefingServedFromCache: 'cache_hit',
  BriefingReplayed: 'replayed',
}

/**
 * Event store and read models on an open database (tests pass an in-memory PGlite or a schema);
 * events in `db`, recording batches as `batches` says, unless another store is given. Readers find
 * the live generation of each read model in memory, told of every switch at once. With `metrics`,
 * appends are timed, briefings counted as they are recorded and the projections' figures read at
 * each scrape.
 */
export async function storageOn(
  db: Db,
  options: {
    eventStore?: EventStore
    batches?: BatchGuarantee
    onError?: (error: unknown) => void
    watch?: StorageWatch
    metrics?: Metrics
  } = {},
): Promise<Storage> {
  const { watch, metrics } = options
  const unwatched = options.eventStore ?? (await openSqlEventStore(db, { batches: options.batches }))
  const watched = watch ? watchedEventStore(unwatched, watch.events) : unwatched
  const store = metrics
    ? measuredEventStore(watched, metrics, (events) => {
        for (const event of events) {
          const outcome = BRIEFING_OUTCOMES[event.type as keyof typeof BRIEFING_OUTCOMES]
          if (outcome) metrics.briefing(outcome)
        }
      })
    : watched
  const runner = new ProjectionRunner(db, store, allProjections)
  await runner.prepare()
  const live = liveTables(db)
  await live.follow(options.onError ?? (() => {}))
  metrics?.projectionsFrom(() => runner.status())
  return {
    db,
    store,
    runner,
    eventServer: null,
    dependencies: watch
      ? [
          { dependency: watch.events, probe: options.eventStore || !watch.probeDb ? () => unwatched.headPosition() : () => watch.probeDb!.query('select 1') },
          ...(watch.probeDb ? [{ dependency: watch.database, probe: () => watch.probeDb!.query('select 1') }] : []),
        ]
      : [],
    async close() {
      await runner.stop()
      await live.stop()
      await store.close()
      await db.close()
      await watch?.probeDb?.close()
    },
  }
}

/** Authentication's copy of the owners and keys read models, loaded before it answers. */
export async function openKeyIndex(storage: Storage, onError: (error: unknown) => void): Promise<KeyIndex> {
  const index = KeyIndex.follow(storage.db, { live: liveTables(storage.db), advancing: storage.runner }, onError)
  await index.settled()
  return index
}

/** The briefing usage read model in memory (/health's quota), loaded before it answers. */
export async function openUsageIndex(storage: Storage, onError: (error: unknown) => void): Promise<UsageIndex> {
  const index = UsageIndex.follow(storage.db, { live: liveTables(storage.db), advancing: storage.runner }, onError)
  await index.settled()
  return index
}

/** /health's quota: this month's usage from `usage`, in memory; the month is worked out again only when it ends. */
export function memoryQuota(usage: UsageIndex, quotas: QuotaPolicy): QuotaReader {
  let month = { name: '', from: 0, to: 0 }
  return (ownerId, tier, now) => {
    const ms = now.getTime()
    if (ms < month.from || ms >= month.to) {
      const name = quotaMonth(now)
      month = { name, from: Date.parse(`${name}-01T00:00:00.000Z`), to: monthResetsAt(name).getTime() }
    }
    return usageOf(quotas, tier, usage.used(ownerId, month.name))
  }
}

/** The answers of /zones and /zone/{slug}, prepared from the listings read model and kept current. */
export const openReadyZones = (storage: Storage, onError: (error: unknown) => void): ReadyZones =>
  ReadyZones.follow(storage.db, storage.runner, onError)

/** GET /listings from memory, following this process's runner and every generation switch. */
export function openListingInventory(storage: Storage, onError: (error: unknown) => void): Promise<ListingInventory> {
  return ListingInventory.open(storage.db, storage.runner, { onError })
}

/** Read models are ready while the oldest event any live generation still has to apply is younger than this. */
export const READY_MAX_LAG_SECONDS = 10
/** How often the read models' lag is measured for /health and /readyz. */
const LAG_MEASURE_MS = 500

/**
 * Watches the storage's dependencies and `others` (the rate limiter), and measures the read models'
 * lag in the background, so that /health and /readyz answer from memory (docs/errors.md, "When a
 * dependency fails").
 */
export function monitorServer(storage: Storage, others: Storage['dependencies'] = []): ServerHealth & { stop(): void } {
  const watched = [...storage.dependencies, ...others]
  const probes = watchDependencies(watched)
  let lag: ProjectionLagRow[] | null = null
  let measuring = false
  const measure = () => {
    if (measuring) return
    measuring = true
    storage.runner
      .status()
      .then((rows) => {
        lag = rows
          .filter((g) => g.state !== 'previous' && g.state !== 'retired')
          .map((g) => ({ projection: g.projection, generation: g.generation, state: g.state, lag_events: g.lag_events, lag_seconds: g.lag_seconds }))
      })
      // An outage is the dependencies' to report; the last measure stays until the next succeeds.
      .catch(() => {})
      .finally(() => (measuring = false))
  }
  measure()
  const timer = setInterval(measure, LAG_MEASURE_MS)
  timer.unref?.()
  return {
    dependencies: () => watched.map(({ dependency }) => dependency.state()),
    projections: () => lag,
    notReady() {
      const down = watched.find(({ dependency }) => !dependency.reachable)
      if (down) return `the ${down.dependency.name} is unavailable`
      if (!lag) return 'the read models are being measured'
      if (lag.some((g) => g.state !== 'building' && g.state !== 'held' && g.lag_seconds > READY_MAX_LAG_SECONDS)) return 'the read models are catching up'
      return null
    },
    stop() {
      probes.stop()
      clearInterval(timer)
    },
  }
}

/** Briefings on this storage: the writer is OpenAI when configured, else the local analyst. */
export function briefingServiceOn(
  storage: Storage,
  zones: ReadyZones,
  config: Pick<Config, 'openai' | 'quotas' | 'idempotencyLeaseMs'>,
  clock: Clock,
  random: RandomSource,
  writer: BriefingWriter = writerFor(config.openai),
  metrics?: Metrics,
): BriefingService {
  return briefingService({
    store: storage.store,
    readModel: new BriefingReadModel(storage.db),
    facts: zoneFactsFrom(zones),
    // A writer that throws fails the request (502 upstream_error): counted here, once per failure.
    writer: metrics
      ? { write: (...args) => writer.write(...args).catch((error: unknown) => (metrics.writerFailed(), Promise.reject(error))) }
      : writer,
    clock,
    random,
    quotas: config.quotas,
    idempotencyLeaseMs: config.idempotencyLeaseMs,
  })
}
