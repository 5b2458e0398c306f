import { type Static, Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import type { Gate } from '../http/gate.ts'
import { operation } from '../http/openapi.ts'
import { Scope } from '../domain/keys/key.ts'
import { type ApiTier, TIERS } from '../domain/owners/owner.ts'
import { isoTimes } from '../shared/iso-time.ts'
import type { Clock } from '../shared/random.ts'

export type QuotaUsage = { used: number; quota: number; unlimited: boolean }
export type QuotaReader = (ownerId: string, tier: ApiTier, now: Date) => Promise<QuotaUsage>

// TypeBox's Type, not Elysia's `t`: Elysia's t.Integer() publishes `string | integer`.
export const ProjectionLag = Type.Object({
  projection: Type.String(),
  generation: Type.String(),
  state: Type.String(),
  lag_events: Type.Integer(),
  lag_seconds: Type.Number(),
})
/** Read models' lag behind the event log: the live generation of each, and builds in progress. */
export type ProjectionLagReader = () => Promise<Static<typeof ProjectionLag>[]>

const API_TIERS = TIERS.filter((tier): tier is ApiTier => tier !== 'free')

export const HealthResult = Type.Object({
  ok: Type.Literal(true),
  service: Type.Literal('mirador'),
  version: Type.Literal('v1'),
  tier: Type.Union(API_TIERS.map((tier) => Type.Literal(tier)), { description: 'tiers with API access' }),
  key_id: Type.String(),
  owner_id: Type.String(),
  scopes: Type.Array(Scope),
  rate_limit: Type.Union([
    Type.Object({ limit: Type.Integer(), used: Type.Integer(), remaining: Type.Integer(), reset_at: Type.String({ format: 'date-time' }) }),
    Type.Null(),
  ], { description: 'this hour’s counter; null for admin keys, which are not counted' }),
  quota: Type.Object({ used: Type.Integer(), quota: Type.Integer(), unlimited: Type.Boolean() }),
  projections: Type.Optional(Type.Array(ProjectionLag, { description: 'admin keys only: each read model’s lag behind the event log' })),
  time: Type.String({ format: 'date-time' }),
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
        description: 'Proves the key works: who it belongs to, its tier and scopes, this hour’s request counter and this month’s briefing quota.',
        ok: HealthResult,
        errors: [],
      }),
    },
  )
}
