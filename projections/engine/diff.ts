import type { Db } from '../../src/db/port.ts'
import { toNumber } from '../../src/db/port.ts'
import { fail } from '../../src/shared/errors.ts'
import { generationId } from './generation-states.ts'
import { type GenerationRow, generationTables, listGenerations } from './generations.ts'
import { type LiveGeneration, liveTables } from './live-tables.ts'
import type { Projection } from './projection.ts'

/**
 * `projections diff NAME`: the held generation of a projection against the live one. This module
 * compares any read model row by row, matched by primary key; a read model whose answers are not
 * its rows (listings: zone statistics and the public inventory) brings its own comparison.
 */

/** Changes listed in full up to this many per kind; the counts always cover everything. */
export const LIST_LIMIT = 500

export type TableChange = { key: Record<string, unknown>; live: Record<string, unknown> | null; held: Record<string, unknown> | null }

/** What every comparison reports; a read model's own comparison adds its details. */
export type ProjectionDiff = {
  projection: string
  live: string
  held: string
  /** One line for people: how much differs. */
  summary: string
  tables?: { table: string; rows_live: number; rows_held: number; changed: number; changes: TableChange[] }[]
}

const generationOf = <K extends string>(projection: Projection<K>, row: GenerationRow): LiveGeneration<K> => ({
  projection: row.projection,
  version: row.version,
  build: row.build,
  id: generationId(row),
  tables: generationTables(projection, row),
})

/** The live generation of `projection` and its newest held one (a `conflict` when there is none). */
export async function liveAndHeld<K extends string>(db: Db, projection: Projection<K>): Promise<{ live: LiveGeneration<K>; held: LiveGeneration<K> }> {
  const rows = await listGenerations(db, [projection.name])
  const heldRow = rows.filter((r) => r.state === 'held').at(-1)
  if (!heldRow) {
    throw fail.conflict(`${projection.name} has no held generation to compare; \`projections rebuild ${projection.name} --hold\` builds one`)
  }
  return { live: await liveTables(db).of(projection), held: generationOf(projection, heldRow) }
}

async function primaryKey(db: Db, table: string): Promise<string[]> {
  const rows = await db.query<{ name: string }>(
    `select a.attname as name from pg_index i
       join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey)
      where i.indrelid = $1::regclass and i.indisprimary
      order by array_position(i.indkey::int2[], a.attnum)`,
    [table],
  )
  return rows.map((r) => r.name)
}

/** Every row that differs between the two generations, table by table, matched by primary key. */
export async function diffRows(db: Db, projection: string, live: LiveGeneration, held: LiveGeneration): Promise<ProjectionDiff> {
  const tables: NonNullable<ProjectionDiff['tables']> = []
  for (const key of Object.keys(live.tables)) {
    const [a, b] = [live.tables[key]!, held.tables[key]!]
    const columns = await primaryKey(db, b)
    const using = columns.join(', ')
    const rows = await db.query<{ k: Record<string, unknown>; a: Record<string, unknown> | null; b: Record<string, unknown> | null; total: unknown }>(
      `select jsonb_build_object(${columns.map((c) => `'${c}', ${c}`).join(', ')}) as k, to_jsonb(a) as a, to_jsonb(b) as b,
              count(*) over () as total
         from ${a} a full join ${b} b using (${using})
        where to_jsonb(a) is distinct from to_jsonb(b)
        order by ${using} limit ${LIST_LIMIT}`,
    )
    const [counts] = await db.query<{ a: unknown; b: unknown }>(`select (select count(*) from ${a}) as a, (select count(*) from ${b}) as b`)
    tables.push({
      table: key,
      rows_live: toNumber(counts?.a ?? 0),
      rows_held: toNumber(counts?.b ?? 0),
      changed: toNumber(rows[0]?.total ?? 0),
      changes: rows.map((r) => ({ key: r.k, live: r.a, held: r.b })),
    })
  }
  const changed = tables.reduce((sum, t) => sum + t.changed, 0)
  return {
    projection,
    live: live.id,
    held: held.id,
    summary: `${projection} ${live.id} (live) → ${held.id} (held): ${changed} row(s) differ (${tables.map((t) => `${t.table} ${t.changed} of ${t.rows_held}`).join(', ')})`,
    tables,
  }
}
