import { type Static, Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import type { Gate } from '../http/gate.ts'
import { undocumented } from '../http/openapi.ts'
import type { ApiTier } from '../domain/owners/owner.ts'
import type { DependencyState } from '../runtime/dependency.ts'
import { type AppError, fail } from '../shared/errors.ts'

export type QuotaUsage = { used: number; quota: number; unlimited: boolean }
/** This month's quota usage of an owner, from memory (src/read-models.ts `memoryQuota`). */
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

export const WebhookBacklog = Type.Object({
  waiting_subscriptions: Type.Integer({ description: 'active webhooks with a message waiting to be delivered (failing, or being sent)' }),
  oldest_failing_since: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'when the longest-failing of them first failed' }),
})
export type WebhookBacklog = Static<typeof WebhookBacklog>

/**
 * What the server knows of itself, in memory (kept by the monitor, src/health-monitor.ts): the dependencies,
 * the read models' lag as last measured (null before the first measure), and why it is not ready.
 */
export type ServerHealth = {
  dependencies(): DependencyState[]
  projections(): ProjectionLagRow[] | null
  /** The webhook delivery backlog as last measured (null before the first measure). */
  webhooks(): WebhookBacklog | null
  notReady(): string | null
}

/** The answer of /readyz when the server should not get traffic; says which check failed, no figures. */
export const notReady = (why: string) => fail.serviceUnavailable(`not ready: ${why}`, 1)

/** What /livez answers whenever the process serves HTTP. */
const ALIVE = { ok: true as const }

/**
 * The probes while the server starts, before its API serves (src/server-components.ts answers every
 * other request 503): the process is alive, /livez 200 from the moment the port is open, so that an
 * orchestrator does not kill a slow start; it is not ready, /readyz 503 with Retry-After.
 */
export function probeWhileStarting(method: string, path: string): typeof ALIVE | AppError | undefined {
  if (method !== 'GET') return undefined
  if (path === '/livez') return ALIVE
  if (path === '/readyz') return notReady('the server is starting')
  return undefined
}

/**
 * GET /livez (the process answers) and GET /readyz (its dependencies answer and its read models are
 * caught up), for load balancers and orchestrators: no key, no data, answered from memory. Outside
 * the API and its OpenAPI document, like /docs (README, "Health checks").
 */
export function probeRoutes(deps: { gate: Gate; health?: ServerHealth }) {
  const open = { public: true as const, detail: undocumented() }
  return new Elysia({ name: 'probes' })
    .use(deps.gate)
    .get('/livez', () => ALIVE, open)
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
