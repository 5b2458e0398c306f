import { ZONES_EXAMPLE } from './examples.ts'
import { ZonesResponse } from '../domain/market/zone-figures.ts'
import { jsonBytes } from '../http/errors.ts'
import { httpInputs } from '../http/inputs.ts'
import { refusalOf } from '../http/openapi.ts'
import { defineOperation } from '../http/operation.ts'
import { ReadyBytes } from '../shared/ready-bytes.ts'
import { type CountryZoneFacts, zoneFactsChangeAt, zonesAt } from '../domain/market/zone-statistics.ts'
import { ZoneQuery, type ZoneDeps } from './inputs.ts'
import { answeredFrom, PROVENANCE_HEADERS } from '../http/provenance.ts'
import { asOfRangeChecks, asOfProblems, fromOneState, instantAsked, preparedOf, zonesAsOf } from './point-in-time.ts'

const inputs = httpInputs({ query: ZoneQuery, refine: ({ as_of }) => asOfProblems(as_of) })

/**
 * GET /zones: every zone of a country, from the prepared zone answers (as bytes, serialised once per
 * prepared figures until days on market change), or, for a past instant (`as_of`), from the read
 * model's history (src/zones/point-in-time.ts).
 */
export const listZones = defineOperation({
  method: 'GET',
  path: '/zones',
  access: 'read',
  operationId: 'listZones',
  tag: 'Market',
  summary: 'Statistics of every zone of a country, by zone number',
  description:
    'Every zone ever seen in the country, by zone number: active listings, medians (price, price per m², days on market) and the 30-day change; with as_of, as the market stood at that instant.',
  inputs,
  checkedWhenRefused: (deps: ZoneDeps) => asOfRangeChecks(deps.zones, deps.clock),
  ok: ZonesResponse,
  okExample: ZONES_EXAMPLE,
  okHeaders: PROVENANCE_HEADERS,
  errors: [refusalOf(() => inputs.read('?country=MX')), refusalOf(() => inputs.read('?as_of=2026-02-30T00:00:00Z'))],
  handler(deps: ZoneDeps) {
    // A country's list at the request time, serialised once per prepared figures (not for as_of: any
    // instant may be asked). Kept for each country, so no bound is needed.
    const ready = new ReadyBytes<CountryZoneFacts>(Number.POSITIVE_INFINITY)
    return async ({ set, query: { country, as_of } }) => {
      const now = deps.clock()
      if (as_of === undefined) {
        const { value: facts, at } = await preparedOf(deps.zones, country)
        answeredFrom(set, at)
        const bytes = ready.get(facts, country, now.getTime(), () => {
          const zones = zonesAt(facts, now)
          return { body: { ok: true as const, country, count: zones.length, zones }, until: zoneFactsChangeAt(facts.values(), now.getTime()) }
        })
        return jsonBytes(set, bytes!)
      }
      const at = (await instantAsked(as_of, now, deps.zones))!
      const { value: zones, at: from } = await fromOneState(deps.zones, (view) => zonesAsOf(view, country, at))
      answeredFrom(set, from)
      return { ok: true as const, country, as_of: at.toISOString(), count: zones.length, zones }
    }
  },
})
