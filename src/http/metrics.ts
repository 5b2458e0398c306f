import { Elysia } from 'elysia'
import type { Metrics } from '../metrics/port.ts'
import { type ErrorCode, httpStatus } from '../shared/errors.ts'
import { codeOfErrorBytes, toAppError } from './errors.ts'

/** Methods reported as they are; any other becomes `other` (a client chooses the method). */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
const started = new WeakMap<Request, number>()

type Observed = { request: Request; route?: string; set: { status?: number | string }; responseValue?: unknown; refusal?: ErrorCode }

/** The code of an answer given with `status(…, errorBody(…))` or `status(…, errorBytes(…))` (the gate's refusals), if it is one. */
function answeredCode(value: unknown): unknown {
  const response = (value as { response?: unknown } | undefined)?.response
  return codeOfErrorBytes(response) ?? (response as { error?: unknown } | undefined)?.error
}

/**
 * Reports every answered request to `metrics`: its route template (`unmatched` when no route took
 * it), method, status, duration and error code. Label values come only from bounded sets: the
 * app's route table (`routes`), the methods above, the statuses and error codes the API answers
 * with; never the path, a key or an owner. Registered first, so that it sees the start of every
 * request and every error before the error plugin answers it. The duration runs until Elysia's
 * after-response hook, shortly after the answer was handed to the runtime's server.
 */
export function requestMetrics(metrics: Metrics, routes: () => ReadonlySet<string>) {
  return new Elysia({ name: 'request-metrics' })
    .onRequest(({ request }) => {
      started.set(request, performance.now())
    })
    .onError({ as: 'global' }, (context) => {
      ;(context as Observed).refusal = toAppError(context.code, context.error, context.path).code
    })
    .onAfterResponse({ as: 'global' }, (context) => {
      const { request, route, set, responseValue, refusal } = context as Observed
      const code = refusal ?? answeredCode(responseValue)
      metrics.request({
        route: route !== undefined && routes().has(route) ? route : 'unmatched',
        method: METHODS.has(request.method) ? request.method : 'other',
        status: Number(set.status ?? 200),
        seconds: (performance.now() - (started.get(request) ?? performance.now())) / 1000,
        refusal: typeof code === 'string' && Object.hasOwn(httpStatus, code) ? code : null,
      })
    })
}
