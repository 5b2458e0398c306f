import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import type { Country } from '../domain/market/vocabulary.ts'
import { ZONE_SLUG_PATTERN } from '../domain/market/zone-name.ts'
import type { Gate } from '../http/gate.ts'
import { httpInputs } from '../http/inputs.ts'
import { operation, refusalOf } from '../http/openapi.ts'
import { CountryParameter } from '../http/parameters.ts'
import { echo, notFound } from '../shared/errors.ts'
import { expecting } from '../shared/input-schema.ts'
import type { Clock } from '../shared/random.ts'
import type { ReadyZones } from '../../projections/listings/ready-zones.ts'
import { ZoneDetailResponse, ZonesResponse } from '../domain/market/zone-figures.ts'

const CountryQuery = Type.Object({ country: CountryParameter })
const SlugParams = Type.Object({
  slug: expecting(
    Type.String({ pattern: ZONE_SLUG_PATTERN, description: 'zone, form zona-N (lower case, N from 1, no leading zeros)', examples: ['zona-3'] }),
    'Expected zona-N, e.g. zona-10',
  ),
})

const zonesInputs = httpInputs({ query: CountryQuery })
const zoneInputs = httpInputs({ params: SlugParams, query: CountryQuery })

/** The 404 of a zone the country does not have. */
export const zoneNotFound = (slug: string, country: Country) => notFound(`no zone ${echo(slug)} in ${country}`)

/** GET /zones and GET /zone/:slug, relative to the API prefix, answered from the prepared zone answers. */
export function zoneRoutes(deps: { gate: Gate; zones: ReadyZones; clock: Clock }) {
  return new Elysia({ name: 'zones' })
    .use(deps.gate)
    .get(
      '/zones',
      async ({ request }) => {
        const { country } = zonesInputs.read(request.url).query
        const zones = await deps.zones.zones(country, deps.clock())
        return { ok: true as const, country, count: zones.length, zones }
      },
      {
        scope: 'read',
        detail: operation({
          operationId: 'listZones',
          tag: 'Market',
          summary: 'Statistics of every zone of a country, by zone number',
          description: 'Every zone ever seen in the country, by zone number: active listings, medians (price, price per m², days on market) and the 30-day change.',
          inputs: zonesInputs,
          ok: ZonesResponse,
          errors: [refusalOf(() => zonesInputs.read('?country=MX'))],
        }),
      },
    )
    .get(
      '/zone/:slug',
      async ({ request, params }) => {
        const { params: { slug }, query: { country } } = zoneInputs.read(request.url, params)
        const detail = await deps.zones.zone(country, slug, deps.clock())
        if (!detail) throw zoneNotFound(slug, country)
        return { ok: true as const, ...detail }
      },
      {
        scope: 'read',
        detail: operation({
          operationId: 'getZone',
          tag: 'Market',
          summary: 'One zone in detail: breakdowns by property type, bedrooms and operation, 30-day change, source mix',
          description: 'The figures of one zone of a country, with its breakdowns; a zone the country does not have is 404.',
          inputs: zoneInputs,
          ok: ZoneDetailResponse,
          errors: [refusalOf(() => zoneInputs.read('?country=xx', { slug: 'zona-01' })), zoneNotFound('zona-99', 'GT')],
        }),
      },
    )
}
