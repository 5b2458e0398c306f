import type { Db } from '../../src/db/port.ts'
import type { EventStore } from '../../src/eventstore/port.ts'
import { fail } from '../../src/shared/errors.ts'
import { ApplyEngine, BATCH, type LiveAdvancedListener, type Progress } from './apply.ts'
import { BuildLocks, type ProcessIdentity, thisProcess } from './build-lock.ts'
import { Following } from './following.ts'
import { followedGenerations } from './generation-states.ts'
import { listGenerations } from './generations.ts'
import { type BuildResult, GenerationLifecycle, type PruneResult, registryOf, type SwitchResult } from './lifecycle.ts'
import type { Projection } from './projection.ts'
import { type GenerationStatus, generationStatus } from './status.ts'

/** The results the operator commands print (src/operator/format.ts). */
export type { BuildResult, GenerationStatus, PruneResult, SwitchResult }

/**
 * Runs projections over generations (generations.ts, generation-states.ts), composing:
 *
 * - the apply engine (apply.ts): a batch's rows and its checkpoint in one transaction, exactly once
 *   across processes; catch-up of one generation;
 * - the lifecycle (lifecycle.ts): prepare, build beside the live generation, promote, rollback,
 *   prune, and the build of `servedCurrentOnly` projections before serving;
 * - following while serving (following.ts): every generation of the code's version that is live,
 *   held or previous kept current, the registry watched for what other processes change, and
 *   interrupted builds resumed in the background;
 * - status (status.ts).
 *
 * A generation of another version is frozen: this code cannot apply its version's logic.
 */
export class ProjectionRunner {
  private readonly engine: ApplyEngine
  private readonly lifecycle: GenerationLifecycle
  private readonly following: Following
  private readonly locks: BuildLocks

  constructor(
    private readonly db: Db,
    private readonly store: EventStore,
    readonly projections: readonly Projection[],
    identity: ProcessIdentity = thisProcess(),
  ) {
    this.locks = new BuildLocks(db, identity)
    this.engine = new ApplyEngine(db, store)
    this.lifecycle = new GenerationLifecycle(db, store, projections, this.engine, this.locks, () => this.following.reconcile())
    this.following = new Following(db, store, projections, this.engine, this.lifecycle, this.locks)
  }

  /** Tells of every batch a live generation now holds, whichever process applied it (what in-memory copies follow). */
  onLiveAdvanced(listener: LiveAdvancedListener): () => void {
    return this.engine.onLiveAdvanced(listener)
  }

  /** Finds a projection by its name (the one name status prints and every command takes). */
  projection(name: string): Projection {
    const found = this.projections.find((p) => p.name === name)
    if (!found) {
      throw fail.invalidRequest(`unknown projection "${name}"; known: ${this.projections.map((p) => p.name).join(', ')}`)
    }
    return found
  }

  /** Creates the registry, and registers what a fresh store or a new code version needs (see GenerationLifecycle.prepare). */
  prepare(): Promise<void> {
    return this.lifecycle.prepare()
  }

  /** Applies everything up to the current head to every generation this code keeps current; returns when done. */
  async catchUp(progress?: Progress): Promise<void> {
    await this.prepare()
    const rows = await listGenerations(this.db, this.projections.map((p) => p.name))
    const head = await this.store.headPosition()
    for (const projection of this.projections) {
      for (const generation of followedGenerations(projection.version, registryOf(projection, rows).generations)) {
        progress?.(projection.name, generation.position, head)
        await this.engine.catchUp(projection, generation, { batch: BATCH, progress })
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
    await this.catchUp()
    for (const projection of this.projections.filter((p) => p.servedCurrentOnly)) await this.lifecycle.buildBeforeServing(projection)
    await this.following.start(onError)
  }

  async stop(): Promise<void> {
    this.lifecycle.stop()
    await this.following.stop()
  }

  /**
   * Builds a new generation of each named projection (all when none) from position 0 beside the
   * live one, then promotes it, or holds it for `promote` with `hold`. An interrupted build of the
   * code's version is resumed instead of starting over.
   */
  async rebuild(names: readonly string[], options: { hold?: boolean; progress?: Progress } = {}): Promise<BuildResult[]> {
    const chosen = names.length === 0 ? this.projections : names.map((name) => this.projection(name))
    return this.lifecycle.rebuild(chosen, options)
  }

  /** Makes the held generation of `name` live, after catching it up. */
  async promote(name: string): Promise<SwitchResult> {
    return this.lifecycle.promote(this.projection(name))
  }

  /** Makes the previous generation of `name` live again, at once. */
  async rollback(name: string): Promise<SwitchResult> {
    return this.lifecycle.rollback(this.projection(name))
  }

  /** Drops every generation of `name` except the live one and a build in progress. */
  async prune(name: string): Promise<PruneResult> {
    return this.lifecycle.prune(this.projection(name))
  }

  /** Every generation of every projection, with its position, lag, state and last error. */
  status(): Promise<GenerationStatus[]> {
    return generationStatus({ db: this.db, store: this.store, locks: this.locks }, this.projections)
  }
}
