import { Elysia, t } from 'elysia'
import type { Gate } from '../http/gate.ts'
import { operation } from '../http/openapi.ts'
import type { ApiTier } from '../domain/owners/owner.ts'
import { isoTimes } from '../shared/iso-time.ts'
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
export function healthRoutes(deps: { gate: Gate; clock: Clock; quota: QuotaReader; lag?: ProjectionLagReader }) {
  const resetIso = isoTimes()
  const timeIso = isoTimes()
  return new Elysia({ name: 'health' }).use(deps.gate).get(
    '/health',
    async ({ caller }) => {
      const now = deps.clock()
      return {
        ok: true as const,
        service: 'mirador' as const,
        version: 'v1' as const,
        tier: caller.tier,
        key_id: caller.keyId,
        owner_id: caller.ownerId,
        scopes: caller.scopes,
        rate_limit: caller.rate && {
          limit: caller.rate.limit,
          used: caller.rate.used,
          remaining: caller.rate.remaining,
          reset_at: resetIso(caller.rate.resetAt.getTime()),
        },
        quota: await deps.quota(caller.ownerId, caller.tier, now),
        ...(caller.tier === 'admin' && deps.lag ? { projections: await deps.lag() } : {}),
        time: timeIso(now.getTime()),
      }
    },
    {
      scope: 'read',
      detail: operation({
        operationId: 'getHealth',
        tag: 'Account',
        summary: 'Check the key: tier, scopes, this hour’s rate limit and this month’s briefing quota',
        ok: HealthResult,
        errors: [],
      }),
    },
  )
}
