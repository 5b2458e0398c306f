import type { Db } from '../../src/db/port.ts'
import type { EventStore } from '../../src/eventstore/port.ts'
import { AppError, fail } from '../../src/shared/errors.ts'
import { type AtCheckpoint, type ApplyEngine, BATCH, BUILD_BATCH, BuildStopped, type Progress } from './apply.ts'
import type { BuildLock, BuildLocks } from './build-lock.ts'
import { decide, type Generation, type GenerationRef, generationId, type Registry, sameGeneration } from './generation-states.ts'
import {
  adoptLegacyCheckpoints,
  applyTransitions,
  createRegistry,
  deleteGeneration,
  type GenerationRow,
  generationTables,
  legacyCheckpointsOf,
  listGenerations,
  lockGenerations,
  registryPresence,
  resetBuild,
} from './generations.ts'
import { liveTables } from './live-tables.ts'
import type { Projection } from './projection.ts'

/** Serialises DDL across processes: concurrent `create table if not exists` can collide in PostgreSQL. */
const DDL_LOCK = 727_002
/**
 * A generation that stopped being live is dropped by `prune` only this long after: every API
 * process has switched its readers by then (they poll the registry every second at worst).
 */
const SWITCH_GRACE_MS = 2000

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

/** The registry of `projection` as the state machine reads it. */
export const registryOf = (projection: Projection, rows: readonly GenerationRow[]): Registry => ({
  projection: projection.name,
  codeVersion: projection.version,
  generations: rows.filter((r) => r.projection === projection.name),
})

/**
 * A generation's life (generation-states.ts decides, this module carries it out): registering on a
 * fresh store or a new version, building beside the live generation and promoting or holding it,
 * promote, rollback and prune. Every registry change commits in a transaction holding the
 * projection's generation rows; `registryChanged` then lets this process's follower catch on.
 */
export class GenerationLifecycle {
  /** Set by stop(): builds running in the background give up at their next batch (they resume later). */
  private stopping = false

  constructor(
    private readonly db: Db,
    private readonly store: EventStore,
    private readonly projections: readonly Projection[],
    private readonly engine: ApplyEngine,
    private readonly locks: BuildLocks,
    private readonly registryChanged: () => Promise<void>,
  ) {}

  stop(): void {
    this.stopping = true
  }

  /**
   * Creates the registry and, per projection, a live generation when there is none (a fresh store:
   * built in place from position 0), or registers the build of the code's version when the live
   * generation is of another version and none of the code's version exists yet. When nothing is to
   * be done (every start after the first) it only reads the registry: no DDL, no lock, so that it
   * never waits on, or holds up, a batch being applied.
   */
  async prepare(): Promise<void> {
    if (!(await this.needsPreparing())) return
    await this.db.transaction(async (tx) => {
      await tx.query('select pg_advisory_xact_lock($1)', [DDL_LOCK])
      if (!(await registryPresence(tx)).registry) await createRegistry(tx)
      await adoptLegacyCheckpoints(tx, this.projections)
      const rows = await listGenerations(tx, this.projections.map((p) => p.name))
      for (const projection of this.projections) {
        const { changes } = decide(registryOf(projection, rows), { type: 'prepare' })
        await applyTransitions(tx, projection.name, changes)
        for (const change of changes) {
          if (change.kind !== 'register' || change.state !== 'live') continue
          const tables = generationTables(projection, change.generation)
          for (const ddl of [...projection.schema(tables), ...projection.indexes(tables)]) await tx.query(ddl)
        }
      }
    })
  }

  /** Whether `prepare` has anything to do: no registry, checkpoints from before generations, or what the state machine says. */
  private async needsPreparing(): Promise<boolean> {
    if (!(await registryPresence(this.db)).registry) return true
    if (await legacyCheckpointsOf(this.db, this.projections)) return true
    const rows = await listGenerations(this.db, this.projections.map((p) => p.name))
    return this.projections.some((projection) => decide(registryOf(projection, rows), { type: 'prepare' }).changes.length > 0)
  }

  /**
   * Builds a new generation of each projection from position 0 beside the live one, then promotes
   * it, or holds it for `promote` with `hold`. An interrupted build of the code's version is resumed
   * instead of starting over.
   */
  async rebuild(chosen: readonly Projection[], options: { hold?: boolean; progress?: Progress }): Promise<BuildResult[]> {
    await this.prepare()
    const results: BuildResult[] = []
    for (const projection of chosen) {
      const result = await this.build(projection, { hold: options.hold ?? false, progress: options.progress })
      if (result) results.push(result)
    }
    return results
  }

  /** Makes the newest held generation live, after catching it up. */
  async promote(projection: Projection): Promise<SwitchResult> {
    await this.prepare()
    const decision = decide(registryOf(projection, await listGenerations(this.db, [projection.name])), { type: 'promote' })
    if (decision.outcome === 'refused') throw fail.conflict(decision.reason)
    return this.switchTo(projection, decision.generation)
  }

  /** Makes the previous generation live again, at once. */
  async rollback(projection: Projection): Promise<SwitchResult> {
    await this.prepare()
    const decision = decide(registryOf(projection, await listGenerations(this.db, [projection.name])), { type: 'rollback' })
    if (decision.outcome === 'refused') throw fail.conflict(decision.reason)
    return this.switchTo(projection, decision.generation)
  }

  /** Drops every generation except the live one and a build in progress (unless its build lock is free). */
  async prune(projection: Projection): Promise<PruneResult> {
    const name = projection.name
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
        const decision = decide(registryOf(projection, rows), { type: 'prune', buildLockHeld: lock !== null })
        await applyTransitions(tx, name, decision.changes)
        return rows.filter((row) => decision.generations.some(sameGeneration(row)))
      })
      await this.registryChanged()
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
          await deleteGeneration(tx, name, victim)
        }
      })
      const kept = (await listGenerations(this.db, [name])).map(generationId)
      return { projection: name, dropped: victims.map(generationId), tables, kept }
    } finally {
      await lock?.release()
    }
  }

  /**
   * Builds (or, with `resumeOnly`, only resumes) the code's version of `projection`, holding its
   * build lock: the bulk in large batches without secondary indexes, then the indexes, then the
   * rest; caught up, it goes live or is held. Null when there was nothing to resume.
   */
  async build(projection: Projection, options: { hold?: boolean; progress?: Progress; resumeOnly?: boolean }): Promise<BuildResult | null> {
    const lock = await this.locks.acquire(projection.name)
    let generation: Generation | null = null
    try {
      generation = await this.db.transaction(async (tx) => {
        const rows = await lockGenerations(tx, projection.name)
        const decision = decide(registryOf(projection, rows), { type: 'build', hold: options.hold, resumeOnly: options.resumeOnly })
        await applyTransitions(tx, projection.name, decision.changes)
        return decision.outcome === 'build' ? decision.generation : null
      })
      if (!generation) return null
      const building = { lock, stopped: () => this.stopping }
      await lock.describe(generationId(generation))
      const started = performance.now()
      const resumedFrom = await this.prepareBuildTables(projection, generation)
      const head = await this.store.headPosition()
      options.progress?.(projection.name, resumedFrom, head)
      const bulk = await this.engine.catchUp(
        projection,
        { ...generation, position: resumedFrom },
        { batch: BUILD_BATCH[this.db.kind], progress: options.progress, build: building, head },
      )
      await this.createIndexes(projection, generation)
      const rest = await this.engine.catchUp(projection, { ...generation, position: bulk.position }, { batch: BATCH, build: building })
      const built = generation
      const next = await this.db.transaction(async (tx) => {
        const decision = decide(registryOf(projection, await lockGenerations(tx, projection.name)), { type: 'finish build', generation: built })
        if (decision.outcome === 'refused') throw fail.conflict(decision.reason)
        if (decision.outcome === 'changes') await applyTransitions(tx, projection.name, decision.changes)
        return decision.outcome
      })
      const done = { ...generation, position: rest.position }
      if (next === 'switch') await this.switchTo(projection, done)
      else await this.registryChanged()
      const seconds = (performance.now() - started) / 1000
      const events = bulk.applied + rest.applied
      return {
        projection: projection.name,
        generation: generationId(done),
        events,
        resumed_from: resumedFrom,
        position: done.position,
        seconds: Math.round(seconds * 1000) / 1000,
        events_per_second: seconds > 0 ? Math.round(events / seconds) : 0,
        outcome: next === 'switch' ? 'promoted' : 'held',
      }
    } catch (error) {
      if (generation && !(error instanceof BuildStopped)) await this.engine.recordFailure(projection, generation, error)
      throw error
    } finally {
      await lock.release()
    }
  }

  /** Owners and keys are small: when their version changed, they are built before the API serves. */
  async buildBeforeServing(projection: Projection): Promise<void> {
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

  /**
   * A build starting from position 0 gets empty tables (whatever an earlier attempt left is
   * dropped); a resumed one keeps its rows, which match its checkpoint exactly. Returns the position
   * the build starts from.
   */
  private async prepareBuildTables(projection: Projection, generation: AtCheckpoint): Promise<number> {
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
      await resetBuild(tx, projection.name, generation)
      return 0
    })
  }

  /** A build's secondary indexes, created after its bulk: one sort of the whole table each. */
  private async createIndexes(projection: Projection, generation: GenerationRef): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query('select pg_advisory_xact_lock($1)', [DDL_LOCK])
      // In memory rather than in temporary files.
      if (this.db.kind === 'postgres') await tx.query(`set local maintenance_work_mem = '256MB'`)
      for (const ddl of projection.indexes(generationTables(projection, generation))) await tx.query(ddl)
    })
  }

  /**
   * Makes `target` live: caught up to the head first (a generation this code follows), then, in
   * one transaction holding every generation row of the projection, what the state machine decides
   * (the live one becomes previous, the previous one retired, the target live; or, when the target
   * moved on or is behind, another catch-up first). Readers in this process switch before this
   * returns; other processes are told by NOTIFY.
   */
  private async switchTo(projection: Projection, target: AtCheckpoint): Promise<SwitchResult> {
    const followable = target.version === projection.version
    for (let attempt = 0; attempt < 100; attempt++) {
      let position = target.position
      if (followable) {
        const fresh = (await listGenerations(this.db, [projection.name])).find(sameGeneration(target))
        if (!fresh) throw fail.conflict(`${projection.name} ${generationId(target)} no longer exists`)
        position = (await this.engine.catchUp(projection, fresh, { batch: BATCH })).position
        const [pending] = await this.store.readAll(position, { limit: 1, categories: projection.categories })
        if (pending) continue
      }
      const switched = await this.db.transaction(async (tx) => {
        const rows = await lockGenerations(tx, projection.name)
        const decision = decide(registryOf(projection, rows), { type: 'switch', to: target, caughtUpTo: position })
        if (decision.outcome === 'refused') throw fail.conflict(decision.reason)
        if (decision.outcome === 'switch') return null
        await applyTransitions(tx, projection.name, decision.changes)
        const live = rows.find((r) => r.state === 'live')
        return { from: live ? generationId(live) : null }
      })
      if (!switched) continue
      await liveTables(this.db).refresh()
      await this.registryChanged()
      return {
        projection: projection.name,
        from: switched.from,
        to: generationId(target),
        note: followable
          ? null
          : `${generationId(target)} is of version ${target.version} and this code projects version ${projection.version}: it is served as it was and does not follow new events until the code is version ${target.version} again or a version ${projection.version} generation is promoted`,
      }
    }
    throw fail.serviceUnavailable(`${projection.name} ${generationId(target)} could not catch up with the events being appended; retry`)
  }
}
