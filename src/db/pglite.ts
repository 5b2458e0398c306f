import { chmodSync, existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
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

let clusterTemplate: string | undefined

/**
 * Every new cluster (in memory, or a data directory not yet initialised) starts as a copy of the one
 * in `tarball` (made by `PGlite.dumpDataDir` of a fresh cluster) instead of running initdb: 0.4 s
 * instead of 1.3–2.5 s. The test suite creates ~60 clusters, so it makes one and starts the others
 * from it (test/support/pglite-template.ts); a server never calls this.
 */
export function startClustersFrom(tarball: string): void {
  clusterTemplate = tarball
}

async function createCluster(dataDir: string | undefined): Promise<PGlite> {
  const initialised = dataDir !== undefined && existsSync(join(dataDir, 'PG_VERSION'))
  if (clusterTemplate === undefined || initialised) return dataDir ? PGlite.create(dataDir) : PGlite.create()
  return PGlite.create({ dataDir, loadDataDir: new Blob([readFileSync(clusterTemplate)]) })
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
