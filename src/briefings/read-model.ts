import { BRIEFING_CACHE_TABLE, briefingCacheProjection } from '../../projections/briefing-cache.ts'
import { BRIEFING_USAGE_TABLE, briefingUsageProjection } from '../../projections/briefing-usage.ts'
import type { Projection } from '../../projections/projection.ts'
import { ProjectionRunner } from '../../projections/runner.ts'
import type { Db, Sql } from '../db/port.ts'
import { toIso, toNumber } from '../db/port.ts'
import type { EventStore } from '../eventstore/port.ts'
import type { ApiTier } from '../owners/owner.ts'
import type { Confidence } from './analysis.ts'
import { DEFAULT_QUOTAS, type QuotaPolicy, quotaMonth, type Usage, usageOf } from './quota.ts'

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
async function findCachedBriefing(sql: Sql, cacheKey: string, now: Date): Promise<CachedBriefing | null> {
  const [row] = await sql.query(
    `select briefing_id, persona, verdict, confidence, headline, body_md, generated_at, expires_at
       from ${BRIEFING_CACHE_TABLE} where cache_key = $1 and expires_at > $2`,
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
async function chargedInMonth(sql: Sql, ownerId: string, month: string): Promise<number> {
  const [row] = await sql.query(`select used from ${BRIEFING_USAGE_TABLE} where owner_id = $1 and month = $2`, [ownerId, month])
  return row ? toNumber(row.used) : 0
}

/** An owner's usage this month from the read model, for /health (`{used, quota: 0, unlimited: true}` for admins). */
export async function quotaUsage(sql: Sql, ownerId: string, tier: ApiTier, now: Date, quotas: QuotaPolicy = DEFAULT_QUOTAS): Promise<Usage> {
  return usageOf(quotas, tier, await chargedInMonth(sql, ownerId, quotaMonth(now)))
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

  constructor(
    readonly db: Db,
    store: EventStore,
  ) {
    this.runner = new ProjectionRunner(db, store, BRIEFING_PROJECTIONS)
  }

  prepare(): Promise<void> {
    return this.runner.prepare()
  }

  cached(cacheKey: string, now: Date) {
    return findCachedBriefing(this.db, cacheKey, now)
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
