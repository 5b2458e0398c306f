import type { Db } from '../../src/db/port.ts'
import { toNumber } from '../../src/db/port.ts'
import { type Follower, followLive, type LiveAdvancing } from './follow.ts'
import type { LiveGeneration, LiveTables } from './live-tables.ts'
import type { Projection, Tables } from './projection.ts'

/** A map of a read model's rows and the highest row position it holds: rows that moved past it changed. */
export type Rows<V> = { byId: Map<string, V>; seen: number }

/** What to read of a row table: the projection, its table's key, the columns, and a row's id and value. */
export type RowsRead<R, V, K extends string> = { projection: Projection<K>; table: K; columns: string; id(row: R): string; value(row: R): V }

/**
 * Follows one table of rows with a `position` (the position of the event that last changed the
 * row): loaded whole, then only the rows whose position moved past what the map holds. `table` names
 * the projection's table by its key; the live generation's copy of it is read.
 */
export function followRows<R extends { position: unknown }, V, K extends string = string>(
  db: Db,
  sources: { live: LiveTables; advancing: LiveAdvancing },
  read: RowsRead<R, V, K>,
  onError: (error: unknown) => void,
): Follower<Rows<V>> {
  const { projection } = read
  const rowsAfter = async (generation: LiveGeneration, rows: Rows<V>): Promise<Rows<V>> => {
    const table = (generation.tables as Tables<K>)[read.table]
    const changed = await db.query<R>(`select ${read.columns}, position from ${table} where position > $1 order by position`, [rows.seen])
    for (const row of changed) {
      rows.byId.set(read.id(row), read.value(row))
      rows.seen = Math.max(rows.seen, toNumber(row.position))
    }
    return rows
  }
  return followLive(
    sources,
    {
      projection,
      what: `the ${projection.name} read model`,
      load: (generation) => rowsAfter(generation, { byId: new Map(), seen: 0 }),
      advance: (rows, _events, generation) => rowsAfter(generation, rows),
    },
    onError,
  )
}
