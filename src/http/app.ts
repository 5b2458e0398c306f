import { Elysia } from 'elysia'
import { briefingRoutes } from '../briefings/routes.ts'
import type { BriefingService } from '../briefings/service.ts'
import type { Db } from '../db/port.ts'
import { healthRoutes, type ProjectionLagReader } from '../health/routes.ts'
import { listingRoutes } from '../listings/routes.ts'
import { zoneRoutes } from '../zones/routes.ts'
import type { KeyLookup } from '../keys/authenticate.ts'
import type { RateLimiter, RateLimits } from '../ratelimit/port.ts'
import type { Clock } from '../shared/random.ts'
import { authPlugin } from './auth.ts'
import { type Logger, errorPlugin } from './errors.ts'
import { API_PREFIX, pathOf } from './route-table.ts'

export type ApiDeps = {
  keys: KeyLookup
  limiter: RateLimiter
  limits: RateLimits
  clock: Clock
  log: Logger
  /** One log line per request (ACCESS_LOG); operator messages are logged regardless. */
  accessLog: boolean
  /** Read models behind /zones, /zone/{slug} and /listings. */
  db: Db
  briefings: BriefingService
  /** Read-model lag for admin keys' /health. */
  projectionLag?: ProjectionLagReader
}

/** The whole HTTP API. Runtime-neutral: `app.handle(request)` works on Node; Bun serves it in main.ts. */
export function buildApp(deps: ApiDeps) {
  return new Elysia()
    .use(errorPlugin(deps.log))
    .use(authPlugin(deps))
    .onAfterResponse({ as: 'global' }, ({ request, set }) => {
      if (!deps.accessLog) return
      deps.log.info('request', {
        request_id: set.headers['x-request-id'],
        method: request.method,
        path: pathOf(request.url),
        status: set.status,
      })
    })
    .group(API_PREFIX, (api) =>
      api
        .use(healthRoutes({ clock: deps.clock, quota: deps.briefings.usage, lag: deps.projectionLag }))
        .use(zoneRoutes(deps))
        .use(listingRoutes(deps))
        .use(briefingRoutes({ service: deps.briefings })),
    )
}

export type App = ReturnType<typeof buildApp>
