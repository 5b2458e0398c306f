import { type AnyElysia, Elysia } from 'elysia'
import { methodNotAllowed, noEndpoint } from './errors.ts'
import { declaredAccess, type Gate } from './gate.ts'
import { undocumented } from './openapi.ts'

export const API_PREFIX = '/api/v1'

type RouteEntry = { method: string; path: string; hooks?: { detail?: Record<string, unknown> } }

/**
 * The `Allow` of a path: the methods its routes take, and HEAD beside the GET of a public route
 * (the probes, the docs). An operation's HEAD is refused: the document declares no HEAD operation,
 * and the gate refuses the HEAD that Elysia would answer as a GET (docs/decisions.md).
 */
export const allowedMethods = (routes: readonly RouteEntry[], path: string): string =>
  [
    ...new Set(
      routes
        .filter((route) => route.path === path && route.method !== 'ALL')
        .flatMap((route) => (route.method === 'GET' && declaredAccess(route) === 'public' ? ['GET', 'HEAD'] : [route.method])),
    ),
  ].join(', ')

/**
 * Answers for requests no route takes, from Elysia's own route table: a known path with another
 * method → 405 method_not_allowed with `Allow`; any other path under the API prefix → 404
 * not_found. Both are routes behind the gate (any valid key): without a key they answer 401, so
 * anonymous callers cannot learn which paths exist (a public path's 405 needs none). Paths outside
 * the prefix are Elysia's 404.
 */
export function answerUnmatched<A extends AnyElysia>(app: A, gate: Gate): A {
  const publicPaths = new Set((app.routes as RouteEntry[]).filter((route) => declaredAccess(route) === 'public').map((route) => route.path))
  const unmatched = new Elysia({ name: 'unmatched' }).use(gate)
  for (const path of new Set((app.routes as RouteEntry[]).map((route) => route.path))) {
    const allow = allowedMethods(app.routes, path)
    unmatched.all(
      path,
      ({ request }) => {
        throw methodNotAllowed(request.method, allow)
      },
      // A public path tells anyone its methods; elsewhere that takes a key, like every answer under /api/v1.
      publicPaths.has(path) ? { public: true, detail: undocumented() } : { scope: 'key', detail: undocumented() },
    )
  }
  for (const path of [API_PREFIX, `${API_PREFIX}/*`]) {
    unmatched.all(
      path,
      ({ path: requested }) => {
        throw noEndpoint(requested)
      },
      { scope: 'key', detail: undocumented() },
    )
  }
  return app.use(unmatched) as A
}

const ELYSIA_SCHEMAS = ['query', 'params', 'body', 'headers', 'cookie'] as const

/**
 * Refuses an app with a route that declares no access (a route added without one fails at start-up),
 * or a gated route with an Elysia schema: Elysia would validate it before the gate, answering 400
 * where 401 is due. An operation (src/http/operation.ts) has its inputs read after the gate; this
 * check guards the routes written by hand (the public pages, the fallbacks).
 */
export function assertAccessDeclared(app: AnyElysia): void {
  const routes = app.routes as (RouteEntry & { hooks?: Partial<Record<(typeof ELYSIA_SCHEMAS)[number], unknown>> })[]
  const undeclared = routes.filter((route) => declaredAccess(route) === undefined)
  if (undeclared.length > 0) {
    const list = undeclared.map((route) => `${route.method} ${route.path}`).join(', ')
    throw new Error(`routes without a declared access: ${list}; declare { scope: 'read' | 'write' | 'key' } or { public: true }`)
  }
  const validated = routes.filter((route) => declaredAccess(route) !== 'public' && ELYSIA_SCHEMAS.some((schema) => route.hooks?.[schema]))
  if (validated.length > 0) {
    const list = validated.map((route) => `${route.method} ${route.path}`).join(', ')
    throw new Error(`gated routes with an Elysia schema, which would be checked before the key: ${list}; declare the inputs of an operation instead (src/http/operation.ts)`)
  }
}
