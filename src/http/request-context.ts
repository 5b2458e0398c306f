import type { Principal } from '../keys/authenticate.ts'
import type { RateDecision } from '../ratelimit/port.ts'

/** What the auth plugin learnt about a request, for the route handlers behind it. */
export type RequestContext = { principal: Principal; rate: RateDecision | null; requestId: string }

const contexts = new WeakMap<Request, RequestContext>()

export const rememberContext = (request: Request, context: RequestContext) => contexts.set(request, context)

/** The authenticated caller. Only routes behind the auth plugin exist, so a missing context is a bug. */
export function principalOf(request: Request): Principal {
  const context = contexts.get(request)
  if (!context) throw new Error('no authenticated principal on this request')
  return context.principal
}

export function contextOf(request: Request): RequestContext {
  const context = contexts.get(request)
  if (!context) throw new Error('no request context on this request')
  return context
}
