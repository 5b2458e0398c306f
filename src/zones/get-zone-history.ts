import { ZONE_HISTORY_EXAMPLE } from './examples.ts'
import { ZoneHistoryResponse } from '../domain/market/zone-figures.ts'
import { httpInputs } from '../http/inputs.ts'
import { refusalOf } from '../http/openapi.ts'
import { defineOperation } from '../http/operation.ts'
import { HistoryQuery, SlugParams, slugOf, type ZoneDeps, zoneNotFound } from './inputs.ts'
import { answeredFrom, PROVENANCE_HEADERS } from '../http/provenance.ts'
import { asOfRangeChecks, asOfProblems, fromOneState, instantAsked, zoneHistory } from './point-in-time.ts'

const inputs = httpInputs({ params: SlugParams, query: HistoryQuery, refine: ({ as_of }) => asOfProblems(as_of) })

/** GET /zone/{slug}/history: the zone's figures at the end of each month, from the read model's history (src/zones/point-in-time.ts). */
export const getZoneHistory = defineOperation({
  method: 'GET',
  path: '/zone/:slug/history',
  access: 'read',
  operationId: 'getZoneHistory',
  tag: 'Market',
  summary: 'Monthly history of one zone: its figures at the end of each calendar month, oldest first',
  description:
    "For each of the last `months` calendar months (UTC), the current one included, the zone's figures at the month's end (at the request time, or as_of, for the current month) by the definitions of /zone/{slug}; months before the zone's first listing say so (`listed: false`).",
  inputs,
  checkedWhenRefused: (deps: ZoneDeps) => asOfRangeChecks(deps.zones, deps.clock),
  ok: ZoneHistoryResponse,
  okExample: ZONE_HISTORY_EXAMPLE,
  okHeaders: PROVENANCE_HEADERS,
  errors: [refusalOf(() => inputs.read('?months=37', { slug: 'zona-1' })), zoneNotFound('zona-99', 'GT')],
  handler: (deps: ZoneDeps) => async ({ set, params, query: { country, months, as_of } }) => {
    const slug = slugOf(params)
    const at = (await instantAsked(as_of, deps.clock(), deps.zones)) ?? deps.clock()
    const { value: found, at: from } = await fromOneState(deps.zones, (view) => zoneHistory(view, country, slug, months, at))
    if (!found) throw zoneNotFound(slug, country)
    answeredFrom(set, from)
    return { ok: true as const, zone: found.zone, slug: found.slug, country, as_of: at.toISOString(), months, history: found.history }
  },
})
