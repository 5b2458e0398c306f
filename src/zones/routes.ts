import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import type { Country } from '../domain/market/vocabulary.ts'
import { ZONE_SLUG_PATTERN, zoneNumberOfSlug } from '../domain/market/zone-name.ts'
import type { Gate } from '../http/gate.ts'
import { httpInputs } from '../http/inputs.ts'
import { operation, refusalOf } from '../http/openapi.ts'
import { CountryParameter } from '../http/parameters.ts'
import { echo, notFound } from '../shared/errors.ts'
import { defaulted, expecting } from '../shared/input-schema.ts'
import type { Clock } from '../shared/random.ts'
import { ZoneDetailResponse, ZoneHistoryResponse, ZonesResponse } from '../domain/market/zone-figures.ts'
import { jsonBytes } from '../http/errors.ts'
import { ReadyBytes } from '../shared/ready-bytes.ts'
import type { ReadyZones } from '../../projections/listings/ready-zones.ts'
import { type CountryZoneFacts, zoneDetailAt, zoneFactsChangeAt, zonesAt } from '../domain/market/zone-statistics.ts'
import { AsOfParameter, asOfProblems, instantAsked, type ZoneAnswers, zoneAsOf, zoneHistory, zonesAsOf } from './point-in-time.ts'

/** Months of GET /zone/{slug}/history: 12 unless asked, at most 36. */
const DEFAULT_MONTHS = 12
const MAX_MONTHS = 36

const ZoneQuery = Type.Object({ country: CountryParameter, as_of: AsOfParameter })
const HistoryQuery = Type.Object({
  country: CountryParameter,
  months: defaulted(Type.Integer({ minimum: 1, maximum: MAX_MONTHS, description: 'calendar months, the current one included' }), DEFAULT_MONTHS),
  as_of: AsOfParameter,
})
const SlugParams = Type.Object({
  slug: expecting(
    Type.String({ pattern: ZONE_SLUG_PATTERN, description: 'zone, form zona-N (lower case, N from 1, no leading zeros)', examples: ['zona-3'] }),
    'Expected zona-N, e.g. zona-10',
  ),
})

const zonesInputs = httpInputs({ query: ZoneQuery, refine: ({ as_of }) => asOfProblems(as_of) })
const zoneInputs = httpInputs({ params: SlugParams, query: ZoneQuery, refine: ({ as_of }) => asOfProblems(as_of) })
const historyInputs = httpInputs({ params: SlugParams, query: HistoryQuery, refine: ({ as_of }) => asOfProblems(as_of) })

/** The 404 of a zone the country does not have. */
export const zoneNotFound = (slug: string, country: Country) => notFound(`no zone ${echo(slug)} in ${country}`)

/**
 * GET /zones, GET /zone/:slug and GET /zone/:slug/history, relative to the API prefix: answered from
 * the prepared zone answers (as bytes, serialised once per prepared figures until days on market change), or, for a past instant (`as_of`) and the history, from the read model's
 * history (src/zones/point-in-time.ts).
 */
export function zoneRoutes(deps: { gate: Gate; zones: ZoneAnswers & Pick<ReadyZones, 'facts'>; clock: Clock }) {
  // The answers at the request time, serialised once per prepared figures (not for as_of: any instant
  // may be asked). Kept: a country's list and the zones it has (a 404 is not), so no bound is needed.
  const ready = new ReadyBytes<CountryZoneFacts>(Number.POSITIVE_INFINITY)
  return new Elysia({ name: 'zones' })
    .use(deps.gate)
    .get(
      '/zones',
      async ({ request, set }) => {
        const { country, as_of } = zonesInputs.read(request.url).query
        const now = deps.clock()
        if (as_of === undefined) {
          const facts = await deps.zones.facts(country)
          const bytes = ready.get(facts, country, now.getTime(), () => {
            const zones = zonesAt(facts, now)
            return { body: { ok: true as const, country, count: zones.length, zones }, until: zoneFactsChangeAt(facts.values(), now.getTime()) }
          })
          return jsonBytes(set, bytes!)
        }
        const at = (await instantAsked(as_of, now, deps.zones))!
        const zones = await zonesAsOf(deps.zones, country, at)
        return { ok: true as const, country, as_of: at.toISOString(), count: zones.length, zones }
      },
      {
        scope: 'read',
        detail: operation({
          operationId: 'listZones',
          tag: 'Market',
          summary: 'Statistics of every zone of a country, by zone number',
          description:
            'Every zone ever seen in the country, by zone number: active listings, medians (price, price per m², days on market) and the 30-day change; with as_of, as the market stood at that instant.',
          inputs: zonesInputs,
          ok: ZonesResponse,
          errors: [refusalOf(() => zonesInputs.read('?country=MX')), refusalOf(() => zonesInputs.read('?as_of=2026-02-30T00:00:00Z'))],
        }),
      },
    )
    .get(
      '/zone/:slug',
      async ({ request, params, set }) => {
        const { params: { slug }, query: { country, as_of } } = zoneInputs.read(request.url, params)
        const now = deps.clock()
        if (as_of === undefined) {
          const facts = await deps.zones.facts(country)
          // The slug's pattern admits one spelling per zone.
          const bytes = ready.get(facts, `${country}/${slug}`, now.getTime(), () => {
            const detail = zoneDetailAt(facts, slug, now)
            return detail && { body: { ok: true as const, ...detail }, until: zoneFactsChangeAt([facts.get(zoneNumberOfSlug(slug)!)!], now.getTime()) }
          })
          if (!bytes) throw zoneNotFound(slug, country)
          return jsonBytes(set, bytes)
        }
        const at = (await instantAsked(as_of, now, deps.zones))!
        const detail = await zoneAsOf(deps.zones, country, slug, at)
        if (!detail) throw zoneNotFound(slug, country)
        return { ok: true as const, as_of: at.toISOString(), ...detail }
      },
      {
        scope: 'read',
        detail: operation({
          operationId: 'getZone',
          tag: 'Market',
          summary: 'One zone in detail: breakdowns by property type, bedrooms and operation, 30-day change, source mix',
          description:
            'The figures of one zone of a country, with its breakdowns; with as_of, as the market stood at that instant; a zone the country does not have (then) is 404.',
          inputs: zoneInputs,
          ok: ZoneDetailResponse,
          errors: [refusalOf(() => zoneInputs.read('?country=xx', { slug: 'zona-01' })), zoneNotFound('zona-99', 'GT')],
        }),
      },
    )
    .get(
      '/zone/:slug/history',
      async ({ request, params }) => {
        const { params: { slug }, query: { country, months, as_of } } = historyInputs.read(request.url, params)
        const at = (await instantAsked(as_of, deps.clock(), deps.zones)) ?? deps.clock()
        const found = await zoneHistory(deps.zones, country, slug, months, at)
        if (!found) throw zoneNotFound(slug, country)
        return { ok: true as const, zone: found.zone, slug: found.slug, country, as_of: at.toISOString(), months, history: found.history }
      },
      {
        scope: 'read',
        detail: operation({
          operationId: 'getZoneHistory',
          tag: 'Market',
          summary: 'Monthly history of one zone: its figures at the end of each calendar month, oldest first',
          description:
            "For each of the last `months` calendar months (UTC), the current one included, the zone's figures at the month's end (at the request time, or as_of, for the current month) by the definitions of /zone/{slug}; months before the zone's first listing say so (`listed: false`).",
          inputs: historyInputs,
          ok: ZoneHistoryResponse,
          errors: [refusalOf(() => historyInputs.read('?months=37', { slug: 'zona-1' })), zoneNotFound('zona-99', 'GT')],
        }),
      },
    )
}
