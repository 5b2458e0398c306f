import { Elysia } from 'elysia'
import { withListingsAsRecorded } from '../../projections/listings/as-recorded.ts'
import { countryZoneFacts, countryZoneFactsAt, firstListingEvent } from '../../projections/listings/zone-rows.ts'
import type { Db } from '../db/port.ts'
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

/** The GET paths `audit answer` reproduces: the zone statistics and estimates, now and as of a past instant. */
const ANSWERED = /^\/api\/v1\/(zones|zone\/[^/?]+(\/history)?|estimate)(\?.*)?$/

export type RecordedAnswer = { path: string; until: string; status: number; body: string }

/**
 * What the API answered (would have answered) to GET `path` at `until`, from the events recorded by
 * then: the listings read model rebuilt from them alone, the zone routes themselves answering with
 * `until` as the time of the request, the body as the bytes sent. The caller's key does not change
 * a zone answer, so the route is called with an admin key known only here.
 */
export async function answerAsRecorded(db: Db, store: EventStore, path: string, until: Date): Promise<RecordedAnswer> {
  if (!ANSWERED.test(path)) {
    throw fail.invalidRequest(`audit answer reproduces GET /api/v1/zones, /api/v1/zone/{slug}, /api/v1/zone/{slug}/history and /api/v1/estimate, not ${path}`)
  }
  return withListingsAsRecorded(db, store, until, async (sql, t) => {
    const zones: ZoneAnswers & Pick<ReadyZones, 'facts' | 'comparablesAt'> = {
      comparablesAt: (country, zoneNo, operation, type, at) => comparablesAt(sql, t, country, zoneNo, operation, type, at),
      facts: (country) => countryZoneFacts(sql, t, country),
      factsAt: (country, at, zoneNo, figures) => countryZoneFactsAt(sql, t, country, at, zoneNo, figures),
      firstEvent: () => firstListingEvent(sql, t),
    }
    const key = formatApiKey('AuditAnswerKey000000000000000000')
    const keys: KeyLookup = {
      key: (hash) => (hash === hashApiKey(key) ? { keyId: 'key_auditanswer0', ownerId: 'audit', scopes: ['read'], status: 'active', expiresAt: null } : undefined),
      owner: (id) => (id === 'audit' ? { tier: 'admin', status: 'active' } : undefined),
    }
    // An admin key is never counted: the gate does not call the limiter.
    const uncounted: RateLimiter = {
      hit: () => {
        throw new Error('audit answer: an admin request was counted')
      },
      close: async () => {},
    }
    const clock = () => until
    const app = new Elysia()
      .use(errorPlugin({ info() {}, error() {} }))
      .group('/api/v1', (api) => {
        const guard = gate({ keys, limiter: uncounted, limits: defaultRateLimits, clock, allow: () => 'GET' })
        const inventory = {
          estimate: async (country: string, zoneNo: number, operation: string, type: string, subject: Subject) =>
            estimateOf(candidatesOf(await publicComparables(sql, t, country, zoneNo, operation, type)), subject),
        }
        return api.use(zoneRoutes({ gate: guard, zones, clock })).use(estimateRoutes({ gate: guard, zones, inventory, clock }))
      })
    const response = await app.handle(new Request(`http://audit${path}`, { headers: { authorization: `Bearer ${key}` } }))
    return { path, until: until.toISOString(), status: response.status, body: await response.text() }
  })
}
