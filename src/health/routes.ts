import { type Static, Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import type { Gate } from '../http/gate.ts'
import { operation, undocumented } from '../http/openapi.ts'
import { rateLimiterUnavailable } from '../http/errors.ts'
import { Scope } from '../domain/keys/key.ts'
import { type ApiTier, TIERS } from '../domain/owners/owner.ts'
import type { DependencyState } from '../runtime/dependency.ts'
import { fail } from '../shared/errors.ts'
import { isoTimes } from '../shared/iso-time.ts'
import type { Clock } from '../shared/random.ts'

export type QuotaUsage = { used: number; quota: number; unlimited: boolean }
/** This month's quota usage of an owner, from memory (src/system.ts `memoryQuota`). */
export type QuotaReader = (ownerId: string, tier: ApiTier, now: Date) => QuotaUsage

// TypeBox's Type, not Elysia's `t`: Elysia's t.Integer() publishes `string | integer`.
export const ProjectionLag = Type.Object({
  projection: Type.String(),
  generation: Type.String(),
  state: Type.String(),
  lag_events: Type.Integer(),
  lag_seconds: Type.Number(),
})
export type ProjectionLagRow = Static<typeof ProjectionLag>

export const DependencyStatus = Type.Object({
  name: Type.String({ description: 'event store, read-model database or rate limiter' }),
  reachable: Type.Boolean(),
  seconds_since_reachable: Type.Number({ description: 'since it last answered' }),
})

/**
 * What the server knows of itself, in memory (kept by the monitor, src/system.ts): the dependencies,
 * the read models' lag as last measured (null before the first measure), and why it is not ready.
 */
export type ServerHealth = {
  dependencies(): DependencyState[]
  projections(): ProjectionLagRow[] | null
  notReady(): string | null
}

/** The answer of /readyz when the server should not get traffic; says which check failed, no figures. */
export const notReady = (why: string) => fail.serviceUnavailable(`not ready: ${why}`, 1)

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
  projections: Type.Optional(Type.Array(ProjectionLag, { description: 'admin keys only: each read model’s lag behind the event log, as last measured' })),
  dependencies: Type.Optional(Type.Array(DependencyStatus, { description: 'admin keys only: each server the API depends on, and when it last answered' })),
  time: Type.String({ format: 'date-time' }),
})

/**
 * GET /health: proves the key works and reports the tier, this hour's counter and this month's quota;
 * to admin keys also the read models' lag and the dependencies, all from memory (no database round trip).
 */
export function healthRoutes(deps: { gate: Gate; clock: Clock; quota: QuotaReader; health?: ServerHealth }) {
  const resetIso = isoTimes()
  const timeIso = isoTimes()
  return new Elysia({ name: 'health' }).use(deps.gate).get(
    '/health',
    ({ caller }) => {
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
        quota: deps.quota(caller.ownerId, caller.tier, now),
        ...(caller.tier === 'admin' && deps.health ? { projections: deps.health.projections() ?? [], dependencies: deps.health.dependencies() } : {}),
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
        errors: [rateLimiterUnavailable()],
      }),
    },
  )
}

/**
 * GET /livez (the process answers) and GET /readyz (its dependencies answer and its read models are
 * caught up), for load balancers and orchestrators: no key, no data, answered from memory. Outside
 * the API and its OpenAPI document, like /docs (README, "Health checks").
 */
export function probeRoutes(deps: { gate: Gate; health?: ServerHealth }) {
  const open = { public: true as const, detail: undocumented }
  return new Elysia({ name: 'probes' })
    .use(deps.gate)
    .get('/livez', () => ({ ok: true as const }), open)
    .get(
      '/readyz',
      () => {
        const why = deps.health?.notReady() ?? null
        if (why) throw notReady(why)
        return { ok: true as const }
      },
      open,
    )
}
