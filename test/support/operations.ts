import { API_OPERATIONS } from '../../src/app.ts'
import { API_PREFIX } from '../../src/http/routing.ts'

/**
 * Every operation of the API, read from the one list the app mounts (src/app.ts `API_OPERATIONS`):
 * its route as Elysia writes it, as the OpenAPI document writes it, the scope it needs, and a
 * request that a key with that scope gets 200 from on the demo market: the path with each path
 * parameter's documented example, each required query parameter's first example, the body with the
 * operation's first documented example.
 */
export type OperationRequest = {
  method: 'GET' | 'POST' | 'DELETE'
  /** `/api/v1/zone/:slug` */
  route: string
  /** `/api/v1/zone/{slug}` */
  documented: string
  scope: string
  /** `/api/v1/zone/zona-3` */
  path: string
  body?: string
  /** The success is a streamed file (NDJSON by default), not one JSON document. */
  streamed: boolean
  /** The success status: 200, or 201 for an operation that creates. */
  okStatus: number
}

/** The example webhook id the documented paths carry: a spec that needs the webhook to exist creates one and puts its id in its place. */
export const EXAMPLE_WEBHOOK_ID = 'whk_4Kq9TzR2mXb7Lp3N'

const exampleOf = (schema: unknown): string => {
  const examples = (schema as { examples?: unknown[] }).examples
  if (!examples?.length) throw new Error('a path parameter needs an example, which the specs send')
  return String(examples[0])
}

/** `?name=example&…` of the query parameters a request must give, or nothing. */
const requiredQuery = (query: { properties: Record<string, unknown>; required?: string[] } | undefined): string => {
  const required = query?.required ?? []
  return required.length === 0 ? '' : `?${required.map((name) => `${name}=${encodeURIComponent(exampleOf(query!.properties[name]))}`).join('&')}`
}

export const OPERATIONS: OperationRequest[] = API_OPERATIONS.map(({ method, path, access, spec }) => {
  const params = spec.inputs?.params?.properties ?? {}
  const example = spec.body?.examples && Object.values(spec.body.examples)[0]
  return {
    method,
    route: `${API_PREFIX}${path}`,
    documented: `${API_PREFIX}${path.replace(/:(\w+)/g, '{$1}')}`,
    scope: access,
    path: `${API_PREFIX}${path.replace(/:(\w+)/g, (_, name: string) => exampleOf(params[name]))}${requiredQuery(spec.inputs?.query)}`,
    ...(example === undefined ? {} : { body: JSON.stringify(example) }),
    streamed: spec.okMedia !== undefined,
    okStatus: spec.okStatus ?? 200,
  }
})
