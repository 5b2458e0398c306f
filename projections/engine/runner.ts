import { hostname } from 'node:os'
import type { Db } from '../../src/db/port.ts'
import type { EventStore, RecordedEvent, Subscription } from '../../src/eventstore/port.ts'
import { AppError } from '../../src/shared/errors.ts'
import { type BuildLock, BuildLocks, type ProcessIdentity } from './build-lock.ts'
import {
  adoptLegacyCheckpoints,
  announce,
  GENERATIONS_CHANNEL,
  type GenerationRow,
  generationId,
  generationTables,
  listGenerations,
  lockGenerations,
  REGISTRY_DDL,
  registerGeneration,
} from './generations.ts'
import { liveTables } from './live-tables.ts'
import type { Projection } from './projection.ts'

/** Serialises DDL across processes: concurrent `create table if not exists` can collide in PostgreSQL. */
const DDL_LOCK = 727_002
/** Events per transaction when following the store. */
const BATCH = 1000
/**
 * Events per transaction when building a generation from position 0: fewer, larger transactions on
 * PostgreSQL; on PGlite, which runs one statement at a time for the whole process, no larger than
 * when following, so that API requests served meanwhile never wait long behind a batch.
 */
const BUILD_BATCH = { postgres: 10_000, pglite: 1000 } as const
/** How often the registry is re-read for changes made elsewhere (LISTEN/NOTIFY tells at once; this is the backstop). */
const WATCH_MS = 1000
/**
 * A generation that stopped being live is dropped by `prune` only this long after: every API
 * process has switched its readers by then (they poll the registry every second at worst).
 */
const SWITCH_GRACE_MS = 2000
/** A catch-up analyzes the tables it fills after this many events, then each time that count doubles. */
const ANALYZE_FIRST = 5000
/** A build that failed is not resumed automatically before this pause (a poison event would loop). */
const RETRY_FAILED_BUILD_MS = 30_000

export type Progress = (projection: string, position: number, head: number) => void
/** Called after a batch commits to a live generation, with the events it applied (for in-memory caches). */
export type AppliedListener = (projection: string, events: readonly RecordedEvent[]) => void
/**
 * Called after a batch of a live generation is settled, with every event of it the live generation
 * now holds: applied here or, before this process got to them, by another process. What every
 * process's in-memory answers follow (AppliedListener fires in the applying process only).
 */
export type LiveAdvancedListener = (projection: string, events: readonly RecordedEvent[]) => void

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

export type BuildResult = {
  projection: string
  generation: string
  /** Events applied by this run (a resumed build counts only what it applied). */
  events: number
  /** The position it started from (0, or where an interrupted build had stopped). */
  resumed_from: number
  position: number
  seconds: number
  events_per_second: number
  outcome: 'promoted' | 'held'
}

export type SwitchResult = { projection: string; from: string | null; to: string; note: string | null }
export type PruneResult = { projection: string; dropped: string[]; tables: string[]; kept: string[] }

class BuildStopped extends Error {
  constructor(projection: string) {
    super(`the build of ${projection} stopped with its process; it resumes from its checkpoint`)
  }
}

const keyOf = (g: { projection: string; version: number; build: number }) => `${g.projection}/${generationId(g)}`

/** This process, for build locks: pid and host, and whether a pid on this host is still running. */
export const thisProcess = (): ProcessIdentity => ({
  pid: process.pid,
  host: hostname(),
  alive(pid) {
    try {
      process.kill(pid, 0)
      return true
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM'
    }
  },
})

/**
 * Runs projections over generations (see generations.ts).
 *
 * - Following: every generation of the code's version that is live, held or previous is kept
 *   current, catching up from its checkpoint and then applying new events as they are appended.
 *   A batch's rows and its checkpoint commit in one transaction (exactly once, crash-safe); several
 *   processes may follow the same generation (its registry row is locked per batch and events at or
 *   below its checkpoint are skipped). A generation of another version is frozen: this code cannot
 *   apply its version's logic.
 * - Building: a new generation fills its own tables from position 0 in large batches, with its
 *   secondary indexes created after the bulk, holding the projection's build lock. When caught up
 *   it is promoted, or held for `promote` with --hold. A build interrupted by a crash resumes from
 *   its checkpoint in the next process that builds (a serving process does so by itself).
 * - A serving runner (`start`) watches the registry (NOTIFY + polling) and follows what other
 *   processes promote, roll back or prune; when the code's version of a projection differs from the
 *   live one it builds the new version in the background while the old one is served.
 */
export class ProjectionRunner {
  private readonly subscriptions = new Map<string, Subscription>()
  private readonly listeners = new Set<AppliedListener>()
  private readonly advancedListeners = new Set<LiveAdvancedListener>()
  private readonly locks: BuildLocks
  private readonly builds = new Map<string, Promise<unknown>>()
  private serving = false
  /** Set by stop(): builds running in the background give up at their next batch (they resume later). */
  private stopped = false
  private onError: (error: unknown) => void = () => {}
  private watchTimer: ReturnType<typeof setInterval> | undefined
  private unlisten: (() => Promise<void>) | undefined
  private reconciling: Promise<void> | null = null
  private reconcileAgain = false

  constructor(
    private readonly db: Db,
    private readonly store: EventStore,
    readonly projections: readonly Projection[],
    identity: ProcessIdentity = thisProcess(),
  ) {
    this.locks = new BuildLocks(db, identity)
  }

  onApplied(listener: AppliedListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  onLiveAdvanced(listener: LiveAdvancedListener): () => void {
    this.advancedListeners.add(listener)
    return () => this.advancedListeners.delete(listener)
  }

  /** Finds a projection by its name (the one name status prints and every command takes). */
  projection(name: string): Projection {
    const found = this.projections.find((p) => p.name === name)
    if (!found) {
      throw new AppError('invalid_request', `unknown projection "${name}"; known: ${this.projections.map((p) => p.name).join(', ')}`)
    }
    return found
  }

  /**
   * Creates the registry and, per projection, a live generation when there is none (a fresh store:
   * built in place from position 0), or registers the build of the code's version when the live
   * generation is of another version and none of the code's version exists yet. When nothing is to
   * be done (every start after the first) it only reads the registry: no DDL, no lock, so that it
   * never waits on, or holds up, a batch being applied.
   */
  async prepare(): Promise<void> {
    if (!(await this.needsPreparing(this.db))) return
    await this.db.transaction(async (tx) => {
      await tx.query('select pg_advisory_xact_lock($1)', [DDL_LOCK])
      const [registry] = await tx.query<{ present: boolean }>(`select to_regclass('mirador_generations') is not null as present`)
      if (!registry?.present) for (const ddl of REGISTRY_DDL) await tx.query(ddl)
      await adoptLegacyCheckpoints(tx, this.projections)
      const rows = await listGenerations(tx, this.projections.map((p) => p.name))
      for (const projection of this.projections) {
        const own = rows.filter((r) => r.projection === projection.name)
        const live = own.find((r) => r.state === 'live')
        if (!live) {
          const fresh = await registerGeneration(tx, projection, 'live')
          const tables = generationTables(projection, fresh)
          for (const ddl of [...projection.schema(tables), ...projection.indexes(tables)]) await tx.query(ddl)
          await announce(tx, projection.name)
        } else if (live.version !== projection.version && !own.some((r) => r.version === projection.version)) {
          await registerGeneration(tx, projection, 'building')
          await announce(tx, projection.name)
        }
      }
    })
  }

  /** Whether `prepare` has anything to do: no registry, a pre-generations checkpoint table, no live generation, or a new version. */
  private async needsPreparing(sql: Db): Promise<boolean> {
    const [tables] = await sql.query<{ registry: boolean; legacy: boolean }>(
      `select to_regclass('mirador_generations') is not null as registry, to_regclass('mirador_checkpoints') is not null as legacy`,
    )
    if (!tables?.registry) return true
    if (tables.legacy) {
      const legacy = await sql.query<{ projection: string }>('select projection from mirador_checkpoints')
      if (legacy.some((r) => this.projections.some((p) => r.projection.startsWith(`${p.name}_v`)))) return true
    }
    const rows = await listGenerations(sql, this.projections.map((p) => p.name))
    return this.projections.some((projection) => {
      const own = rows.filter((r) => r.projection === projection.name)
      const live = own.find((r) => r.state === 'live')
      return !live || (live.version !== projection.version && !own.some((r) => r.version === projection.version))
    })
  }

  /** Applies everything up to the current head to every generation this code keeps current; returns when done. */
  async catchUp(progress?: Progress): Promise<void> {
    await this.prepare()
    const rows = await listGenerations(this.db, this.projections.map((p) => p.name))
    const head = await this.store.headPosition()
    for (const projection of this.projections) {
      for (const generation of this.followed(projection, rows)) {
        progress?.(projection.name, generation.position, head)
        await this.catchUpGeneration(projection, generation, { batch: BATCH, progress })
        progress?.(projection.name, head, head)
      }
    }
  }

  /**
   * Catches up, then follows the store and the registry. Projections that must be served current
   * (owners, keys) are built first when their live generation is of another version; any other
   * projection whose version changed is built in the background while its old generation is served.
   */
  async start(onError: (error: unknown) => void): Promise<void> {
    this.onError = onError
    await this.catchUp()
    for (const projection of this.projections.filter((p) => p.servedCurrentOnly)) await this.buildBeforeServing(projection)
    this.serving = true
    this.unlisten = await this.db.listen(GENERATIONS_CHANNEL, () => this.reconcileSoon())
    this.watchTimer = setInterval(() => this.reconcileSoon(), WATCH_MS)
    this.watchTimer.unref?.()
    await this.reconcile()
  }

  async stop(): Promise<void> {
    this.serving = false
    this.stopped = true
    clearInterval(this.watchTimer)
    await this.unlisten?.().catch(() => {})
    this.unlisten = undefined
    await this.reconciling?.catch(() => {})
    await Promise.all([...this.subscriptions.values()].map((s) => s.stop()))
    this.subscriptions.clear()
    await Promise.all([...this.builds.values()].map((b) => b.catch(() => {})))
  }

  /**
   * Builds a new generation of each named projection (all when none) from position 0 beside the
   * live one, then promotes it, or holds it for `promote` with `hold`. An interrupted build of the
   * code's version is resumed instead of starting over.
   */
  async rebuild(names: readonly string[], options: { hold?: boolean; progress?: Progress } = {}): Promise<BuildResult[]> {
    const chosen = names.length === 0 ? this.projections : names.map((name) => this.projection(name))
    await this.prepare()
    const results: BuildResult[] = []
    for (const projection of chosen) {
      const result = await this.build(projection, { hold: options.hold ?? false, progress: options.progress })
      if (result) results.push(result)
    }
    return results
  }

  /** Makes the held generation of `name` live, after catching it up. */
  async promote(name: string): Promise<SwitchResult> {
    const projection = this.projection(name)
    await this.prepare()
    const rows = await listGenerations(this.db, [name])
    const held = rows.filter((r) => r.state === 'held').at(-1)
    if (!held) {
      const building = rows.find((r) => r.state === 'building')
      throw new AppError(
        'conflict',
        building
          ? `${name} ${generationId(building)} is still building (position ${building.position}); a build goes live by itself when it has caught up, unless it was started with --hold`
          : `${name} has no held generation; \`projections rebuild ${name} --hold\` builds one`,
      )
    }
    return this.switchTo(projection, held)
  }

  /** Makes the previous generation of `name` live again, at once. */
  async rollback(name: string): Promise<SwitchResult> {
    const projection = this.projection(name)
    await this.prepare()
    const previous = (await listGenerations(this.db, [name])).find((r) => r.state === 'previous')
    if (!previous) throw new AppError('conflict', `${name} has no previous generation to roll back to (pruned, or never promoted)`)
    return this.switchTo(projection, previous)
  }

  /** Drops every generation of `name` except the live one and a build in progress. */
  async prune(name: string): Promise<PruneResult> {
    const projection = this.projection(name)
    await this.prepare()
    let lock: BuildLock | null = null
    try {
      lock = await this.locks.acquire(name)
    } catch (error) {
      if (!(error instanceof AppError && error.code === 'conflict')) throw error
    }
    try {
      const victims = await this.db.transaction(async (tx) => {
        const rows = await lockGenerations(tx, name)
        const chosen = rows.filter((r) => r.state !== 'live' && (r.state !== 'building' || lock !== null))
        for (const r of chosen) {
          await tx.query(`update mirador_generations set state = 'retired' where projection = $1 and version = $2 and build = $3`, [
            name,
            r.version,
            r.build,
          ])
        }
        if (chosen.length > 0) await announce(tx, name)
        return chosen
      })
      await this.reconcile()
      const lastLive = Math.max(0, ...victims.map((v) => (v.liveUntil ? Date.parse(v.liveUntil) : 0)))
      const wait = lastLive + SWITCH_GRACE_MS - Date.now()
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
      const tables: string[] = []
      await this.db.transaction(async (tx) => {
        await tx.query('select pg_advisory_xact_lock($1)', [DDL_LOCK])
        for (const victim of victims) {
          for (const table of Object.values(generationTables(projection, victim))) {
            await tx.query(`drop table if exists ${table} cascade`)
            tables.push(table)
          }
          await tx.query('delete from mirador_generations where projection = $1 and version = $2 and build = $3', [
            name,
            victim.version,
            victim.build,
          ])
        }
      })
      const kept = (await listGenerations(this.db, [name])).map(generationId)
      return { projection: name, dropped: victims.map(generationId), tables, kept }
    } finally {
      await lock?.release()
    }
  }

  /** Every generation of every projection, with its position, lag, state and last error. */
  async status(): Promise<GenerationStatus[]> {
    const head = await this.store.headPosition()
    const rows = await listGenerations(this.db, this.projections.map((p) => p.name))
    const order = ['live', 'building', 'held', 'previous', 'retired']
    rows.sort((a, b) => a.projection.localeCompare(b.projection) || order.indexOf(a.state) - order.indexOf(b.state) || b.build - a.build)
    const now = Date.now()
    const out: GenerationStatus[] = []
    for (const projection of this.projections) {
      for (const row of rows.filter((r) => r.projection === projection.name)) {
        const [pending] = await this.store.readAll(row.position, { limit: 1, categories: projection.categories })
        const followed = this.isFollowed(projection, row)
        const holder = row.state === 'building' ? await this.locks.holder(projection.name) : null
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

  // ---- internals --------------------------------------------------------------------------------

  private isFollowed(projection: Projection, row: GenerationRow): boolean {
    return row.version === projection.version && (row.state === 'live' || row.state === 'held' || row.state === 'previous')
  }

  /** The generations of `projection` this code keeps current, live first. */
  private followed(projection: Projection, rows: readonly GenerationRow[]): GenerationRow[] {
    return rows
      .filter((r) => r.projection === projection.name && this.isFollowed(projection, r))
      .sort((a, b) => Number(b.state === 'live') - Number(a.state === 'live'))
  }

  /** Applies what is pending to one generation, in batches; returns its position at the end and how many events it applied. */
  private async catchUpGeneration(
    projection: Projection,
    generation: GenerationRow,
    options: { batch: number; progress?: Progress; lock?: BuildLock; head?: number },
  ): Promise<{ position: number; applied: number }> {
    let position = generation.position
    let applied = 0
    let analyzeAt = ANALYZE_FIRST
    const head = options.head ?? (await this.store.headPosition())
    // The next page is read while the current one is applied.
    let next = this.store.readAll(position, { limit: options.batch, categories: projection.categories })
    for (;;) {
      const events = await next
      if (events.length === 0) return { position, applied }
      position = events[events.length - 1]!.position
      next = this.store.readAll(position, { limit: options.batch, categories: projection.categories })
      next.catch(() => {})
      if (options.lock && this.stopped) throw new BuildStopped(projection.name)
      if (options.lock && !options.lock.held()) throw new Error(`lost the build lock of ${projection.name} (another process took it over)`)
      applied += await this.applyBatch(projection, generation, events, options.lock !== undefined)
      if (applied >= analyzeAt) {
        // Fresh tables have no statistics (PGlite never gathers any, autovacuum comes late): without them
        // the planner guesses, and a join on a non-unique key turns into a scan of the whole table per
        // batch. Analyzing as the tables double in size keeps every batch an index lookup.
        for (const table of Object.values(generationTables(projection, generation))) await this.db.query(`analyze ${table}`)
        analyzeAt *= 2
      }
      options.progress?.(projection.name, position, Math.max(head, position))
    }
  }

  /** Applies the events past the generation's checkpoint in one transaction; returns how many. */
  private async applyBatch(
    projection: Projection,
    generation: GenerationRow,
    events: readonly RecordedEvent[],
    building = false,
  ): Promise<number> {
    const tables = generationTables(projection, generation)
    const outcome = await this.db.transaction(async (tx) => {
      // Nobody reads a generation being built, and its rows and checkpoint commit or vanish together:
      // on PostgreSQL a build need not wait for each commit to reach the disk (a database crash loses
      // at most its last batches, which are then applied again). Not on PGlite, where the database
      // dies with the building process: every kill would lose the work of its last moments.
      if (building && this.db.kind === 'postgres') await tx.query('set local synchronous_commit = off')
      const [row] = await tx.query<{ position: unknown; state: string }>(
        'select position, state from mirador_generations where projection = $1 and version = $2 and build = $3 for update',
        [generation.projection, generation.version, generation.build],
      )
      // Pruned or retired meanwhile: its tables are going away and nobody reads them.
      if (!row || row.state === 'retired') return { fresh: [] as RecordedEvent[], live: false }
      const done = Number(row.position)
      const fresh = events.filter((e) => e.position > done)
      if (fresh.length === 0) return { fresh, live: row.state === 'live' }
      // Decided in full before anything is sent, so that a throwing `apply` leaves no statement in flight.
      const changes = projection.applyBatch
        ? projection.applyBatch(fresh, tables)
        : fresh.flatMap((event) => projection.apply(event, tables))
      // Issued together, awaited together: one connection runs them in order, and PostgreSQL
      // receives them pipelined instead of one round trip each. The first failure rejects the batch.
      await Promise.all(changes.map((change) => tx.query(change.text, change.params)))
      await tx.query(
        `update mirador_generations set position = $4, updated_at = clock_timestamp(), last_error = null, last_error_at = null
          where projection = $1 and version = $2 and build = $3`,
        [generation.projection, generation.version, generation.build, fresh[fresh.length - 1]!.position],
      )
      return { fresh, live: row.state === 'live' }
    })
    if (outcome.live) {
      if (outcome.fresh.length > 0) for (const listener of this.listeners) listener(projection.name, outcome.fresh)
      for (const listener of this.advancedListeners) listener(projection.name, events)
    }
    return outcome.fresh.length
  }

  private async recordError(generation: GenerationRow, error: unknown): Promise<void> {
    const message = error instanceof Error ? error.message : String(error)
    await this.db
      .query(
        `update mirador_generations set last_error = $4, last_error_at = clock_timestamp()
          where projection = $1 and version = $2 and build = $3`,
        [generation.projection, generation.version, generation.build, message.slice(0, 2000)],
      )
      .catch(() => {})
  }

  private async build(
    projection: Projection,
    options: { hold?: boolean; progress?: Progress; resumeOnly?: boolean },
  ): Promise<BuildResult | null> {
    const lock = await this.locks.acquire(projection.name)
    let generation: GenerationRow | null = null
    try {
      generation = await this.db.transaction(async (tx) => {
        const rows = await lockGenerations(tx, projection.name)
        const interrupted = rows.find((r) => r.version === projection.version && r.state === 'building')
        if (interrupted) {
          if (options.hold !== undefined && interrupted.hold !== options.hold) {
            await tx.query('update mirador_generations set hold = $4 where projection = $1 and version = $2 and build = $3', [
              projection.name,
              interrupted.version,
              interrupted.build,
              options.hold,
            ])
          }
          return { ...interrupted, hold: options.hold ?? interrupted.hold }
        }
        if (options.resumeOnly) return null
        // A newer build supersedes a held one that was never promoted.
        await tx.query(`update mirador_generations set state = 'retired' where projection = $1 and state = 'held'`, [projection.name])
        const created = await registerGeneration(tx, projection, 'building', options.hold ?? false)
        await announce(tx, projection.name)
        return created
      })
      if (!generation) return null
      await lock.describe(generationId(generation))
      const started = performance.now()
      const resumedFrom = await this.prepareBuildTables(projection, generation)
      const building = { ...generation, position: resumedFrom }
      const head = await this.store.headPosition()
      options.progress?.(projection.name, resumedFrom, head)
      const bulk = await this.catchUpGeneration(projection, building, { batch: BUILD_BATCH[this.db.kind], progress: options.progress, lock, head })
      await this.db.transaction(async (tx) => {
        await tx.query('select pg_advisory_xact_lock($1)', [DDL_LOCK])
        // Each index is one sort of the whole table: in memory rather than in temporary files.
        if (this.db.kind === 'postgres') await tx.query(`set local maintenance_work_mem = '256MB'`)
        for (const ddl of projection.indexes(generationTables(projection, building))) await tx.query(ddl)
      })
      const [current] = await listGenerations(this.db, [projection.name]).then((rows) =>
        rows.filter((r) => r.version === building.version && r.build === building.build),
      )
      if (!current || current.state !== 'building') throw new Error(`${projection.name} ${generationId(building)} was pruned while it was being built`)
      const rest = await this.catchUpGeneration(projection, current, { batch: BATCH, lock })
      const position = rest.position
      const seconds = (performance.now() - started) / 1000
      const done = { ...current, position }
      if (current.hold) {
        await this.db.transaction(async (tx) => {
          await tx.query(
            `update mirador_generations set state = 'held', built_at = clock_timestamp()
              where projection = $1 and version = $2 and build = $3 and state = 'building'`,
            [projection.name, done.version, done.build],
          )
          await announce(tx, projection.name)
        })
        if (this.serving) await this.reconcile()
      } else {
        await this.switchTo(projection, done)
      }
      const events = bulk.applied + rest.applied
      return {
        projection: projection.name,
        generation: generationId(done),
        events,
        resumed_from: resumedFrom,
        position,
        seconds: Math.round(seconds * 1000) / 1000,
        events_per_second: seconds > 0 ? Math.round(events / seconds) : 0,
        outcome: current.hold ? 'held' : 'promoted',
      }
    } catch (error) {
      if (generation && !(error instanceof BuildStopped)) await this.recordError(generation, error)
      throw error
    } finally {
      await lock.release()
    }
  }

  /**
   * A build starting from position 0 gets empty tables (whatever an earlier attempt left is
   * dropped); a resumed one keeps its rows, which match its checkpoint exactly. Returns the position
   * the build starts from.
   */
  private async prepareBuildTables(projection: Projection, generation: GenerationRow): Promise<number> {
    const tables = generationTables(projection, generation)
    return this.db.transaction(async (tx) => {
      await tx.query('select pg_advisory_xact_lock($1)', [DDL_LOCK])
      const names = Object.values(tables)
      const [present] = await tx.query<{ n: unknown }>(
        `select count(*) as n from jsonb_array_elements_text($1::text::jsonb) as t(name) where to_regclass(t.name) is not null`,
        [JSON.stringify(names)],
      )
      if (generation.position > 0 && Number(present?.n) === names.length) return generation.position
      for (const table of names) await tx.query(`drop table if exists ${table} cascade`)
      for (const ddl of projection.schema(tables)) await tx.query(ddl)
      await tx.query(
        `update mirador_generations set position = 0, updated_at = clock_timestamp() where projection = $1 and version = $2 and build = $3`,
        [generation.projection, generation.version, generation.build],
      )
      return 0
    })
  }

  /**
   * Makes `target` live: caught up to the head first (a generation this code follows), then, in
   * one transaction holding every generation row of the projection, the live one becomes previous
   * (the previous one retired) and the target live, provided it is not behind the generation it
   * replaces. Readers in this process switch before this returns; other processes are told by NOTIFY.
   */
  private async switchTo(projection: Projection, target: GenerationRow): Promise<SwitchResult> {
    const followable = target.version === projection.version
    for (let attempt = 0; attempt < 100; attempt++) {
      let position = target.position
      if (followable) {
        const [fresh] = (await listGenerations(this.db, [projection.name])).filter(
          (r) => r.version === target.version && r.build === target.build,
        )
        if (!fresh) throw new AppError('conflict', `${projection.name} ${generationId(target)} no longer exists`)
        position = (await this.catchUpGeneration(projection, fresh, { batch: BATCH })).position
        const [pending] = await this.store.readAll(position, { limit: 1, categories: projection.categories })
        if (pending) continue
      }
      const outcome = await this.db.transaction(async (tx) => {
        const rows = await lockGenerations(tx, projection.name)
        const current = rows.find((r) => r.version === target.version && r.build === target.build)
        if (!current || current.state === 'retired' || current.state === 'live') {
          throw new AppError('conflict', `${projection.name} ${generationId(target)} is ${current ? current.state : 'gone'}: nothing to switch to`)
        }
        if (followable && current.position !== position) return 'moved' as const
        const live = rows.find((r) => r.state === 'live')
        if (followable && live && live.version === projection.version && live.position > current.position) return 'behind' as const
        const where = 'where projection = $1 and version = $2 and build = $3'
        await tx.query(`update mirador_generations set state = 'retired' where projection = $1 and state = 'previous'`, [projection.name])
        if (live) {
          await tx.query(`update mirador_generations set state = 'previous', live_until = clock_timestamp() ${where}`, [
            projection.name,
            live.version,
            live.build,
          ])
        }
        await tx.query(
          `update mirador_generations set state = 'live', hold = false, live_since = clock_timestamp(), live_until = null,
                  built_at = coalesce(built_at, clock_timestamp()) ${where}`,
          [projection.name, current.version, current.build],
        )
        await announce(tx, projection.name)
        return { from: live ? generationId(live) : null }
      })
      if (outcome === 'moved' || outcome === 'behind') continue
      await liveTables(this.db).refresh()
      if (this.serving) await this.reconcile()
      return {
        projection: projection.name,
        from: outcome.from,
        to: generationId(target),
        note: followable
          ? null
          : `${generationId(target)} is of version ${target.version} and this code projects version ${projection.version}: it is served as it was and does not follow new events until the code is version ${target.version} again or a version ${projection.version} generation is promoted`,
      }
    }
    throw new AppError('service_unavailable', `${projection.name} ${generationId(target)} could not catch up with the events being appended; retry`)
  }

  /** Owners and keys are small: when their version changed, they are built before the API serves. */
  private async buildBeforeServing(projection: Projection): Promise<void> {
    for (;;) {
      const live = (await listGenerations(this.db, [projection.name])).find((r) => r.state === 'live')
      if (live?.version === projection.version) return
      try {
        await this.build(projection, {})
      } catch (error) {
        if (!(error instanceof AppError && error.code === 'conflict')) throw error
        await new Promise((resolve) => setTimeout(resolve, 200))
      }
    }
  }

  private reconcileSoon(): void {
    if (this.reconciling) {
      this.reconcileAgain = true
      return
    }
    this.reconciling = (async () => {
      try {
        do {
          this.reconcileAgain = false
          await this.reconcileOnce()
        } while (this.reconcileAgain && this.serving)
      } catch (error) {
        this.onError(error)
      } finally {
        this.reconciling = null
      }
    })()
  }

  /** Follows exactly the generations to follow, and (serving) resumes builds nobody is running. */
  private async reconcile(): Promise<void> {
    while (this.reconciling) await this.reconciling
    this.reconcileSoon()
    await this.reconciling
  }

  private async reconcileOnce(): Promise<void> {
    const rows = await listGenerations(this.db, this.projections.map((p) => p.name))
    const wanted = new Map<string, [Projection, GenerationRow]>()
    for (const projection of this.projections) for (const g of this.followed(projection, rows)) wanted.set(keyOf(g), [projection, g])
    for (const [key, subscription] of this.subscriptions) {
      if (wanted.has(key)) continue
      this.subscriptions.delete(key)
      await subscription.stop()
    }
    if (!this.serving) return
    for (const [key, [projection, generation]] of wanted) {
      if (this.subscriptions.has(key)) continue
      this.subscriptions.set(
        key,
        this.store.subscribe(generation.position, async (events) => void (await this.applyBatch(projection, generation, events)), {
          limit: BATCH,
          categories: projection.categories,
          onError: (error) => {
            void this.recordError(generation, error)
            this.onError(error)
          },
        }),
      )
    }
    for (const projection of this.projections) {
      const pending = rows.find((r) => r.projection === projection.name && r.version === projection.version && r.state === 'building')
      if (!pending || this.builds.has(projection.name)) continue
      if (pending.lastErrorAt && Date.now() - Date.parse(pending.lastErrorAt) < RETRY_FAILED_BUILD_MS) continue
      if (await this.locks.holder(projection.name)) continue
      const build = this.build(projection, { resumeOnly: true })
        .catch((error) => {
          if (!(error instanceof AppError && error.code === 'conflict') && !(error instanceof BuildStopped)) this.onError(error)
        })
        .finally(() => {
          this.builds.delete(projection.name)
          if (this.serving) this.reconcileSoon()
        })
      this.builds.set(projection.name, build)
    }
  }
}

