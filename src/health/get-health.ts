import { type Static, Type } from '@sinclair/typebox'
import { Scope } from '../domain/keys/key.ts'
import { type ApiTier, TIERS } from '../domain/owners/owner.ts'
import { rateLimiterUnavailable } from '../http/errors.ts'
import { defineOperation } from '../http/operation.ts'
import { isoTimes } from '../shared/iso-time.ts'
import type { Clock } from '../shared/random.ts'
import { DependencyStatus, ProjectionLag, type QuotaReader, type ServerHealth, WebhookBacklog } from './routes.ts'

export type HealthDeps = { clock: Clock; quota: QuotaReader; health?: ServerHealth }

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
  webhooks: Type.Optional(Type.Union([WebhookBacklog, Type.Null()], { description: 'admin keys only: the webhook delivery backlog, as last measured (null before the first measure)' })),
  time: Type.String({ format: 'date-time' }),
})

/**
 * GET /health: proves the key works and reports the tier, this hour's counter and this month's quota;
 * to admin keys also the read models' lag and the dependencies, all from memory (no database round trip).
 */
export const getHealth = defineOperation({
  method: 'GET',
  path: '/health',
  access: 'read',
  operationId: 'getHealth',
  tag: 'Account',
  summary: 'Check the key: tier, scopes, this hour’s rate limit and this month’s briefing quota',
  description: 'Proves the key works: who it belongs to, its tier and scopes, this hour’s request counter and this month’s briefing quota.',
  ok: HealthResult,
  okExample: {
    ok: true,
    service: 'mirador',
    version: 'v1',
    tier: 'pro',
    key_id: 'key_a1G29cmQO2qb',
    owner_id: 'acme-corp',
    scopes: ['read', 'write'],
    rate_limit: { limit: 1000, used: 1, remaining: 999, reset_at: '2026-05-07T11:00:00.000Z' },
    quota: { used: 3, quota: 50, unlimited: false },
    time: '2026-05-07T10:20:30.000Z',
  } satisfies Static<typeof HealthResult>,
  errors: [rateLimiterUnavailable()],
  handler(deps: HealthDeps) {
    const resetIso = isoTimes()
    const timeIso = isoTimes()
    return ({ caller }) => {
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
        ...(caller.tier === 'admin' && deps.health ? { projections: deps.health.projections() ?? [], dependencies: deps.health.dependencies(), webhooks: deps.health.webhooks() } : {}),
        time: timeIso(now.getTime()),
      }
    }
  },
})
