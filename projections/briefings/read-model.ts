import { briefingCacheProjection } from './cache.ts'
import { briefingUsageProjection } from './usage.ts'
import { liveTables } from '../engine/live-tables.ts'
import type { Db } from '../../src/db/port.ts'
import { toIso, toNumber } from '../../src/db/port.ts'
import { type CachedBriefing, stillCached } from '../../src/domain/briefings/answer.ts'
import type { Confidence } from '../../src/domain/briefings/analysis.ts'

/** Briefings remembered in memory (found in the cache, or just recorded); past this many the memory starts over. */
const MAX_REMEMBERED = 10_000

/** The cached briefing for `cacheKey` that is still fresh at `now`, if any (the rule of `stillCached`). */
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
 * The briefing read models as this process answers from them: the live generations of the cache and
 * the usage (kept current by the system's projection runner, in this process or another), plus
 * read-your-writes from memory. A briefing this process recorded is remembered (`recorded`) until
 * it expires, so the very next identical request is a cache hit here before any projection has
 * applied it; a briefing found in the cache stays what it is until it expires.
 */
export class BriefingReadModel {
  /** By cache key; `generation` null for a briefing this process recorded (true in every generation). */
  private readonly known = new Map<string, { generation: string | null; briefing: CachedBriefing }>()

  constructor(readonly db: Db) {}

  async cached(cacheKey: string, now: Date): Promise<CachedBriefing | null> {
    const known = this.known.get(cacheKey)
    if (known?.generation === null && stillCached(known.briefing, now)) return known.briefing
    const generation = await liveTables(this.db).of(briefingCacheProjection)
    if (known?.generation === generation.id && stillCached(known.briefing, now)) return known.briefing
    const briefing = await findCachedBriefing(this.db, generation.tables, cacheKey, now)
    if (briefing) this.remember(cacheKey, generation.id, briefing)
    return briefing
  }

  /** A briefing this process just recorded: served from memory until the projections have it. */
  recorded(cacheKey: string, briefing: CachedBriefing): void {
    this.remember(cacheKey, null, briefing)
  }

  used(ownerId: string, month: string): Promise<number> {
    return chargedInMonth(this.db, ownerId, month)
  }

  private remember(cacheKey: string, generation: string | null, briefing: CachedBriefing) {
    if (this.known.size >= MAX_REMEMBERED && !this.known.has(cacheKey)) this.known.clear()
    this.known.set(cacheKey, { generation, briefing })
  }
}
