import type { Db, Sql } from '../src/db/port.ts'
import { toNumber } from '../src/db/port.ts'
import type { EventStore, RecordedEvent, Subscription } from '../src/eventstore/port.ts'
import { AppError } from '../src/shared/errors.ts'
import type { Projection } from './projection.ts'

const CHECKPOINTS = `
create table if not exists mirador_checkpoints (
  projection text primary key,
  position bigint not null,
  updated_at timestamptz not null default clock_timestamp()
)`
/** Serialises DDL across processes: concurrent `create table if not exists` can collide in PostgreSQL. */
const DDL_LOCK = 727_002
const BATCH = 1000

export type ProjectionStatus = { projection: string; position: number; head: number; lag: number }
export type Progress = (projection: string, position: number, head: number) => void
/** Called after a batch commits, with the events the batch applied (for in-memory caches). */
export type AppliedListener = (projection: string, events: readonly RecordedEvent[]) => void

const checkpointName = (p: Projection) => `${p.name}_v${p.version}`

/**
 * Runs projections: catch up from each checkpoint, then follow the store live.
 * A batch's row changes and its checkpoint commit in one transaction (exactly once, crash-safe).
 * Several processes may run the same projection: the checkpoint row is locked per batch and
 * events at or below the stored checkpoint are skipped, so each event is applied once.
 */
export class ProjectionRunner {
  private readonly subscriptions: Subscription[] = []
  private readonly listeners = new Set<AppliedListener>()

  constructor(
    private readonly db: Db,
    private readonly store: EventStore,
    readonly projections: readonly Projection[],
  ) {}

  onApplied(listener: AppliedListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  async prepare(): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query('select pg_advisory_xact_lock($1)', [DDL_LOCK])
      await tx.query(CHECKPOINTS)
      for (const projection of this.projections) for (const ddl of projection.schema) await tx.query(ddl)
    })
  }

  /** Applies everything up to the current head; returns when caught up. */
  async catchUp(progress?: Progress): Promise<void> {
    await this.prepare()
    const head = await this.store.headPosition()
    for (const projection of this.projections) {
      let position = await this.checkpoint(projection)
      progress?.(projection.name, position, head)
      for (;;) {
        const events = await this.store.readAll(position, { limit: BATCH, categories: projection.categories })
        if (events.length === 0) break
        await this.applyBatch(projection, events)
        position = events[events.length - 1]!.position
        progress?.(projection.name, position, head)
      }
      progress?.(projection.name, head, head)
    }
  }

  /** Catches up, then applies new events as they are appended (by any process). */
  async start(onError: (error: unknown) => void): Promise<void> {
    await this.catchUp()
    for (const projection of this.projections) {
      const from = await this.checkpoint(projection)
      this.subscriptions.push(
        this.store.subscribe(from, (events) => this.applyBatch(projection, events), {
          limit: BATCH,
          categories: projection.categories,
          onError,
        }),
      )
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.subscriptions.splice(0).map((s) => s.stop()))
  }

  /** Drops the named projections' tables and checkpoints and replays them from position 0. */
  async rebuild(names: readonly string[], progress?: Progress): Promise<void> {
    const chosen = names.length === 0 ? this.projections : this.projections.filter((p) => names.includes(p.name))
    const unknown = names.filter((n) => !this.projections.some((p) => p.name === n))
    if (unknown.length > 0) {
      const known = this.projections.map((p) => p.name).join(', ')
      throw new AppError('invalid_request', `unknown projection(s): ${unknown.join(', ')}; known: ${known}`)
    }
    await this.prepare()
    await this.db.transaction(async (tx) => {
      await tx.query('select pg_advisory_xact_lock($1)', [DDL_LOCK])
      for (const projection of chosen) {
        for (const table of projection.tables) await tx.query(`drop table if exists ${table} cascade`)
        await tx.query('delete from mirador_checkpoints where projection = $1', [checkpointName(projection)])
      }
    })
    await new ProjectionRunner(this.db, this.store, chosen).catchUp(progress)
  }

  async status(): Promise<ProjectionStatus[]> {
    await this.prepare()
    const head = await this.store.headPosition()
    const out: ProjectionStatus[] = []
    for (const projection of this.projections) {
      const position = await this.checkpoint(projection)
      // A projection that reads only some categories may sit below head with nothing left to do.
      const pending = await this.store.readAll(position, { limit: 1, categories: projection.categories })
      out.push({ projection: checkpointName(projection), position, head, lag: pending.length === 0 ? 0 : head - position })
    }
    return out
  }

  private async checkpoint(projection: Projection, sql: Sql = this.db): Promise<number> {
    const [row] = await sql.query<{ position: unknown }>(
      'select position from mirador_checkpoints where projection = $1',
      [checkpointName(projection)],
    )
    return row ? toNumber(row.position) : 0
  }

  private async applyBatch(projection: Projection, events: readonly RecordedEvent[]): Promise<void> {
    const name = checkpointName(projection)
    const applied = await this.db.transaction(async (tx) => {
      await tx.query('insert into mirador_checkpoints (projection, position) values ($1, 0) on conflict do nothing', [name])
      const [row] = await tx.query<{ position: unknown }>(
        'select position from mirador_checkpoints where projection = $1 for update',
        [name],
      )
      const done = toNumber(row!.position)
      const fresh = events.filter((e) => e.position > done)
      if (fresh.length === 0) return fresh
      // Decided in full before anything is sent, so that a throwing `apply` leaves no statement in flight.
      const changes = projection.applyBatch ? projection.applyBatch(fresh) : fresh.flatMap((event) => projection.apply(event))
      // Issued together, awaited together: one connection runs them in order, and PostgreSQL
      // receives them pipelined instead of one round trip each. The first failure rejects the batch.
      await Promise.all(changes.map((change) => tx.query(change.text, change.params)))
      await tx.query('update mirador_checkpoints set position = $2, updated_at = clock_timestamp() where projection = $1', [
        name,
        fresh[fresh.length - 1]!.position,
      ])
      return fresh
    })
    if (applied.length > 0) for (const listener of this.listeners) listener(projection.name, applied)
  }
}
