import type { Db } from '../../src/db/port.ts'
import { Coalesced } from './coalesce.ts'
import { generationId } from './generation-states.ts'
import { GENERATIONS_CHANNEL, generationTables, liveGenerations } from './generations.ts'
import type { Projection, Tables } from './projection.ts'

/** The generation readers use right now: its identity and its tables. */
export type LiveGeneration<K extends string = string> = {
  projection: string
  version: number
  build: number
  /** `v2.1`: changes with every promotion or rollback, so caches keyed by it never mix generations. */
  id: string
  tables: Tables<K>
}

export type GenerationListener = (projection: string, generation: LiveGeneration) => void

const POLL_MS = 1000

/**
 * Where every reader of a read model finds its live tables: the one place that knows which
 * generation is live. A following instance (the API's, see `follow`) answers from memory and learns
 * of a promotion, rollback or prune the moment it commits: in this process directly, in other
 * processes through LISTEN/NOTIFY, with polling every second as a backstop. An instance that does
 * not follow (tools, tests) asks the registry on every call. A request resolves the generation once
 * and uses its tables throughout, so readers switch between two requests, never inside one.
 */
export class LiveTables {
  private readonly live = new Map<string, LiveGeneration>()
  private readonly listeners = new Set<GenerationListener>()
  /** One reading of the registry at a time: asks meanwhile coalesce into one more. */
  private readonly refreshes = new Coalesced(() => this.load(), { onError: (error) => this.onError(error) })
  private onError: (error: unknown) => void = () => {}
  private following = false
  private loaded: Promise<void> | null = null
  private timer: ReturnType<typeof setInterval> | undefined
  private unlisten: (() => Promise<void>) | undefined

  constructor(private readonly db: Db) {}

  /** The live generation of `projection`; throws when the store has none (its projections were never prepared). */
  async of<K extends string>(projection: Projection<K>): Promise<LiveGeneration<K>> {
    if (!this.following) await this.refresh()
    else await (this.loaded ??= this.refresh())
    const found = this.live.get(projection.name)
    if (!found) throw new Error(`projection ${projection.name} has no live generation: its read model was never prepared`)
    return { ...found, tables: generationTables(projection, found) }
  }

  /** Called with the new live generation whenever a projection's live generation changes (promotion, rollback). */
  onChange(listener: GenerationListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Re-reads which generations are live and tells the listeners about every change; settles once a reading that started after the call is done. */
  refresh(): Promise<void> {
    return this.refreshes.request()
  }

  /** Keeps the answer in memory from now on, following changes made by any process (a failed reading goes to `onError`; the next poll retries). */
  async follow(onError: (error: unknown) => void): Promise<void> {
    if (this.following) return
    this.onError = onError
    this.unlisten = await this.db.listen(GENERATIONS_CHANNEL, () => this.refreshes.kick())
    this.timer = setInterval(() => this.refreshes.kick(), POLL_MS)
    this.timer.unref?.()
    this.following = true
    await (this.loaded = this.refresh())
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    this.following = false
    this.loaded = null
    this.onError = () => {}
    await this.unlisten?.().catch(() => {})
    this.unlisten = undefined
  }

  private async load(): Promise<void> {
    for (const generation of (await liveGenerations(this.db)) ?? []) {
      const id = generationId(generation)
      const known = this.live.get(generation.projection)
      if (known?.id === id) continue
      const live = { ...generation, id, tables: {} }
      this.live.set(generation.projection, live)
      // The first load of a projection is not a change: there was nothing before it.
      if (known) for (const listener of this.listeners) listener(generation.projection, live)
    }
  }
}

const instances = new WeakMap<Db, LiveTables>()

/** The live tables of the read models on `db` (one instance per database connection). */
export function liveTables(db: Db): LiveTables {
  let instance = instances.get(db)
  if (!instance) instances.set(db, (instance = new LiveTables(db)))
  return instance
}
