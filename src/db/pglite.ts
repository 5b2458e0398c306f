import { chmodSync, cpSync, existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { freshCluster } from './pglite-fresh-cluster.ts'
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

/** PGlite's own start parameters, and the buffer pool's size (a start parameter wins over postgresql.conf). */
const START_PARAMS = [...PGlite.defaultStartParams, '-c', `shared_buffers=${SHARED_BUFFERS}`]

/**
 * A new cluster (in memory, or in a data directory not yet initialised) starts as a copy of the
 * fresh one made at install (src/db/pglite-fresh-cluster.ts) when there is one, else by initdb.
 */
async function createCluster(dataDir: string | undefined): Promise<PGlite> {
  const fresh = freshCluster()
  if (dataDir === undefined) {
    return PGlite.create({ ...(fresh && { loadDataDir: new Blob([readFileSync(fresh.tarball)]) }), startParams: START_PARAMS })
  }
  if (fresh && !existsSync(join(dataDir, 'PG_VERSION'))) cpSync(fresh.dir, dataDir, { recursive: true })
  return PGlite.create({ dataDir, startParams: START_PARAMS })
}

/** Embedded PostgreSQL (WASM). `dataDir` undefined = in memory (tests). One process owns a data dir. */
export async function openPglite(dataDir?: string): Promise<Db> {
  const pg = await createCluster(dataDir)
  if (dataDir) {
    chmodSync(dataDir, 0o700)
    restrictToOwner(dataDir)
  }
  const wrap = (q: Pick<PGlite, 'query'>): Sql => ({
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      const result = await q.query<T>(text, params as unknown[])
      return result.rows
    },
  })
  const root = wrap(pg)
  return {
    kind: 'pglite',
    query: root.query,
    async exec(script) {
      await pg.exec(script)
    },
    transaction: (work) => pg.transaction((tx) => work(wrap(tx))),
    async listen(channel, onNotify) {
      const unlisten = await pg.listen(channel, onNotify)
      return async () => unlisten()
    },
    async close() {
      if (!pg.closed) await pg.close()
    },
  }
}
