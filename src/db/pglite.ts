import { PGlite } from '@electric-sql/pglite'
import type { Db, Row, Sql } from './port.ts'

/** Embedded PostgreSQL (WASM). `dataDir` undefined = in memory (tests). One process owns a data dir. */
export async function openPglite(dataDir?: string): Promise<Db> {
  const pg = dataDir ? await PGlite.create(dataDir) : await PGlite.create()
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
