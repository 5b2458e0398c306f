/**
 * The storage side of the system, and the one place where configuration picks its adapters: read
 * models in PostgreSQL or PGlite, events beside them or, with ESDB_CONNECTION_STRING, in KurrentDB;
 * the projection runner over every read model.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from './config.ts'
import { openPglite } from './db/pglite.ts'
import type { Db } from './db/port.ts'
import { openPostgres } from './db/postgres.ts'
import { watchedDb } from './db/watched.ts'
import type { ServerMode } from './eventstore/esdb-mapping.ts'
import type { BatchGuarantee, EventStore } from './eventstore/port.ts'
import { openSqlEventStore } from './eventstore/sql-event-store.ts'
import { watchedEventStore } from './eventstore/watched.ts'
import type { Metrics } from './metrics/port.ts'
import { meteredEventStore } from './metrics-mapping.ts'
import { preparePrivateDataDir } from './runtime/data-dir.ts'
import { Dependency, type DependencyLog } from './runtime/dependency.ts'
import { briefingCacheProjection } from '../projections/briefings/cache.ts'
import { briefingUsageProjection } from '../projections/briefings/usage.ts'
import { liveTables } from '../projections/engine/live-tables.ts'
import type { Projection } from '../projections/engine/projection.ts'
import { ProjectionRunner } from '../projections/engine/runner.ts'
import { listingsProjection } from '../projections/listings/projection.ts'
import { apiKeysProjection } from '../projections/owners-and-keys/api-keys.ts'
import { ownersProjection } from '../projections/owners-and-keys/owners.ts'
import { webhooksProjection } from '../projections/webhooks/subscriptions.ts'

/** Every read model the system maintains, in the order they are caught up. */
export const allProjections: readonly Projection[] = [
  ownersProjection,
  apiKeysProjection,
  listingsProjection,
  briefingCacheProjection,
  briefingUsageProjection,
  webhooksProjection,
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
    watch = { ...dependencies, probeDb: await openPostgres(config.databaseUrl, { max: 1, patient: false }) }
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
    // Loaded only here: the KurrentDB client (gRPC) costs every process that does not use it ~0.2 s of start-up.
    const { openEsdbEventStore } = await import('./eventstore/esdb-event-store.ts')
    const eventStore = await openEsdbEventStore(config.esdbConnectionString, { singleStreamAppends })
    return { ...(await storageOn(db, { eventStore, onError, watch, metrics })), eventServer: eventStore.server }
  } catch (error) {
    await db.close()
    await watch?.probeDb?.close()
    throw error
  }
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
  const store = metrics ? meteredEventStore(watched, metrics) : watched
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
