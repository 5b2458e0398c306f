import { chmodSync, cpSync, existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { setImmediate } from 'node:timers'
import { PGlite } from '@electric-sql/pglite'
import { freshCluster } from './pglite-fresh-cluster.ts'
import { pgliteModule } from './pglite-module.ts'
import { preparedStatements } from './pglite-statements.ts'
import type { Db, Row, Sql } from './port.ts'

/**
 * PGlite unpacks its initial cluster with world-readable, world-writable files (0666); the files it
 * creates later follow the umask. The store holds every event, so its files are made the owner's
 * alone, whatever the directory around them allows.
 */
function restrictToOwner(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      chmodSync(path, 0o700)
      restrictToOwner(path)
    } else if (entry.isFile()) {
      chmodSync(path, 0o600)
    }
  }
}

/**
 * PostgreSQL's buffer pool inside PGlite's WebAssembly memory. initdb writes 128MB, which PGlite
 * allocates and touches when it starts: 32MB took the embedded server's resident memory from 258 to
 * 155 MiB at opening on the demo market (decision 0119). A page not in the pool is read from the
 * data directory's file, which the operating system caches: a copy, not a disk read.
 */
const SHARED_BUFFERS = '32MB'

/**
 * PGlite's own start parameters, the buffer pool's size (a start parameter wins over
 * postgresql.conf), and custom plans for every execution of a prepared statement, as on PostgreSQL
 * (src/db/postgres.ts: the read models' skewed searches need plans made for their values).
 */
const START_PARAMS = [...PGlite.defaultStartParams, '-c', `shared_buffers=${SHARED_BUFFERS}`, '-c', 'plan_cache_mode=force_custom_plan']

/**
 * A new cluster (in memory, or in a data directory not yet initialised) starts as a copy of the
 * fresh one made at install (src/db/pglite-fresh-cluster.ts) when there is one, else by initdb.
 */
async function createCluster(dataDir: string | undefined): Promise<PGlite> {
  const fresh = freshCluster()
  const pgliteWasmModule = await pgliteModule()
  if (dataDir === undefined) {
    return PGlite.create({ ...(fresh && { loadDataDir: new Blob([readFileSync(fresh.tarball)]) }), startParams: START_PARAMS, pgliteWasmModule })
  }
  if (fresh && !existsSync(join(dataDir, 'PG_VERSION'))) cpSync(fresh.dir, dataDir, { recursive: true })
  return PGlite.create({ dataDir, startParams: START_PARAMS, pgliteWasmModule })
}

/**
 * The longest PGlite's statements run back to back before the event loop gets a turn. PGlite runs a
 * statement synchronously and resolves its promise at once, so a chain of statements (a projection
 * catching up, a read model loading) never lets the process answer a request or read a socket until
 * it ends: seconds during an ingest (decision 0126).
 */
const TURN_EVERY_MS = 10

/** Resolves at once, or after a turn of the event loop when statements have run for TURN_EVERY_MS since the last. */
function eventLoopTurns(): () => Promise<void> | undefined {
  let since = performance.now()
  const turn = () =>
    new Promise<void>((resolve) =>
      setImmediate(() => {
        since = performance.now()
        resolve()
      }),
    )
  return () => (performance.now() - since < TURN_EVERY_MS ? undefined : turn())
}

/** Embedded PostgreSQL (WASM). `dataDir` undefined = in memory (tests). One process owns a data dir. */
export async function openPglite(dataDir?: string): Promise<Db> {
  const pg = await createCluster(dataDir)
  if (dataDir) {
    chmodSync(dataDir, 0o700)
    restrictToOwner(dataDir)
  }
  const { run, forgetAll } = preparedStatements(pg)
  const turnIfDue = eventLoopTurns()
  // One statement at a time, and none beside a transaction running: the locks PGlite's `query` takes.
  const root: Sql = {
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      await turnIfDue()
      return pg._runExclusiveTransaction(async () => {
        const rows = await pg._runExclusiveQuery(() => run<T>(text, params))
        await pg.syncToFs()
        return rows
      })
    },
  }
  const inTransaction: Sql = {
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      await turnIfDue()
      return pg._runExclusiveQuery(() => run<T>(text, params))
    },
  }
  return {
    kind: 'pglite',
    query: root.query,
    async exec(script) {
      await pg.exec(script)
      await pg._runExclusiveQuery(forgetAll)
    },
    transaction: (work) => pg.transaction(() => work(inTransaction)),
    async listen(channel, onNotify) {
      const unlisten = await pg.listen(channel, onNotify)
      return async () => unlisten()
    },
    async close() {
      if (!pg.closed) await pg.close()
    },
  }
}
