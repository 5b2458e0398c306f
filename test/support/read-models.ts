import { allProjections } from '../../src/storage.ts'
import type { GenerationState } from '../../projections/engine/generation-states.ts'
import { generationTables, listGenerations } from '../../projections/engine/generations.ts'
import type { Db } from '../../src/db/port.ts'

/**
 * Every row of every read-model table of one generation state (the live one by default) of every
 * projection, as canonical JSON text in UTC, sorted: equal lists mean equal read models, row for
 * row. Each table starts with a line naming it and its row count.
 */
export async function readModelRows(db: Db, state: GenerationState = 'live'): Promise<string[]> {
  const rows = await listGenerations(db)
  const out: string[] = []
  for (const projection of allProjections) {
    const generation = rows.filter((r) => r.projection === projection.name && r.state === state).at(-1)
    if (!generation) throw new Error(`no ${state} generation of ${projection.name}`)
    for (const [key, table] of Object.entries(generationTables(projection, generation))) {
      const text = await db.transaction(async (tx) => {
        await tx.query(`set local time zone 'UTC'`)
        return tx.query<{ row: string }>(`select to_jsonb(t)::text as row from ${table} t order by 1`)
      })
      out.push(`${projection.name}.${key}: ${text.length} rows`, ...text.map((r) => r.row))
    }
  }
  return out
}
