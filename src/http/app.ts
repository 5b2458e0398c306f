import { Elysia } from 'elysia'
import { type QuotaReader, healthRoutes } from '../health/routes.ts'
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
  quota: QuotaReader
  log: Logger
}

/** The whole HTTP API. Runtime-neutral: `app.handle(request)` works on Node; Bun serves it in main.ts. */
export function buildApp(deps: ApiDeps) {
  return new Elysia()
    .use(errorPlugin(deps.log))
    .use(authPlugin(deps))
    .onAfterResponse({ as: 'global' }, ({ request, set }) => {
      deps.log.info('request', {
        request_id: set.headers['x-request-id'],
        method: request.method,
        path: pathOf(request.url),
        status: set.status,
      })
    })
    .group(API_PREFIX, (api) => api.use(healthRoutes(deps)))
}

export type App = ReturnType<typeof buildApp>
