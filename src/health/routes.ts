import { Elysia, t } from 'elysia'
import { contextOf } from '../http/request-context.ts'
import type { ApiTier } from '../owners/owner.ts'
import type { Clock } from '../shared/random.ts'

export type QuotaUsage = { used: number; quota: number; unlimited: boolean }
export type QuotaReader = (ownerId: string, tier: ApiTier, now: Date) => Promise<QuotaUsage>

export const ProjectionLag = t.Object({
  projection: t.String(),
  generation: t.String(),
  state: t.String(),
  lag_events: t.Integer(),
  lag_seconds: t.Number(),
})
/** Read models' lag behind the event log: the live generation of each, and builds in progress. */
export type ProjectionLagReader = () => Promise<(typeof ProjectionLag)['static'][]>

export const HealthResult = t.Object({
  ok: t.Literal(true),
  service: t.Literal('mirador'),
  version: t.Literal('v1'),
  tier: t.Union([t.Literal('pro'), t.Literal('enterprise'), t.Literal('admin')]),
  key_id: t.String(),
  owner_id: t.String(),
  scopes: t.Array(t.String()),
  rate_limit: t.Union([
    t.Object({ limit: t.Integer(), used: t.Integer(), remaining: t.Integer(), reset_at: t.String() }),
    t.Null(),
  ]),
  quota: t.Object({ used: t.Integer(), quota: t.Integer(), unlimited: t.Boolean() }),
  /** Admin keys only. */
  projections: t.Optional(t.Array(ProjectionLag)),
  time: t.String(),
})

/** GET /health: proves the key works and reports the tier, this hour's counter and this month's quota. */
export function healthRoutes(deps: { clock: Clock; quota: QuotaReader; lag?: ProjectionLagReader }) {
  return new Elysia({ name: 'health' }).get(
    '/health',
    async ({ request }) => {
      const { principal, rate } = contextOf(request)
      const now = deps.clock()
      return {
        ok: true as const,
        service: 'mirador' as const,
        version: 'v1' as const,
        tier: principal.tier,
        key_id: principal.keyId,
        owner_id: principal.ownerId,
        scopes: principal.scopes,
        rate_limit: rate && {
          limit: rate.limit,
          used: rate.used,
          remaining: rate.remaining,
          reset_at: rate.resetAt.toISOString(),
        },
        quota: await deps.quota(principal.ownerId, principal.tier, now),
        ...(principal.tier === 'admin' && deps.lag ? { projections: await deps.lag() } : {}),
        time: now.toISOString(),
      }
    },
    { response: { 200: HealthResult } },
  )
}
