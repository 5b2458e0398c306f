import type { Db } from '../../src/db/port.ts'
import type { EventStore } from '../../src/eventstore/port.ts'
import type { BuildLocks } from './build-lock.ts'
import { generationId, isFollowed } from './generation-states.ts'
import { listGenerations } from './generations.ts'
import type { Projection } from './projection.ts'

export type GenerationStatus = {
  projection: string
  generation: string
  /** live | catching up (live, events pending) | building | held | previous | retired */
  state: string
  /** The version the running code projects; a generation of another version is not kept current. */
  code_version: number
  position: number
  head: number
  /** Log positions between its checkpoint and the head, 0 when nothing of its categories is pending. */
  lag_events: number
  /** Age of the oldest event it has still to apply (0 when none). */
  lag_seconds: number
  /** Who builds it right now (building only). */
  builder: string | null
  note: string | null
  last_error: string | null
  created_at: string
  live_since: string | null
}

const ORDER = ['live', 'building', 'held', 'previous', 'retired']

/** Every generation of every projection, with its position, lag, state, builder and last error (`projections status`). */
export async function generationStatus(
  sources: { db: Db; store: EventStore; locks: BuildLocks },
  projections: readonly Projection[],
): Promise<GenerationStatus[]> {
  const { db, store, locks } = sources
  const head = await store.headPosition()
  const rows = await listGenerations(db, projections.map((p) => p.name))
  rows.sort((a, b) => a.projection.localeCompare(b.projection) || ORDER.indexOf(a.state) - ORDER.indexOf(b.state) || b.build - a.build)
  const now = Date.now()
  const out: GenerationStatus[] = []
  for (const projection of projections) {
    for (const row of rows.filter((r) => r.projection === projection.name)) {
      const [pending] = await store.readAll(row.position, { limit: 1, categories: projection.categories })
      const followed = isFollowed(projection.version, row)
      const holder = row.state === 'building' ? await locks.holder(projection.name) : null
      const lagging = pending !== undefined
      let note: string | null = null
      if (row.version !== projection.version && (row.state === 'live' || row.state === 'previous')) {
        note = `frozen: this code projects ${projection.name} v${projection.version}, so it no longer follows new events`
      } else if (row.state === 'building' && !holder) {
        note = 'interrupted: resumes in the next server start or `projections rebuild`'
      } else if (row.state === 'building' && row.hold) {
        note = 'will be held for `projections promote`'
      }
      out.push({
        projection: projection.name,
        generation: generationId(row),
        state: row.state === 'live' && lagging && followed ? 'catching up' : row.state,
        code_version: projection.version,
        position: row.position,
        head,
        lag_events: lagging ? head - row.position : 0,
        lag_seconds: pending ? Math.max(0, Math.round((now - Date.parse(pending.recordedAt)) / 100) / 10) : 0,
        builder: holder ? `process ${holder.pid} on ${holder.host} since ${holder.startedAt}` : null,
        note,
        last_error: row.lastError,
        created_at: row.createdAt,
        live_since: row.liveSince,
      })
    }
  }
  return out
}
