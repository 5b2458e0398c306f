import { briefingCacheProjection } from './cache.ts'
import { briefingUsageProjection } from './usage.ts'
import { liveTables } from '../engine/live-tables.ts'
import type { Projection } from '../engine/projection.ts'
import { ProjectionRunner } from '../engine/runner.ts'
import type { Db } from '../../src/db/port.ts'
import { toIso, toNumber } from '../../src/db/port.ts'
import type { EventStore } from '../../src/eventstore/port.ts'
import type { Confidence } from '../../src/domain/briefings/analysis.ts'

/** Cache hits remembered in memory; past this many the memory starts over. */
const MAX_REMEMBERED = 10_000

export const BRIEFING_PROJECTIONS: readonly Projection[] = [briefingCacheProjection, briefingUsageProjection]

export type CachedBriefing = {
  briefing_id: string
  persona: string
  verdict: string
  confidence: Confidence
  headline: string
  body_md: string
  generated_at: string
  expires_at: string
}

/** The cached briefing for `cacheKey` that is still fresh at `now`, if any. */
async function findCachedBriefing(db: Db, tables: { cache: string }, cacheKey: string, now: Date): Promise<CachedBriefing | null> {
  const [row] = await db.query(
    `select briefing_id, persona, verdict, confidence, headline, body_md, generated_at, expires_at
       from ${tables.cache} where cache_key = $1 and expires_at > $2`,
    [cacheKey, now.toISOString()],
  )
  if (!row) return null
  return {
    briefing_id: String(row.briefing_id),
    persona: String(row.persona),
    verdict: String(row.verdict),
    confidence: row.confidence as Confidence,
    headline: String(row.headline),
    body_md: String(row.body_md),
    generated_at: toIso(row.generated_at),
    expires_at: toIso(row.expires_at),
  }
}

/** Briefings charged to `ownerId` in `month` as far as the usage read model has caught up. */
async function chargedInMonth(db: Db, ownerId: string, month: string): Promise<number> {
  const { tables } = await liveTables(db).of(briefingUsageProjection)
  const [row] = await db.query(`select used from ${tables.usage} where owner_id = $1 and month = $2`, [ownerId, month])
  return row ? toNumber(row.used) : 0
}

/**
 * The briefing read models, plus read-your-writes: after a charge, `catchUp()` applies it before
 * the response goes out, so the very next identical request is a cache hit in this process too.
 * Concurrent callers share one catch-up run; a run started before a caller's append does not
 * count for it. The server's own runner may apply the same events: checkpoints make that safe.
 */
export class BriefingReadModel {
  private readonly runner: ProjectionRunner
  private requested = 0
  private covered = 0
  private running: Promise<void> | null = null
  /** Briefings found in the cache, by cache key and generation: one stays what it is until it expires. */
  private readonly found = new Map<string, { generation: string; briefing: CachedBriefing }>()

  constructor(
    readonly db: Db,
    store: EventStore,
  ) {
    this.runner = new ProjectionRunner(db, store, BRIEFING_PROJECTIONS)
  }

  prepare(): Promise<void> {
    return this.runner.prepare()
  }

  async cached(cacheKey: string, now: Date): Promise<CachedBriefing | null> {
    const generation = await liveTables(this.db).of(briefingCacheProjection)
    const known = this.found.get(cacheKey)
    if (known?.generation === generation.id && Date.parse(known.briefing.expires_at) > now.getTime()) return known.briefing
    const briefing = await findCachedBriefing(this.db, generation.tables, cacheKey, now)
    if (briefing) {
      if (this.found.size >= MAX_REMEMBERED) this.found.clear()
      this.found.set(cacheKey, { generation: generation.id, briefing })
    }
    return briefing
  }

  used(ownerId: string, month: string) {
    return chargedInMonth(this.db, ownerId, month)
  }

  async catchUp(): Promise<void> {
    const ticket = ++this.requested
    while (this.covered < ticket) {
      if (!this.running) {
        const upTo = this.requested
        this.running = this.runner
          .catchUp()
          .then(() => {
            this.covered = Math.max(this.covered, upTo)
          })
          .finally(() => {
            this.running = null
          })
      }
      await this.running
    }
  }
}
