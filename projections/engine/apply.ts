import type { Db } from '../../src/db/port.ts'
import type { EventStore, RecordedEvent } from '../../src/eventstore/port.ts'
import type { BuildLock } from './build-lock.ts'
import type { GenerationRef } from './generation-states.ts'
import { advanceCheckpoint, clearError, generationTables, lockCheckpoint, recordError } from './generations.ts'
import type { Projection } from './projection.ts'

/** Events per transaction when following the store. */
export const BATCH = 1000
/**
 * Events per transaction when building a generation from position 0: fewer, larger transactions on
 * PostgreSQL; on PGlite, which runs one statement at a time for the whole process, no larger than
 * when following, so that API requests served meanwhile never wait long behind a batch.
 */
export const BUILD_BATCH = { postgres: 10_000, pglite: 1000 } as const
/** This process analyzes a generation's tables once it applied this many events to it, then each time that count doubles. */
const ANALYZE_FIRST = 5000

export type Progress = (projection: string, position: number, head: number) => void
/**
 * Called after a batch of a live generation is settled, with every event of it the live generation
 * now holds: applied here or, before this process got to them, by another process. What every
 * process's in-memory answers follow.
 */
export type LiveAdvancedListener = (projection: string, events: readonly RecordedEvent[]) => void

/** A generation at its checkpoint: where a catch-up starts. */
export type AtCheckpoint = GenerationRef & { position: number }

/** A build in progress: it holds the projection's build lock and gives up when its process stops. */
export type Building = { lock: BuildLock; stopped(): boolean }

export class BuildStopped extends Error {
  constructor(projection: string) {
    super(`the build of ${projection} stopped with its process; it resumes from its checkpoint`)
  }
}

/**
 * Applies events to a generation's tables: a batch's row changes and its checkpoint commit in one
 * transaction (exactly once, crash-safe). Several processes may apply to the same generation: its
 * registry row is locked per batch and events at or below its checkpoint are skipped.
 */
export class ApplyEngine {
  private readonly advanced = new Set<LiveAdvancedListener>()
  /** Per generation (by its table names): events this process applied, and when it analyzes next. */
  private readonly analyzed = new Map<string, { applied: number; at: number }>()

  constructor(
    private readonly db: Db,
    private readonly store: EventStore,
  ) {}

  onLiveAdvanced(listener: LiveAdvancedListener): () => void {
    this.advanced.add(listener)
    return () => this.advanced.delete(listener)
  }

  /** Applies what is pending to one generation, in batches; returns its position at the end and how many events it applied. */
  async catchUp(
    projection: Projection,
    generation: AtCheckpoint,
    options: { batch: number; progress?: Progress; build?: Building; head?: number },
  ): Promise<{ position: number; applied: number }> {
    let position = generation.position
    let applied = 0
    const head = options.head ?? (await this.store.headPosition())
    // The next page is read while the current one is applied.
    let next = this.store.readAll(position, { limit: options.batch, categories: projection.categories })
    for (;;) {
      const events = await next
      if (events.length === 0) return { position, applied }
      position = events[events.length - 1]!.position
      next = this.store.readAll(position, { limit: options.batch, categories: projection.categories })
      next.catch(() => {})
      if (options.build?.stopped()) throw new BuildStopped(projection.name)
      if (options.build && !options.build.lock.held()) throw new Error(`lost the build lock of ${projection.name} (another process took it over)`)
      applied += await this.applyBatch(projection, generation, events, options.build !== undefined)
      options.progress?.(projection.name, position, Math.max(head, position))
      // A build on PGlite runs in the server's thread: between batches, what waits gets its turn (the
      // operator's progress lines on the socket, requests to the API), not only when the build ends.
      if (options.build || options.progress) await new Promise((resolve) => setTimeout(resolve, 0))
    }
  }

  /** Applies the events past the generation's checkpoint in one transaction; returns how many. */
  async applyBatch(projection: Projection, generation: GenerationRef, events: readonly RecordedEvent[], building = false): Promise<number> {
    const tables = generationTables(projection, generation)
    const outcome = await this.db.transaction(async (tx) => {
      // Nobody reads a generation being built, and its rows and checkpoint commit or vanish together:
      // on PostgreSQL a build need not wait for each commit to reach the disk (a database crash loses
      // at most its last batches, which are then applied again). Not on PGlite, where the database
      // dies with the building process: every kill would lose the work of its last moments.
      if (building && this.db.kind === 'postgres') await tx.query('set local synchronous_commit = off')
      // A batch's statements carry their rows as one parameter (a JSON text of up to megabytes). Planned
      // for their values (the connection's force_custom_plan, src/db/postgres.ts; PGlite's too, decision
      // 0120), each execution folds that text into a constant while planning; they are keyed joins, so the
      // generic plan, made once per connection, is the same plan without that cost.
      await tx.query('set local plan_cache_mode = force_generic_plan')
      const checkpoint = await lockCheckpoint(tx, projection.name, generation)
      // Pruned or retired meanwhile: its tables are going away and nobody reads them.
      if (!checkpoint || checkpoint.state === 'retired') return { fresh: 0, live: false }
      const fresh = events.filter((e) => e.position > checkpoint.position)
      if (fresh.length === 0) return { fresh: 0, live: checkpoint.state === 'live' }
      // Decided in full before anything is sent, so that a throwing `apply` leaves no statement in flight.
      const changes = projection.applyBatch ? projection.applyBatch(fresh, tables) : fresh.flatMap((event) => projection.apply(event, tables))
      // Issued together, awaited together: one connection runs them in order, and PostgreSQL
      // receives them pipelined instead of one round trip each. The first failure rejects the batch.
      await Promise.all(changes.map((change) => tx.query(change.text, change.params)))
      await advanceCheckpoint(tx, projection.name, generation, fresh[fresh.length - 1]!.position)
      return { fresh: fresh.length, live: checkpoint.state === 'live' }
    })
    if (outcome.live) for (const listener of this.advanced) listener(projection.name, events)
    await this.analyzeAsTheyGrow(tables, outcome.fresh)
    return outcome.fresh
  }

  /**
   * Fresh tables have no statistics (PGlite never gathers any, autovacuum comes late on a busy
   * database): without them the planner guesses, and a join on a non-unique key turns into a scan of
   * the whole table per batch, whose cost grows with the table. Analyzing as the events applied here
   * double, whether building or following, keeps every batch an index lookup; it is a sample, so
   * its own cost does not grow with the table.
   */
  private async analyzeAsTheyGrow(tables: Readonly<Record<string, string>>, fresh: number): Promise<void> {
    if (fresh === 0) return
    const names = Object.values(tables)
    const key = names.join(' ')
    const count = this.analyzed.get(key) ?? { applied: 0, at: ANALYZE_FIRST }
    count.applied += fresh
    this.analyzed.set(key, count)
    if (count.applied < count.at) return
    count.at = count.applied * 2
    // The batch is committed: tables pruned meanwhile are no failure of it.
    for (const table of names) await this.db.query(`analyze ${table}`).catch(() => {})
  }

  /** Records why applying to `generation` failed; a failure to record it is not the error to report. */
  async recordFailure(projection: Projection, generation: GenerationRef, error: unknown): Promise<void> {
    const message = error instanceof Error ? error.message : String(error)
    await recordError(this.db, projection.name, generation, message).catch(() => {})
  }

  /** Clears the failure recorded for `generation` once its following works again; a failure to clear it is retried by the next one. */
  async clearFailure(projection: Projection, generation: GenerationRef): Promise<void> {
    await clearError(this.db, projection.name, generation).catch(() => {})
  }
}
