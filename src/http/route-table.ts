import type { Scope } from '../keys/key.ts'

export const API_PREFIX = '/api/v1'

/**
 * Every endpoint of the API and the scope it needs (spec §4). The auth plugin refuses a route
 * that is missing here, and a test proves this table and Elysia's route table are the same.
 */
export const API_ROUTES = [
  { method: 'GET', path: '/api/v1/health', scope: 'read' },
  { method: 'GET', path: '/api/v1/zones', scope: 'read' },
  { method: 'GET', path: '/api/v1/zone/:slug', scope: 'read' },
  { method: 'GET', path: '/api/v1/listings', scope: 'read' },
  { method: 'GET', path: '/api/v1/briefings/personas', scope: 'read' },
  { method: 'POST', path: '/api/v1/briefings/:persona', scope: 'write' },
] as const satisfies readonly { method: string; path: string; scope: Scope }[]

export type RouteMatch =
  | { kind: 'route'; scope: Scope }
  | { kind: 'wrong_method'; allow: string[] }
  | { kind: 'unknown' }

const compiled = API_ROUTES.map((route) => ({
  ...route,
  regex: new RegExp(`^${route.path.replace(/:[a-z]+/g, '[^/]+')}/?$`),
  literal: !route.path.includes(':'),
}))

/** Resolves a path like Elysia does: a literal segment wins over a parameter. */
export function matchRoute(method: string, path: string): RouteMatch {
  const candidates = compiled.filter((r) => r.regex.test(path))
  if (candidates.length === 0) return { kind: 'unknown' }
  const wanted = method === 'HEAD' ? 'GET' : method
  const byMethod = candidates.filter((r) => r.method === wanted)
  const chosen = byMethod.find((r) => r.literal) ?? byMethod[0]
  if (chosen) return { kind: 'route', scope: chosen.scope }
  return { kind: 'wrong_method', allow: [...new Set(candidates.map((r) => r.method))] }
}

/** Path of a request URL without parsing the whole URL (hot path). */
export function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  if (start < 0) return '/'
  const query = url.indexOf('?', start)
  return query < 0 ? url.slice(start) : url.slice(start, query)
}
