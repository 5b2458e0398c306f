import type { Db } from '../../src/db/port.ts'
import { toIso, toNumber } from '../../src/db/port.ts'
import { GENERATIONS_CHANNEL, generationId, generationTables } from './generations.ts'
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
  private following = false
  private loaded: Promise<void> | null = null
  private timer: ReturnType<typeof setInterval> | undefined
  private unlisten: (() => Promise<void>) | undefined
  private refreshing: Promise<void> | null = null
  private again = false

  constructor(private readonly db: Db) {}

  /** The live generation of `projection`; throws when the store has none (its projections were never prepared). */
  async of<K extends string>(projection: Projection<K>): Promise<LiveGeneration<K>> {
    if (!this.following) await this.refresh()
    else await (this.loaded ??= this.refresh())
    const found = this.live.get(projection.name)
    if (!found) throw new Error(`projection ${projection.name} has no live generation: its read model was never prepared`)
    return { ...found, tables: generationTables(projection, found) }
  }

  /**
   * Where `generation` has got to: its checkpoint and when it moved, as a key for caches of what
   * its tables answer (it changes with every batch applied, and differs between generations).
   */
  async checkpointKey(generation: LiveGeneration): Promise<string> {
    const [row] = await this.db.query<{ position: unknown; updated_at: unknown }>(
      'select position, updated_at from mirador_generations where projection = $1 and version = $2 and build = $3',
      [generation.projection, generation.version, generation.build],
    )
    return row ? `${generation.id}@${toNumber(row.position)}@${toIso(row.updated_at)}` : `${generation.id}@gone`
  }

  /** Called with the new live generation whenever a projection's live generation changes (promotion, rollback). */
  onChange(listener: GenerationListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Re-reads which generations are live and tells the listeners about every change. Concurrent calls coalesce. */
  refresh(): Promise<void> {
    if (this.refreshing) {
      this.again = true
      return this.refreshing
    }
    this.refreshing = (async () => {
      try {
        do {
          this.again = false
          await this.load()
        } while (this.again)
      } finally {
        this.refreshing = null
      }
    })()
    return this.refreshing
  }

  /** Keeps the answer in memory from now on, following changes made by any process. */
  async follow(onError: (error: unknown) => void): Promise<void> {
    if (this.following) return
    this.unlisten = await this.db.listen(GENERATIONS_CHANNEL, () => void this.refresh().catch(onError))
    this.timer = setInterval(() => void this.refresh().catch(onError), POLL_MS)
    this.timer.unref?.()
    this.following = true
    await (this.loaded = this.refresh())
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    this.following = false
    this.loaded = null
    await this.unlisten?.().catch(() => {})
    this.unlisten = undefined
  }

  private async load(): Promise<void> {
    const [registry] = await this.db.query<{ present: boolean }>(`select to_regclass('mirador_generations') is not null as present`)
    if (!registry?.present) return
    const rows = await this.db.query<{ projection: string; version: unknown; build: unknown }>(
      `select projection, version, build from mirador_generations where state = 'live'`,
    )
    for (const row of rows) {
      const generation = { projection: row.projection, version: toNumber(row.version), build: toNumber(row.build) }
      const id = generationId(generation)
      const known = this.live.get(row.projection)
      if (known?.id === id) continue
      const live = { ...generation, id, tables: {} }
      this.live.set(row.projection, live)
      // The first load of a projection is not a change: there was nothing before it.
      if (known) for (const listener of this.listeners) listener(row.projection, live)
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
