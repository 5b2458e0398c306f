import { candidatesOf, type Estimate, estimateOf } from '../domain/market/estimate.ts'
import { EstimateResponse } from '../domain/market/estimate-figures.ts'
import { zoneName, zoneNumberOfName, zoneSlug } from '../domain/market/zone-name.ts'
import { refusalOf } from '../http/openapi.ts'
import { defineOperation } from '../http/operation.ts'
import type { Clock } from '../shared/random.ts'
import type { ListingInventory } from '../../projections/listings/inventory.ts'
import type { ReadyZones } from '../../projections/listings/ready-zones.ts'
import { zoneNotFound } from '../zones/inputs.ts'
import { answeredFrom, PROVENANCE_HEADERS } from '../http/provenance.ts'
import { asOfRangeChecks, fromOneState, instantAsked, preparedOf, type ZoneAnswers } from '../zones/point-in-time.ts'
import type { Provenance } from '../../projections/engine/provenance.ts'
import { ESTIMATE_EXAMPLE } from './examples.ts'
import { estimateInputs } from './estimate-query.ts'

/** What GET /estimate reads: the public listings now (inventory) and as of an instant (the zones' history), the zones a country has, and the time. */
export type EstimateDeps = {
  /** With `estimated` (the live inventory's), what the estimate was computed from. */
  inventory: Pick<ListingInventory, 'estimate'> & Partial<Pick<ListingInventory, 'estimated'>>
  zones: ZoneAnswers & Pick<ReadyZones, 'facts' | 'comparablesAt'> & Partial<Pick<ReadyZones, 'preparedFacts' | 'pointInTime'>>
  clock: Clock
}

/** GET /estimate: one property's price or monthly rent from the public listings most like it (docs/statistics.md, "Estimates"). */
export const getEstimate = defineOperation({
  method: 'GET',
  path: '/estimate',
  access: 'read',
  operationId: 'getEstimate',
  tag: 'Market',
  summary: "What a property is worth: a price or monthly rent, its range and confidence, and the comparables behind it",
  description:
    'An estimate from the public listings (active, verified, broker) of the same zone, operation and property type most like the ' +
    'property, widening the area band and dropping bedrooms when too few match; each comparable is returned with the figures it ' +
    'was used with, so the estimate can be recomputed by hand (docs/statistics.md). Too few comparables even at the widest level: ' +
    '`estimate: null` with the reason. A zone the country does not have (then) is 404.',
  inputs: estimateInputs,
  checkedWhenRefused: (deps: EstimateDeps) => asOfRangeChecks(deps.zones, deps.clock),
  ok: EstimateResponse,
  okExample: ESTIMATE_EXAMPLE,
  okHeaders: PROVENANCE_HEADERS,
  errors: [refusalOf(() => estimateInputs.read('?zone=zona-10&operation=Venta&property_type=Casa&area_m2=0')), zoneNotFound('zona-99', 'GT')],
  handler: (deps: EstimateDeps) => async ({ set, query }) => {
    const zoneNo = zoneNumberOfName(query.zone)!
    const at = await instantAsked(query.as_of, deps.clock(), deps.zones)
    const subject = { areaM2: query.area_m2, bedrooms: query.bedrooms, bathrooms: query.bathrooms, comparables: query.comparables }
    const notFound = () => zoneNotFound(zoneSlug(zoneNo), query.country)
    let estimate: Estimate
    let from: Provenance | undefined
    if (at) {
      const computed = await fromOneState(deps.zones, async (view) => {
        const listings = await view.comparablesAt(query.country, zoneNo, query.operation, query.property_type, at)
        // A listing there then is proof enough that the zone was known; only an empty answer needs the zones.
        if (listings.length === 0 && !(await view.factsAt(query.country, at, zoneNo, 'summary')).has(zoneNo)) throw notFound()
        return estimateOf(candidatesOf(listings), subject)
      })
      ;({ value: estimate, at: from } = computed)
    } else {
      const zones = await preparedOf(deps.zones, query.country)
      if (!zones.value.has(zoneNo)) throw notFound()
      const { country, operation, property_type } = query
      // From the inventory at the zones' position or later: a zone once seen stays known, so the 200 holds at its position.
      ;({ value: estimate, at: from } = deps.inventory.estimated
        ? await deps.inventory.estimated(country, zoneNo, operation, property_type, subject, zones.at?.position)
        : { value: await deps.inventory.estimate(country, zoneNo, operation, property_type, subject), at: undefined })
    }
    answeredFrom(set, from)
    return {
      ok: true as const,
      country: query.country,
      zone: zoneName(zoneNo),
      slug: zoneSlug(zoneNo),
      operation: query.operation,
      property_type: query.property_type,
      area_m2: query.area_m2,
      bedrooms: query.bedrooms ?? null,
      bathrooms: query.bathrooms ?? null,
      ...(at ? { as_of: at.toISOString() } : {}),
      ...estimate,
    }
  },
})
