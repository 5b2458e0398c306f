import { Elysia } from 'elysia'
import { authenticate, type KeyLookup } from '../keys/authenticate.ts'
import { type RateLimiter, type RateLimits, rateLimitExceeded, rateLimitHeaders } from '../ratelimit/port.ts'
import { AppError } from '../shared/errors.ts'
import type { Clock } from '../shared/random.ts'
import { rememberContext } from './request-context.ts'
import { API_PREFIX, matchRoute, pathOf } from './route-table.ts'

export const MAX_BODY_BYTES = 16 * 1024

export type AuthDeps = { keys: KeyLookup; limiter: RateLimiter; limits: RateLimits; clock: Clock }

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/

/**
 * The one gate in front of every /api/v1 route. It runs in `onRequest`, before routing, body
 * parsing and validation, so the order of checks is exactly:
 * auth_required → invalid_key → tier_required → scope_denied → rate_limit → (route: 405/404,
 * payload_too_large, validation, …). Elysia runs `onRequest` for every request the app receives,
 * whichever plugin declares it, so no route can be mounted outside this gate.
 */
export function authPlugin(deps: AuthDeps) {
  return new Elysia({ name: 'auth' }).onRequest(async ({ request, set }) => {
    const incoming = request.headers.get('x-request-id')
    const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : crypto.randomUUID()
    set.headers['x-request-id'] = requestId

    const path = pathOf(request.url)
    if (path !== API_PREFIX && !path.startsWith(`${API_PREFIX}/`)) return

    const principal = authenticate(request.headers.get('authorization'), deps.keys)
    const route = matchRoute(request.method, path)
    if (route.kind === 'route' && !principal.scopes.includes(route.scope)) {
      throw new AppError('scope_denied', `this endpoint needs the "${route.scope}" scope; the key has: ${principal.scopes.join(', ')}`)
    }

    let rate = null
    if (principal.tier !== 'admin') {
      rate = await deps.limiter.hit(principal.keyId, deps.limits[principal.tier], deps.clock())
      Object.assign(set.headers, rateLimitHeaders(rate))
      if (!rate.allowed) throw rateLimitExceeded(rate)
    }
    rememberContext(request, { principal, rate, requestId })

    if (route.kind === 'wrong_method') {
      throw new AppError('method_not_allowed', `${request.method} is not allowed here; use ${route.allow.join(', ')}`, {}, {
        allow: route.allow.join(', '),
      })
    }
    if (route.kind === 'unknown') throw new AppError('not_found', `no endpoint at ${path}`)

    const length = Number(request.headers.get('content-length') ?? 0)
    if (length > MAX_BODY_BYTES) {
      throw new AppError('payload_too_large', `the body is ${length} bytes; the limit is ${MAX_BODY_BYTES} bytes (16 KiB)`)
    }
  })
}
