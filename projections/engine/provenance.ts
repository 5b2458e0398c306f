import type { Db, Sql } from '../../src/db/port.ts'
import { checkpointOf } from './generations.ts'
import type { LiveGeneration } from './live-tables.ts'

/**
 * What an answer was computed from: the read model generation (`v6.1`) and the log position it
 * reflected, exactly: every event at or below `position` and none above is in the data the answer
 * came from (an auditor rebuilding the read model from the events up to it gets the same answer).
 */
export type Provenance = { position: number; generation: string }

/**
 * `read` over one snapshot of `generation`'s tables, given the generation's checkpoint read in that
 * same snapshot: the rows it reads hold exactly the events up to that position. On PostgreSQL the
 * transaction is repeatable read and the checkpoint is its first statement (the snapshot is taken
 * there); on PGlite a transaction holds the only connection, so nothing commits in between.
 */
export function inSnapshot<T>(db: Db, generation: LiveGeneration, read: (tx: Sql, at: Provenance) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    if (db.kind === 'postgres') await tx.query('set transaction isolation level repeatable read, read only')
    const position = await checkpointOf(tx, generation.projection, generation)
    return read(tx, { position, generation: generation.id })
  })
}

/** The highest log position among `events` (0 without any). */
export const lastPosition = (events: readonly { position: number }[]): number => events.reduce((last, event) => Math.max(last, event.position), 0)
