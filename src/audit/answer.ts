import { Elysia } from 'elysia'
import { type BuildProgress, type RecordedCut, withListingsAsRecorded } from '../../projections/listings/as-recorded.ts'
import { ListingInventory } from '../../projections/listings/inventory.ts'
import type { Provenance } from '../../projections/engine/provenance.ts'
import { listingRoutes } from '../listings/routes.ts'
import { countryZoneFacts, countryZoneFactsAt, firstListingEvent } from '../../projections/listings/zone-rows.ts'
import type { Db } from '../db/port.ts'
import type { ListingsTables } from '../../projections/listings/projection.ts'
import { formatApiKey, hashApiKey } from '../domain/keys/api-key.ts'
import type { EventStore } from '../eventstore/port.ts'
import type { KeyLookup } from '../http/authenticate.ts'
import { errorPlugin } from '../http/errors.ts'
import { gate } from '../http/gate.ts'
import { defaultRateLimits, type RateLimiter } from '../ratelimit/port.ts'
import { fail } from '../shared/errors.ts'
import type { ZoneAnswers } from '../zones/point-in-time.ts'
import type { ReadyZones } from '../../projections/listings/ready-zones.ts'
import { zoneRoutes } from '../zones/routes.ts'
import { estimateRoutes } from '../estimates/routes.ts'
import { comparablesAt, publicComparables } from '../../projections/listings/comparable-rows.ts'
import { candidatesOf, estimateOf, type Subject } from '../domain/market/estimate.ts'

/** The GET paths `audit answer` reproduces: the zone statistics, estimates and listings, now and as of a past instant. */
const ANSWERED = /^\/api\/v1\/(zones|zone\/[^/?]+(\/history)?|estimate|listings)(\?.*)?$/

export type RecordedAnswer = { path: string; until: string; through: number | null; status: number; body: string }

/**
 * What the API answered (would have answered) to GET `path` at `until`, from the events recorded by
 * then, or from the events up to the log position `through` when given (an answer's
 * `Mirador-Position`; `until` is then only the time of the request): the listings read model rebuilt
 * from them alone, the routes themselves answering with `until` as the time of the request, the body
 * as the bytes sent. The caller's key does not change these answers, so the route is called with an
 * admin key known only here.
 */
export async function answerAsRecorded(
  db: Db,
  store: EventStore,
  request: { path: string; until: Date; through?: number },
  progress?: (done: BuildProgress) => void,
): Promise<RecordedAnswer> {
  const { path, until, through } = request
  if (!ANSWERED.test(path)) {
    throw fail.invalidRequest(
      `audit answer reproduces GET /api/v1/zones, /api/v1/zone/{slug}, /api/v1/zone/{slug}/history, /api/v1/estimate and /api/v1/listings, not ${path}`,
    )
  }
  const cut: RecordedCut = through === undefined ? { until } : { through }
  return withListingsAsRecorded(
    db,
    store,
    cut,
    async (t, builtThrough) => {
      const listings = path.startsWith('/api/v1/listings') ? { position: builtThrough, generation: 'audit' } : null
      const { app, authorization } = await answeringApp(db, t, until, listings)
      const response = await app.handle(new Request(`http://audit${path}`, { headers: { authorization } }))
      return { path, until: until.toISOString(), through: through ?? null, status: response.status, body: await response.text() }
    },
    progress,
  )
}

/** An admin key known only here, and a gate that lets it read without counting it (an admin is never counted). */
function adminOnlyGate(clock: () => Date) {
  const key = formatApiKey('AuditAnswerKey000000000000000000')
  const keys: KeyLookup = {
    key: (hash) => (hash === hashApiKey(key) ? { keyId: 'key_auditanswer0', ownerId: 'audit', scopes: ['read'], status: 'active', expiresAt: null } : undefined),
    owner: (id) => (id === 'audit' ? { tier: 'admin', status: 'active' } : undefined),
  }
  const uncounted: RateLimiter = {
    hit: () => {
      throw new Error('audit answer: an admin request was counted')
    },
    close: async () => {},
  }
  return { guard: gate({ keys, limiter: uncounted, limits: defaultRateLimits, clock, allow: () => 'GET' }), authorization: `Bearer ${key}` }
}

/**
 * The API's own routes answering from the read model in `t` at the time `until`; /listings only when
 * asked (`listings`: what its tables were built from), since it first reads the index of every public listing.
 */
async function answeringApp(db: Db, t: ListingsTables, until: Date, listings: Provenance | null) {
  const zones: ZoneAnswers & Pick<ReadyZones, 'facts' | 'comparablesAt'> = {
    comparablesAt: (country, zoneNo, operation, type, at) => comparablesAt(db, t, country, zoneNo, operation, type, at),
    facts: (country) => countryZoneFacts(db, t, country),
    factsAt: (country, at, zoneNo, figures) => countryZoneFactsAt(db, t, country, at, zoneNo, figures),
    firstEvent: () => firstListingEvent(db, t),
  }
  const inventory = {
    estimate: async (country: string, zoneNo: number, operation: string, type: string, subject: Subject) =>
      estimateOf(candidatesOf(await publicComparables(db, t, country, zoneNo, operation, type)), subject),
  }
  const clock = () => until
  const { guard, authorization } = adminOnlyGate(clock)
  const listed = listings ? await ListingInventory.ofTables(db, t, listings) : null
  const app = new Elysia().use(errorPlugin({ info() {}, error() {} })).group('/api/v1', (api) => {
    const answering = api.use(zoneRoutes({ gate: guard, zones, clock })).use(estimateRoutes({ gate: guard, zones, inventory, clock }))
    return listed ? answering.use(listingRoutes({ gate: guard, inventory: listed, clock })) : answering
  })
  return { app, authorization }
}
