import { describe, expect, it } from 'vitest'
import { generationTables } from '../../projections/engine/generations.ts'
import { liveTables } from '../../projections/engine/live-tables.ts'
import { listingsProjection } from '../../projections/listings/projection.ts'
import { activeListings } from '../../projections/listings/zone-rows.ts'
import type { Row, Sql } from '../../src/db/port.ts'
import { generateDemoFeed } from '../../src/domain/demo/market.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { databaseTargets } from '../support/databases.ts'
import { ANCHOR } from '../support/market.ts'
import { storeFor } from '../support/store.ts'

/**
 * Decision 0127: the zone statistics read the active listings from the listings table's index
 * `_active_figures` alone (an index-only scan: at a million listings ~90 MB read instead of the
 * table's ~1 GB). The index must hold every column the reading selects, groups by or filters on;
 * a column added to one and not the other turns the reading back into a scan of the table.
 */
const records = generateDemoFeed({ seed: 'zone-statistics-index', listings: 300, anchor: ANCHOR })

/** The statements `read` runs, recorded instead of run (they answer no rows). */
async function statementsOf(read: (sql: Sql) => Promise<unknown>): Promise<{ text: string; params: readonly unknown[] }[]> {
  const seen: { text: string; params: readonly unknown[] }[] = []
  await read({
    query: async <T extends Row>(text: string, params: readonly unknown[] = []) => {
      seen.push({ text, params })
      return [] as T[]
    },
  })
  return seen
}

for (const target of databaseTargets('the zone statistics index')) {
  describe(`the active listings for the zone statistics, read from their index alone, on ${target.name}`, () => {
    const env = storeFor(target.open, { seed: (store) => ingestRecords(store, records, DEFAULT_FX), projections: [listingsProjection] })

    it.each([
      ['a whole country', undefined],
      ['some zones of a country', [1, 2, 3]],
    ])('%s', async (_, zones) => {
      await env.runner.catchUp()
      const t = generationTables(listingsProjection, await liveTables(env.db).of(listingsProjection))
      await env.db.query(`vacuum analyze ${t.listings}`)
      const [statement] = await statementsOf((sql) => activeListings(sql, t, 'GT', zones))
      const plan = await env.db.transaction(async (tx) => {
        // A small table is cheaper to scan whole: the planner is told not to, so that the plan shows
        // whether the index can answer alone (it cannot when it lacks a column the statement reads).
        await tx.query('set local enable_seqscan = off')
        await tx.query('set local enable_bitmapscan = off')
        return tx.query<{ 'QUERY PLAN': string }>(`explain ${statement!.text}`, statement!.params)
      })
      const lines = plan.map((row) => row['QUERY PLAN']).join('\n')
      expect(lines).toContain(`Index Only Scan using ${t.listings}_active_figures on ${t.listings}`)
    })
  })
}
