import { type TObject, type TSchema, Type } from '@sinclair/typebox'
import { rateDecision, rateLimitExceeded } from '../ratelimit/port.ts'
import { AppError, ERROR_CATALOGUE, type ErrorCode, httpStatus } from '../shared/errors.ts'
import { wireForm } from '../shared/input-schema.ts'
import { KEY_REFUSALS } from './authenticate.ts'
import { payloadTooLarge } from './body.ts'
import { parameterText } from './inputs.ts'
import { hostRefused, internalError, methodNotAllowed, rateLimiterUnavailable } from './errors.ts'
import { ACCESS_EXTENSION, type Access, SECURITY_SCHEME, scopeDenied } from './gate.ts'

/**
 * The OpenAPI 3.1 document, generated from the routes Elysia serves: each route's access (from the
 * gate's macro) and its `operation(...)` detail, which names its parameters, body, success schema
 * and the errors it can answer besides the gate's. Nothing here is written twice: the schemas are the
 * TypeBox schemas that read the requests (src/http/inputs.ts, shared/input-schema.ts), shown in their
 * wire form, and every error example is built by the code that answers that error.
 */

/** What a route tells the document about itself (see `operation`). */
export type OperationSpec = {
  operationId: string
  tag: string
  summary: string
  description: string
  /** Path and query parameters: the schemas that read them (`httpInputs`). */
  inputs?: { params?: TObject; query?: TObject }
  /** Request headers the operation reads (besides Authorization). */
  headers?: TObject
  /** A JSON request body. */
  body?: { schema: TSchema; description?: string; examples?: Record<string, unknown> }
  /** The success body. */
  ok: TSchema
  /** The success status when it is not 200: 201 for an operation that creates a resource. */
  okStatus?: 201
  /** A 200 body the operation answers (the document's success example; test/docs/openapi.test.ts checks it against `ok`). */
  okExample: unknown
  /**
   * A 200 that is not one JSON document (a streamed file): its media types, each with its schema and
   * example, instead of `application/json`; such an answer has no validator (no ETag, no 304).
   */
  okMedia?: Record<string, { schema: TSchema; example?: unknown }>
  /** Headers of the 200 answer (and of a GET's 304) besides the ones every answer has: name → description. */
  okHeaders?: Record<string, string>
  /**
   * Errors of the route itself, besides the gate's and the ones every request can meet: an error
   * built by the code that answers it (the document shows it as the example), or the code of an
   * error whose example is common to all routes (COMMON_ERRORS).
   */
  errors: readonly (ErrorCode | AppError)[]
}

const OPERATION_EXTENSION = 'x-mirador-operation'

/** A route's `detail`: its operation, for the OpenAPI document. */
export const operation = (spec: OperationSpec) => ({ [OPERATION_EXTENSION]: spec })

/**
 * The `detail` of routes that answer for no operation (404/405 fallbacks, the documentation itself):
 * a new object each time, since Elysia writes the route's macros into the detail it is given.
 */
export const undocumented = () => ({ hide: true })

/** The error `attempt` throws, e.g. a real parse of a bad request: an example built by the code that answers it. */
export function refusalOf(attempt: () => unknown): AppError {
  try {
    attempt()
  } catch (error) {
    if (error instanceof AppError) return error
    throw error
  }
  throw new Error('expected the attempt to be refused')
}

// ---- errors ------------------------------------------------------------------------------------

/** An error body: `ok`, `error`, `message` and the fields the catalogue gives its code (Spectral checks the examples against them). */
export const errorBodySchema = (code: ErrorCode) =>
  Type.Object(
    {
      ok: Type.Literal(false),
      error: Type.Literal(code),
      message: Type.String({ description: 'what went wrong, for people' }),
      ...ERROR_CATALOGUE[code].fields,
    },
    { additionalProperties: false },
  )

const EXAMPLE_NOW = new Date('2026-05-07T10:20:30.000Z')

/** The example of each error the gate or any request can answer, built by the code that answers it. */
const COMMON_ERRORS: Partial<Record<ErrorCode, AppError>> = {
  auth_required: KEY_REFUSALS.noKey,
  invalid_key: KEY_REFUSALS.revoked,
  tier_required: KEY_REFUSALS.freeTier,
  scope_denied: scopeDenied('write', ['read']),
  rate_limit: rateLimitExceeded(rateDecision(100, 100, false, EXAMPLE_NOW)),
  service_unavailable: rateLimiterUnavailable(),
  invalid_request: hostRefused(),
  payload_too_large: payloadTooLarge(),
  internal: internalError(),
}

/** Errors the gate answers on a route needing a key, and errors any request can meet. */
const KEY_ERRORS: readonly ErrorCode[] = ['auth_required', 'invalid_key', 'tier_required', 'scope_denied', 'rate_limit', 'service_unavailable']
const ANY_REQUEST_ERRORS: readonly ErrorCode[] = ['invalid_request', 'internal']

// ---- headers -----------------------------------------------------------------------------------

const header = (description: string, schema: TSchema) => ({ description, schema })
const REQUEST_ID = { 'X-Request-Id': header('identifies the request in the server log; a sane incoming one is echoed', Type.String()) }
const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': header('requests allowed per UTC hour (absent for admin keys)', Type.Integer()),
  'X-RateLimit-Remaining': header('requests left this hour (absent for admin keys)', Type.Integer()),
  'X-RateLimit-Reset': header('unix seconds of the next UTC hour, when the counter resets (absent for admin keys)', Type.Integer()),
  'RateLimit-Policy': header(
    'the quota policy, per draft-ietf-httpapi-ratelimit-headers (a structured field): `"hour";q=LIMIT;w=3600`, LIMIT requests per 3600-second window (absent for admin keys)',
    Type.String({ pattern: '^"hour";q=[0-9]+;w=3600$', examples: ['"hour";q=1000;w=3600'] }),
  ),
  RateLimit: header(
    'the counter, per draft-ietf-httpapi-ratelimit-headers: `"hour";r=REMAINING;t=SECONDS`, the same remaining as X-RateLimit-Remaining and the seconds until it resets (absent for admin keys)',
    Type.String({ pattern: '^"hour";r=[0-9]+;t=[0-9]+$', examples: ['"hour";r=999;t=1234'] }),
  ),
}
/** The validator of a GET's answer and what it varies with (src/http/finish.ts). */
const VALIDATOR_HEADERS = {
  ETag: header('a strong validator of the body (one per content coding): send it back in If-None-Match to get 304 while the answer is the same', Type.String()),
  Vary: header('`Accept-Encoding` on answers of 1 KiB or more, which are compressed (br or gzip) when the client accepts it', Type.String()),
}
/** The request header of a conditional GET. */
const IF_NONE_MATCH = {
  name: 'If-None-Match',
  in: 'header',
  required: false,
  description: 'ETags of answers the client holds (or `*`): when one is the current answer\'s, the answer is 304 Not Modified without a body',
  schema: { type: 'string' },
}
/** What each header an error may set (ERROR_CATALOGUE's `headers`) means, in the order the document lists them. */
const ERROR_HEADERS: Record<string, ReturnType<typeof header>> = {
  ...RATE_LIMIT_HEADERS,
  'Retry-After': header('seconds to wait before retrying', Type.Integer()),
  Allow: header('the methods the path takes', Type.String()),
}

/** The headers of a status's answers: X-Request-Id, and every header the catalogue gives one of its codes. */
function errorHeaders(codes: readonly ErrorCode[]) {
  const set = new Set(codes.flatMap((code) => ERROR_CATALOGUE[code].headers ?? []))
  return { ...REQUEST_ID, ...Object.fromEntries(Object.entries(ERROR_HEADERS).filter(([name]) => set.has(name))) }
}

// ---- the document ------------------------------------------------------------------------------

type RouteEntry = { method: string; path: string; hooks?: { detail?: Record<string, unknown> } }

/** A union of string constants, as TypeBox writes it, becomes an `enum` (what docs and generators render best). */
function enums(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(enums)
  if (schema === null || typeof schema !== 'object') return schema
  const { anyOf, ...rest } = schema as { anyOf?: unknown[] } & Record<string, unknown>
  const constants = anyOf?.every((member) => typeof (member as { const?: unknown }).const === 'string')
  if (anyOf && constants && anyOf.length > 0) return { type: 'string', enum: anyOf.map((member) => (member as { const: string }).const), ...rest }
  return Object.fromEntries(Object.entries(anyOf ? { ...rest, anyOf } : rest).map(([key, value]) => [key, enums(value)]))
}

/** A TypeBox schema as plain JSON Schema in its wire form: TypeBox's symbols dropped, string unions as enums. */
const json = (schema: unknown) => enums(JSON.parse(JSON.stringify(wireForm(schema)))) as Record<string, unknown>

function parameters(schema: TObject | undefined, where: 'query' | 'path' | 'header') {
  if (!schema) return []
  const required = new Set(schema.required ?? [])
  return Object.entries(schema.properties).map(([name, property]) => {
    // The schema keeps its examples (for a value accepted in any letter case: its canonical spellings);
    // a number in a path or query string is published as the text the server reads (`parameterText`).
    const { description, ...rest } = json(where === 'header' ? property : parameterText(property))
    const examples = rest.examples
    return {
      name,
      in: where,
      required: where === 'path' || required.has(name),
      ...(description ? { description } : {}),
      schema: rest,
      ...(Array.isArray(examples) && examples.length > 0 ? { example: examples[0] } : {}),
    }
  })
}

/** Name of an error's body schema and example in `components`, e.g. `RateLimitError`. */
const componentName = (code: ErrorCode) => `${code.replace(/(^|_)([a-z])/g, (_, __, letter: string) => letter.toUpperCase())}Error`

/** The examples of `code` in an operation: its own, else the common one (a reference, noted in `referenced`). */
function examplesOf(code: ErrorCode, own: readonly AppError[], referenced: Set<ErrorCode>): [string, unknown][] {
  const mine = own.filter((error) => error.code === code)
  if (mine.length > 0) return mine.map((error, i) => [i === 0 ? code : `${code}_${i + 1}`, { value: error.body() }])
  if (!COMMON_ERRORS[code]) throw new Error(`no example of ${code}: list the error as built by the route, not its code`)
  referenced.add(code)
  return [[code, { $ref: `#/components/examples/${componentName(code)}` }]]
}

function errorResponses(codes: readonly ErrorCode[], own: readonly AppError[], referenced: Set<ErrorCode>) {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of codes) byStatus.set(httpStatus[code], [...(byStatus.get(httpStatus[code]) ?? []), code])
  const ref = (code: ErrorCode) => ({ $ref: `#/components/schemas/${componentName(code)}` })
  return Object.fromEntries(
    [...byStatus].sort(([a], [b]) => a - b).map(([status, group]) => [
      String(status),
      {
        description: group.join(' | '),
        headers: errorHeaders(group),
        content: {
          'application/json': {
            schema: group.length === 1 ? ref(group[0]!) : { oneOf: group.map(ref) },
            examples: Object.fromEntries(group.flatMap((code) => examplesOf(code, own, referenced))),
          },
        },
      },
    ]),
  )
}

/** `/api/v1/zone/:slug` → `/api/v1/zone/{slug}` */
const openApiPath = (path: string) => path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}')

/** The errors an operation can answer: every request's, the gate's when it needs a key, and its own. */
function errorsOf(access: Access, spec: OperationSpec): ErrorCode[] {
  const own = spec.errors.map((error) => (typeof error === 'string' ? error : error.code))
  return [...new Set([...ANY_REQUEST_ERRORS, ...(access !== 'public' ? KEY_ERRORS : []), ...own])]
}

function operationOf(method: string, access: Access, spec: OperationSpec, referenced: Set<ErrorCode>) {
  const own = spec.errors.filter((error): error is AppError => error instanceof AppError)
  const needsKey = access !== 'public'
  // An operation's own headers: its 304 has them too (the 200's headers, without the body).
  const ownHeaders = Object.fromEntries(Object.entries(spec.okHeaders ?? {}).map(([name, description]) => [name, header(description, Type.String())]))
  return {
    operationId: spec.operationId,
    tags: [spec.tag],
    summary: spec.summary,
    description: spec.description,
    security: needsKey ? [{ [SECURITY_SCHEME]: [access] }] : [],
    ...(needsKey ? { 'x-required-scope': access } : {}),
    parameters: [
      ...parameters(spec.inputs?.params, 'path'),
      ...parameters(spec.inputs?.query, 'query'),
      ...parameters(spec.headers, 'header'),
      ...(method === 'get' && !spec.okMedia ? [IF_NONE_MATCH] : []),
    ],
    ...(spec.body
      ? {
          requestBody: {
            required: true,
            ...(spec.body.description ? { description: spec.body.description } : {}),
            content: {
              'application/json': {
                schema: json(spec.body.schema),
                ...(spec.body.examples ? { examples: Object.fromEntries(Object.entries(spec.body.examples).map(([name, value]) => [name, { value }])) } : {}),
              },
            },
          },
        }
      : {}),
    responses: {
      [String(spec.okStatus ?? 200)]: {
        description: spec.okStatus === 201 ? 'created' : 'success',
        headers: {
          ...REQUEST_ID,
          ...(needsKey ? RATE_LIMIT_HEADERS : {}),
          ...(method === 'get' && !spec.okMedia ? VALIDATOR_HEADERS : {}),
          ...ownHeaders,
        },
        content: spec.okMedia
          ? Object.fromEntries(Object.entries(spec.okMedia).map(([type, media]) => [type, { schema: json(media.schema), ...('example' in media ? { example: media.example } : {}) }]))
          : { 'application/json': { schema: json(spec.ok), examples: { success: { value: spec.okExample } } } },
      },
      ...(method === 'get' && !spec.okMedia
        ? { '304': { description: 'not modified: If-None-Match named the current ETag; no body', headers: { ...REQUEST_ID, ...(needsKey ? RATE_LIMIT_HEADERS : {}), ...VALIDATOR_HEADERS, ...ownHeaders } } }
        : {}),
      ...errorResponses(errorsOf(access, spec), own, referenced),
    },
  }
}

export type OpenApiDocument = Record<string, unknown> & { paths: Record<string, Record<string, unknown>> }

/** The OpenAPI 3.1 document of every route that declares an operation, in route-table order. */
export function openApiDocument(routes: readonly RouteEntry[], info: { version: string }): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {}
  const codes = new Set<ErrorCode>()
  const referenced = new Set<ErrorCode>()
  for (const route of routes) {
    const spec = route.hooks?.detail?.[OPERATION_EXTENSION] as OperationSpec | undefined
    if (!spec) continue
    const path = openApiPath(route.path)
    const access = route.hooks?.detail?.[ACCESS_EXTENSION] as Access
    for (const code of errorsOf(access, spec)) codes.add(code)
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operationOf(route.method.toLowerCase(), access, spec, referenced) }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Mirador API',
      version: info.version,
      // Not open source: used under a subscription. An SPDX reference to a licence of our own (no public URL to give).
      license: { name: 'Proprietary: used under a Mirador API subscription', identifier: 'LicenseRef-Mirador-Proprietary' },
      summary: 'Real-estate market intelligence for GT, SV, HN, CR, BZ, DO, PA and BR',
      description: [
        [
          'Zone price statistics, verified broker listings and AI-written briefings.',
          'Every request needs `Authorization: Bearer <API_KEY>` and the scope its operation names (`x-required-scope`).',
          'Checks run in this order, and the first that fails answers: auth_required → invalid_key → tier_required →',
          'scope_denied → rate_limit → the operation’s own errors. Every error is `{ok: false, error, message}`',
          'with a stable `error` code, and every response carries `X-Request-Id`. A path under /api/v1 that no',
          'operation here serves answers 404 not_found (after the key checks); so does a path listed here written',
          'with a trailing slash (`/api/v1/zones/`): each resource has one URL.',
        ],
        [
          'A path listed here, asked with a method it does not list (HEAD included), answers 405',
          'method_not_allowed after the key checks, with an `Allow` header naming its methods:',
          `\`${JSON.stringify(methodNotAllowed('DELETE', 'GET').body())}\` (\`DELETE /api/v1/zones\`, \`Allow: GET\`).`,
        ],
        [
          'Query strings: a parameter given more than once is refused (400); unknown parameters are ignored.',
          'Integers are written in decimal digits without sign or leading zeros (`0`, `20`), amounts as decimal',
          'text (`150000`, `1999.99`; not `1e5`): their schemas are that text, a pattern admitting exactly the values',
          'the server accepts. Values whose schema is a pattern of letters in both cases (`country`,',
          '`zone`, `operation`, `property_type`, `sort`) are accepted in any letter case and answered in the',
          'canonical spelling their description lists. A zone is named the same way wherever a request names one',
          '(the path of /zone/{slug}, `zone` of /listings, `zone` of a briefing body): by its name `Zona 3` or its',
          'slug `zona-3`; answers give both (`zone`, `slug`). Every bad parameter or body field is named at once in `details`.',
        ],
      ]
        .map((paragraph) => paragraph.join(' '))
        .join('\n\n'),
    },
    servers: [{ url: '/', description: 'this server' }],
    tags: [
      { name: 'Account', description: 'the key, its tier, limits and quota' },
      { name: 'Market', description: 'zone statistics and the verified broker inventory' },
      { name: 'Sync', description: 'the verified broker inventory whole as of a cursor, and every change after it' },
      { name: 'Briefings', description: 'AI-written briefings for five personas' },
      { name: 'Webhooks', description: 'listing changes and zone alerts pushed to your URL, signed, in order, retried for 24 hours' },
    ],
    paths,
    components: {
      schemas: Object.fromEntries([...codes].map((code) => [componentName(code), json(errorBodySchema(code))])),
      examples: Object.fromEntries([...referenced].map((code) => [componentName(code), { value: COMMON_ERRORS[code]!.body() }])),
      securitySchemes: {
        [SECURITY_SCHEME]: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'mrd_ + 38 characters',
          description: 'API key issued by an operator; scopes `read` and `write`. Pro tier or higher.',
        },
      },
    },
  }
}
