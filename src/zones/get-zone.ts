import { ZONE_EXAMPLE } from './examples.ts'
import { zoneNumberOfSlug } from '../domain/market/zone-name.ts'
import { ZoneDetailResponse } from '../domain/market/zone-figures.ts'
import { jsonBytes } from '../http/errors.ts'
import { httpInputs } from '../http/inputs.ts'
import { refusalOf } from '../http/openapi.ts'
import { defineOperation } from '../http/operation.ts'
import { ReadyBytes } from '../shared/ready-bytes.ts'
import { type CountryZoneFacts, zoneDetailAt, zoneFactsChangeAt } from '../domain/market/zone-statistics.ts'
import { SlugParams, slugOf, ZoneQuery, type ZoneDeps, zoneNotFound } from './inputs.ts'
import { answeredFrom, PROVENANCE_HEADERS } from '../http/provenance.ts'
import { asOfRangeChecks, asOfProblems, fromOneState, instantAsked, preparedOf, zoneAsOf } from './point-in-time.ts'

const inputs = httpInputs({ params: SlugParams, query: ZoneQuery, refine: ({ as_of }) => asOfProblems(as_of) })

/** GET /zone/{slug}: one zone in detail, prepared like GET /zones (src/zones/list-zones.ts). */
export const getZone = defineOperation({
  method: 'GET',
  path: '/zone/:slug',
  access: 'read',
  operationId: 'getZone',
  tag: 'Market',
  summary: 'One zone in detail: breakdowns by property type, bedrooms and operation, 30-day change, source mix',
  description:
    'The figures of one zone of a country, with its breakdowns; with as_of, as the market stood at that instant; a zone the country does not have (then) is 404.',
  inputs,
  checkedWhenRefused: (deps: ZoneDeps) => asOfRangeChecks(deps.zones, deps.clock),
  ok: ZoneDetailResponse,
  okExample: ZONE_EXAMPLE,
  okHeaders: PROVENANCE_HEADERS,
  errors: [refusalOf(() => inputs.read('?country=xx', { slug: 'zona-01' })), zoneNotFound('zona-99', 'GT')],
  handler(deps: ZoneDeps) {
    // The zones a country has, serialised once per prepared figures (a 404 is not kept): no bound is needed.
    const ready = new ReadyBytes<CountryZoneFacts>(Number.POSITIVE_INFINITY)
    return async ({ set, params, query: { country, as_of } }) => {
      const slug = slugOf(params)
      const now = deps.clock()
      if (as_of === undefined) {
        const { value: facts, at } = await preparedOf(deps.zones, country)
        // Every spelling of a zone is read as its one name, hence one slug.
        const bytes = ready.get(facts, `${country}/${slug}`, now.getTime(), () => {
          const detail = zoneDetailAt(facts, slug, now)
          return detail && { body: { ok: true as const, ...detail }, until: zoneFactsChangeAt([facts.get(zoneNumberOfSlug(slug)!)!], now.getTime()) }
        })
        if (!bytes) throw zoneNotFound(slug, country)
        answeredFrom(set, at)
        return jsonBytes(set, bytes)
      }
      const at = (await instantAsked(as_of, now, deps.zones))!
      const { value: detail, at: from } = await fromOneState(deps.zones, (view) => zoneAsOf(view, country, slug, at))
      if (!detail) throw zoneNotFound(slug, country)
      answeredFrom(set, from)
      return { ok: true as const, as_of: at.toISOString(), ...detail }
    }
  },
})
