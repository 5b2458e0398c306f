import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { CountryParameter, countryParam, type Problems, throwIfProblems } from '../http/query-params.ts'
import { ZONE_SLUG_PATTERN } from '../domain/market/zone-name.ts'
import type { Gate } from '../http/gate.ts'
import { operation } from '../http/openapi.ts'
import { echo, notFound } from '../shared/errors.ts'
import type { Clock } from '../shared/random.ts'
import type { ReadyZones } from '../../projections/listings/ready-zones.ts'
import { ZoneDetailResponse, ZonesResponse } from '../domain/market/zone-figures.ts'

const CountryQuery = Type.Object({ country: CountryParameter })
const SlugParams = Type.Object({ slug: Type.String({ pattern: ZONE_SLUG_PATTERN, description: 'zone, form zona-N', examples: ['zona-3'] }) })
const SLUG = new RegExp(ZONE_SLUG_PATTERN)

/** GET /zones and GET /zone/:slug, relative to the API prefix, answered from the prepared zone answers. */
export function zoneRoutes(deps: { gate: Gate; zones: ReadyZones; clock: Clock }) {
  return new Elysia({ name: 'zones' })
    .use(deps.gate)
    .get(
      '/zones',
      async ({ query }) => {
        const problems: Problems = []
        const country = countryParam(query, problems)
        throwIfProblems(problems, 'query')
        const zones = await deps.zones.zones(country, deps.clock())
        return { ok: true as const, country, count: zones.length, zones }
      },
      {
        scope: 'read',
        detail: operation({
          operationId: 'listZones',
          tag: 'Market',
          summary: 'Statistics of every zone of a country, by zone number',
          query: CountryQuery,
          ok: ZonesResponse,
          errors: ['invalid_request'],
        }),
      },
    )
    .get(
      '/zone/:slug',
      async ({ params, query }) => {
        const problems: Problems = []
        if (!SLUG.test(params.slug)) problems.push({ field: 'slug', message: 'must be zona-N, e.g. zona-10' })
        const country = countryParam(query, problems)
        throwIfProblems(problems, 'request')
        const detail = await deps.zones.zone(country, params.slug, deps.clock())
        if (!detail) throw notFound(`no zone ${echo(params.slug)} in ${country}`)
        return { ok: true as const, ...detail }
      },
      {
        scope: 'read',
        detail: operation({
          operationId: 'getZone',
          tag: 'Market',
          summary: 'One zone in detail: breakdowns by property type, bedrooms and operation, 30-day change, source mix',
          params: SlugParams,
          query: CountryQuery,
          ok: ZoneDetailResponse,
          errors: ['invalid_request', 'not_found'],
        }),
      },
    )
}
