import { Elysia } from 'elysia'
import { authenticate, KEY_REFUSALS, type KeyLookup, type Principal, VerifiedKeys } from './authenticate.ts'
import type { Scope } from '../domain/keys/key.ts'
import { type RateDecision, type RateLimiter, type RateLimits, rateLimitExceeded, setRateLimitHeaders } from '../ratelimit/port.ts'
import { AppError, fail, httpStatus } from '../shared/errors.ts'
import { errorBody, errorBytes, jsonBytes, methodNotAllowed } from './errors.ts'
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

/** The refusal of a key without the scope a route needs. */
export const scopeDenied = (needed: Scope, scopes: readonly Scope[]) =>
  fail.scopeDenied(`this endpoint needs the "${needed}" scope; the key has: ${scopes.join(', ')}`)

export type GateDeps = {
  keys: KeyLookup
  limiter: RateLimiter
  limits: RateLimits
  clock: Clock
  /** The `Allow` of a route's path (src/http/routing.ts), for the 405 a HEAD gets. */
  allow(path: string): string
}

/**
 * The gate, as Elysia macros that every route declares where it is defined:
 * `{ scope: 'read' }`, `{ scope: 'write' }`, `{ scope: 'key' }` or `{ public: true }`.
 *
 * It runs on the route Elysia matched, as the route's `resolve`: the handler receives a typed
 * `caller`, and a refusal is the route's answer, so a handler never runs without an authenticated
 * caller (deny by default). Order: auth_required → invalid_key → tier_required → scope_denied →
 * rate_limit, then the route's own checks (validation, 413, 404, quota…). Nothing runs between
 * routing and the gate: gated routes let Elysia parse no body (`parse: 'none'`, the handler reads it
 * with `readJsonBody`) and declare no Elysia schema (`assertAccessDeclared` refuses one), so no
 * validation can answer before the gate. A HEAD, which Elysia hands to a path's GET route, is
 * refused here with 405 on an operation (after the key checks, like every 405 under /api/v1): no
 * operation declares it; a public route answers it (its GET's status and headers, no body). Refusals are answered with `status()`, not thrown: they are the common case under
 * abuse and Elysia's error path costs several times more.
 * `buildApp` refuses to start when a route declares neither macro.
 */
/** The key refusals, made once (authenticate.ts), serialised once too: under abuse they are most answers. */
const KEY_REFUSAL_BYTES = new Map(Object.values(KEY_REFUSALS).map((refusal) => [refusal, errorBytes(refusal)]))

/** The answer to a refusal of the gate: `errorBody`'s, as bytes made once for the key refusals (which carry no headers). */
function refusalBody(refusal: AppError, set: { headers: Record<string, unknown> }): Record<string, unknown> | Uint8Array {
  const bytes = KEY_REFUSAL_BYTES.get(refusal)
  return bytes ? jsonBytes(set, bytes) : errorBody(refusal, set)
}

/** The id of the key each request presented, once the gate found the key (refused or not): for the access log. */
const keyIds = new WeakMap<Request, string>()
export const keyIdOf = (request: Request): string | undefined => keyIds.get(request)

export function gate(deps: GateDeps) {
  const verified = new VerifiedKeys()
  /**
   * The caller, or the refusal to answer with; a promise only while a limiter that must be asked
   * answers. A key that is found is remembered for `request`, also when its scope or limit refuses it.
   */
  function admit(request: Request, access: KeyAccess): Caller | AppError | Promise<Caller | AppError> {
    const now = deps.clock()
    const principal = authenticate(request.headers.get('authorization'), deps.keys, now.getTime(), verified)
    if (principal instanceof AppError) return principal
    keyIds.set(request, principal.keyId)
    if (access !== 'key' && !principal.scopes.includes(access)) return scopeDenied(access, principal.scopes)
    if (principal.tier === 'admin') return { ...principal, rate: null }
    const counted = (rate: RateDecision): Caller | AppError => (rate.allowed ? { ...principal, rate } : rateLimitExceeded(rate))
    const rate = deps.limiter.hit(principal.keyId, deps.limits[principal.tier], now)
    return rate instanceof Promise ? rate.then(counted) : counted(rate)
  }

  const headRefused = (route: string) => methodNotAllowed('HEAD', deps.allow(route))

  return new Elysia({ name: 'gate' }).macro({
    scope: (access: KeyAccess) => ({
      detail: { [ACCESS_EXTENSION]: access, security: [{ [SECURITY_SCHEME]: access === 'key' ? [] : [access] }] },
      parse: 'none' as never,
      // The one header it needs is read from the request: asking Elysia for `headers` copies them all, per request.
      resolve: async ({ request, route, set, status }) => {
        const admission = admit(request, access)
        // Awaited only when it is a promise: a refusal or an admin key needs no trip through the event loop.
        const admitted = admission instanceof Promise ? await admission : admission
        if (admitted instanceof AppError) return status(httpStatus[admitted.code], refusalBody(admitted, set))
        if (admitted.rate) setRateLimitHeaders(set.headers, admitted.rate)
        if (request.method === 'HEAD') return status(405, errorBody(headRefused(route), set))
        return { caller: admitted }
      },
    }),
    // A public GET (the probes, the docs, `GET /`) answers HEAD as Elysia does: its status and headers, no body.
    public: (_: true) => ({ detail: { [ACCESS_EXTENSION]: 'public', security: [] } }),
  })
}

export type Gate = ReturnType<typeof gate>

/** The access a route declared (undefined: none, which buildApp refuses). */
export const declaredAccess = (route: { hooks?: { detail?: Record<string, unknown> } }): Access | undefined =>
  route.hooks?.detail?.[ACCESS_EXTENSION] as Access | undefined
