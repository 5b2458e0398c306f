import { type AnyElysia, Elysia } from 'elysia'
import { BRIEFING_OPERATIONS } from './briefings/routes.ts'
import type { BriefingService } from './briefings/service.ts'
import { WEBHOOK_OPERATIONS } from './webhooks/routes.ts'
import type { WebhookService } from './webhooks/service.ts'
import { getHealth } from './health/get-health.ts'
import { probeRoutes, type QuotaReader, type ServerHealth } from './health/routes.ts'
import type { ListingInventory } from '../projections/listings/inventory.ts'
import { LISTING_OPERATIONS, SYNC_OPERATIONS } from './listings/routes.ts'
import type { ListingFeed } from './listings/feed-deps.ts'
import { ZONE_OPERATIONS } from './zones/routes.ts'
import { ESTIMATE_OPERATIONS } from './estimates/routes.ts'
import type { ReadyZones } from '../projections/listings/ready-zones.ts'
import { docsRoutes } from './docs/routes.ts'
import type { KeyLookup } from './http/authenticate.ts'
import type { RateLimiter, RateLimits } from './ratelimit/port.ts'
import type { Clock } from './shared/random.ts'
import type { Logger } from './runtime/log.ts'
import { accessLog } from './http/access-log.ts'
import { errorPlugin, hostRefused, JSON_TYPE } from './http/errors.ts'
import { type Gate, gate } from './http/gate.ts'
import { openApiDocument } from './http/openapi.ts'
import { allowedMethods, API_PREFIX, answerUnmatched, assertAccessDeclared } from './http/routing.ts'
import { finishedAnswers } from './http/finish.ts'
import { requestMetrics } from './http/metrics.ts'
import { mountOperations, type Operation } from './http/operation.ts'
import { requestIdSource } from './shared/request-ids.ts'
import type { Metrics } from './metrics/port.ts'

export type ApiDeps = {
  keys: KeyLookup
  limiter: RateLimiter
  limits: RateLimits
  clock: Clock
  log: Logger
  /** One log line per request (ACCESS_LOG); operator messages are logged regardless. */
  accessLog: boolean
  /** The prepared answers of /zones and /zone/{slug}. */
  zones: ReadyZones
  /** The public listings behind /listings, in memory. */
  inventory: ListingInventory
  /** The change feed and the export: the changes table of the listings read model, the event store's identity. */
  feed: ListingFeed
  briefings: BriefingService
  /** Webhook subscriptions, their deliveries and pings. */
  webhooks: WebhookService
  /** This month's quota usage, from memory: /health's. */
  quota: QuotaReader
  /** Dependencies and read-model lag, in memory: admin keys' /health and /readyz. */
  health?: ServerHealth
  /** Where every request is reported (METRICS_PORT); without it no hook is registered. */
  metrics?: Metrics
}

/** Version of the API contract, in the OpenAPI document. */
export const API_VERSION = '1.0.0'

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/
const newRequestId = requestIdSource()

/**
 * Every response gets `X-Request-Id` (a sane incoming one is echoed) and, unless it is a page or a
 * file (src/docs/routes.ts), the one JSON Content-Type. A request whose URL is not
 * absolute had a missing or malformed Host header (Bun then hands over only the target): it is
 * refused before routing, since Elysia reads the path from an absolute URL.
 */
const requestIds = new Elysia({ name: 'request-ids' }).onRequest(({ request, set }) => {
  const incoming = request.headers.get('x-request-id')
  set.headers['x-request-id'] = incoming && REQUEST_ID.test(incoming) ? incoming : newRequestId()
  // Elysia's default differs by runtime (Bun adds the charset, Node does not): one type everywhere.
  set.headers['content-type'] = JSON_TYPE
  if (!request.url.startsWith('http://')) {
    throw hostRefused()
  }
})

/** What the operations of the API are given, once, at start-up. */
type OperationDeps = Pick<ApiDeps, 'clock' | 'quota' | 'health' | 'zones' | 'inventory' | 'feed' | 'webhooks'> & { service: BriefingService }

/**
 * Every operation of the API, one file each (src/http/operation.ts), in the order the OpenAPI
 * document lists them. The one list: the routes, the document, the docs page and the specs that
 * go through every route are all derived from it.
 */
export const API_OPERATIONS: readonly Operation<OperationDeps>[] = [getHealth, ...ZONE_OPERATIONS, ...LISTING_OPERATIONS, ...SYNC_OPERATIONS, ...ESTIMATE_OPERATIONS, ...BRIEFING_OPERATIONS, ...WEBHOOK_OPERATIONS]

/** The API's features: its operations, mounted behind `gate`, relative to the API prefix. */
export const apiFeatures = (deps: ApiDeps, guard: Gate): AnyElysia[] => [
  mountOperations('api-operations', guard, API_OPERATIONS, {
    clock: deps.clock,
    quota: deps.quota,
    health: deps.health,
    zones: deps.zones,
    inventory: deps.inventory,
    feed: deps.feed,
    webhooks: deps.webhooks,
    service: deps.briefings,
  }),
]

/**
 * The whole HTTP API. Runtime-neutral: `app.handle(request)` works on Node; Bun serves it in main.ts.
 * Elysia's route table is the only one: each route declares its access where it is defined, the
 * gate runs on the route Elysia matched, 404/405 come from the same table, and a route that
 * declares no access stops the app from being built.
 */
export function buildApp(deps: ApiDeps, features: (guard: Gate) => AnyElysia[] = (guard) => apiFeatures(deps, guard)) {
  // The Allow of a HEAD's 405 is read from the finished route table, when a HEAD comes.
  const guard = gate({ ...deps, allow: (path) => allowedMethods(app.routes, path) })
  // The route templates, once the table is complete: the only route labels metrics may carry.
  let routes: ReadonlySet<string> = new Set()
  const app: AnyElysia = new Elysia({
    // Elysia's path = request.url from the first "/" after "http://": the authority never counts.
    handler: { standardHostname: false },
    // One URL per resource: `/api/v1/zones/` or `/livez/` is no path of the API (404), as the document says.
    strictPath: true,
  })
    .use(deps.metrics ? requestMetrics(deps.metrics, () => routes) : new Elysia({ name: 'request-metrics' }))
    .use(requestIds)
    .use(finishedAnswers())
    .use(errorPlugin(deps.log))
    .use(accessLog(deps))
    .group(API_PREFIX, (api) => features(guard).reduce((mounted, feature) => mounted.use(feature), api))
    .use(probeRoutes({ gate: guard, health: deps.health }))
  app.use(docsRoutes({ gate: guard, document: openApiDocument(app.routes, { version: API_VERSION }) }))
  answerUnmatched(app, guard)
  assertAccessDeclared(app)
  routes = new Set(app.routes.map((route) => route.path))
  return app
}

