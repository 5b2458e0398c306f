import { Elysia } from 'elysia'
import { authenticate, type KeyLookup, type Principal } from '../keys/authenticate.ts'
import type { Scope } from '../keys/key.ts'
import { type RateDecision, type RateLimiter, type RateLimits, rateLimitExceeded, rateLimitHeaders } from '../ratelimit/port.ts'
import { AppError } from '../shared/errors.ts'
import type { Clock } from '../shared/random.ts'

/**
 * What a route needs from its caller: a key with a scope, or any valid key (`key`: the 404 and 405
 * answers under /api/v1, which must not reveal to anonymous callers which paths exist).
 */
export type KeyAccess = Scope | 'key'
/** Everything a route can declare; `public` routes are served without a key. */
export type Access = KeyAccess | 'public'

/** The authenticated caller of a route: who (key, owner, tier, scopes) and this hour's counter (null for admin). */
export type Caller = Principal & { rate: RateDecision | null }

/** OpenAPI extension under which each route's `detail` records the access it declared. */
export const ACCESS_EXTENSION = 'x-mirador-access'
/** Name of the security scheme (Bearer API key) in the route details and the OpenAPI document. */
export const SECURITY_SCHEME = 'apiKey'

export type GateDeps = { keys: KeyLookup; limiter: RateLimiter; limits: RateLimits; clock: Clock }

/** Where the gate leaves the caller for the route's `resolve`, on the request's own context object. */
const CALLER = Symbol('mirador.caller')
type GatedContext = { [CALLER]?: Caller }

/**
 * The gate, as Elysia macros that every route declares where it is defined:
 * `{ scope: 'read' }`, `{ scope: 'write' }`, `{ scope: 'key' }` or `{ public: true }`.
 *
 * It runs on the route Elysia matched, in the route's `transform` phase: after routing, before
 * validation and the handler, so the order of checks is DESIGN's: auth_required → invalid_key →
 * tier_required → scope_denied → rate_limit → (the route: validation, not_found, quota…).
 * The route's `resolve` hands the handler a typed `caller`; without one it answers 401, so a handler
 * can never run unauthenticated (deny by default). Gated routes never let Elysia parse a body
 * (`parse: 'none'`): a body is read by the handler, after the gate, through `readJsonBody`.
 * `buildApp` refuses to start when a route declares neither macro.
 */
export function gate(deps: GateDeps) {
  async function admit(context: { headers: Record<string, string | undefined>; set: { headers: Record<string, unknown> } }, access: KeyAccess) {
    const principal = authenticate(context.headers.authorization ?? null, deps.keys)
    if (access !== 'key' && !principal.scopes.includes(access)) {
      throw new AppError('scope_denied', `this endpoint needs the "${access}" scope; the key has: ${principal.scopes.join(', ')}`)
    }
    let rate: RateDecision | null = null
    if (principal.tier !== 'admin') {
      rate = await deps.limiter.hit(principal.keyId, deps.limits[principal.tier], deps.clock())
      Object.assign(context.set.headers, rateLimitHeaders(rate))
      if (!rate.allowed) throw rateLimitExceeded(rate)
    }
    ;(context as GatedContext)[CALLER] = { ...principal, rate }
  }

  return new Elysia({ name: 'gate' }).macro({
    scope: (access: KeyAccess) => ({
      detail: { [ACCESS_EXTENSION]: access, security: [{ [SECURITY_SCHEME]: access === 'key' ? [] : [access] }] },
      parse: 'none' as never,
      transform: (context) => admit(context, access),
      resolve: (context) => {
        const caller = (context as GatedContext)[CALLER]
        if (!caller) throw new AppError('auth_required', 'send your API key as "Authorization: Bearer <API_KEY>"')
        return { caller }
      },
    }),
    public: (_: true) => ({ detail: { [ACCESS_EXTENSION]: 'public', security: [] } }),
  })
}

export type Gate = ReturnType<typeof gate>

/** The access a route declared (undefined: none, which buildApp refuses). */
export const declaredAccess = (route: { hooks?: { detail?: Record<string, unknown> } }): Access | undefined =>
  route.hooks?.detail?.[ACCESS_EXTENSION] as Access | undefined
