import type { Db } from '../../src/db/port.ts'
import type { EventStore, Subscription } from '../../src/eventstore/port.ts'
import { AppError } from '../../src/shared/errors.ts'
import { type ApplyEngine, BATCH, BuildStopped } from './apply.ts'
import type { BuildLocks } from './build-lock.ts'
import { Coalesced } from './coalesce.ts'
import { followedGenerations, generationId } from './generation-states.ts'
import { GENERATIONS_CHANNEL, type GenerationRow, listGenerations } from './generations.ts'
import type { GenerationLifecycle } from './lifecycle.ts'
import type { Projection } from './projection.ts'

/** How often the registry is re-read for changes made elsewhere (LISTEN/NOTIFY tells at once; this is the backstop). */
const WATCH_MS = 1000
/** A build that failed is not resumed automatically before this pause (a poison event would loop). */
const RETRY_FAILED_BUILD_MS = 30_000

/**
 * Following while serving: one subscription to the store per generation this code keeps current
 * (see followedGenerations), each batch applied by the apply engine; the registry watched (NOTIFY
 * and polling) so that what any process promotes, rolls back or prunes is followed here too; and an
 * interrupted or registered build of the code's version that nobody runs resumed in the background.
 */
export class Following {
  private readonly subscriptions = new Map<string, Subscription>()
  private readonly builds = new Map<string, Promise<unknown>>()
  /** One look at the registry at a time; changes announced meanwhile make one more. */
  private readonly reconciles = new Coalesced(() => this.reconcileOnce(), { onError: (error) => this.onError(error) })
  private serving = false
  private onError: (error: unknown) => void = () => {}
  private watchTimer: ReturnType<typeof setInterval> | undefined
  private unlisten: (() => Promise<void>) | undefined

  constructor(
    private readonly db: Db,
    private readonly store: EventStore,
    private readonly projections: readonly Projection[],
    private readonly engine: ApplyEngine,
    private readonly lifecycle: GenerationLifecycle,
    private readonly locks: BuildLocks,
  ) {}

  /** Follows from now on; failures (a batch, the registry, a build) go to `onError` and are retried. */
  async start(onError: (error: unknown) => void): Promise<void> {
    this.onError = onError
    this.serving = true
    this.unlisten = await this.db.listen(GENERATIONS_CHANNEL, () => this.reconciles.kick())
    this.watchTimer = setInterval(() => this.reconciles.kick(), WATCH_MS)
    this.watchTimer.unref?.()
    await this.reconcile()
  }

  async stop(): Promise<void> {
    this.serving = false
    clearInterval(this.watchTimer)
    await this.unlisten?.().catch(() => {})
    this.unlisten = undefined
    await this.reconciles.settled()
    await Promise.all([...this.subscriptions.values()].map((s) => s.stop()))
    this.subscriptions.clear()
    await Promise.all([...this.builds.values()].map((b) => b.catch(() => {})))
  }

  /** While serving, follows exactly what the registry says now before resolving (a failure goes to `onError`). */
  async reconcile(): Promise<void> {
    if (this.serving) await this.reconciles.request().catch(() => {})
  }

  private async reconcileOnce(): Promise<void> {
    const rows = await listGenerations(this.db, this.projections.map((p) => p.name))
    const wanted = new Map<string, [Projection, GenerationRow]>()
    for (const projection of this.projections) {
      const own = rows.filter((r) => r.projection === projection.name)
      for (const g of followedGenerations(projection.version, own)) wanted.set(`${projection.name}/${generationId(g)}`, [projection, g])
    }
    for (const [key, subscription] of this.subscriptions) {
      if (wanted.has(key)) continue
      this.subscriptions.delete(key)
      await subscription.stop()
    }
    if (!this.serving) return
    for (const [key, [projection, generation]] of wanted) {
      if (this.subscriptions.has(key)) continue
      // Recorded in the order they happen: a failure and the recovery after it.
      let recorded = Promise.resolve()
      const record = (change: () => Promise<void>) => void (recorded = recorded.then(change))
      this.subscriptions.set(
        key,
        this.store.subscribe(generation.position, async (events) => void (await this.engine.applyBatch(projection, generation, events)), {
          limit: BATCH,
          categories: projection.categories,
          onError: (error) => {
            record(() => this.engine.recordFailure(projection, generation, error))
            this.onError(error)
          },
          // `projections status` stops showing the outage once the store answers, not at the next event.
          onRecovered: () => record(() => this.engine.clearFailure(projection, generation)),
        }),
      )
    }
    for (const projection of this.projections) await this.resumeBuild(projection, rows)
  }

  /** Resumes in the background the build of the code's version nobody runs (not before RETRY_FAILED_BUILD_MS after it failed). */
  private async resumeBuild(projection: Projection, rows: readonly GenerationRow[]): Promise<void> {
    const pending = rows.find((r) => r.projection === projection.name && r.version === projection.version && r.state === 'building')
    if (!pending || this.builds.has(projection.name)) return
    if (pending.lastErrorAt && Date.now() - Date.parse(pending.lastErrorAt) < RETRY_FAILED_BUILD_MS) return
    if (await this.locks.holder(projection.name)) return
    const build = this.lifecycle
      .build(projection, { resumeOnly: true })
      .catch((error) => {
        if (!(error instanceof AppError && error.code === 'conflict') && !(error instanceof BuildStopped)) this.onError(error)
      })
      .finally(() => {
        this.builds.delete(projection.name)
        if (this.serving) this.reconciles.kick()
      })
    this.builds.set(projection.name, build)
  }
}
