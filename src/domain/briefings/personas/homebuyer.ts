import { Type } from '@sinclair/typebox'
import type { EstimateFigures } from '../../market/estimate-figures.ts'
import {
  bedroomsStats,
  budgetFit,
  daysOnMarket,
  estimateIn,
  type Finding,
  type Ladder,
  momentum,
  positionIn,
  priceVsCountry,
  type RangePosition,
  scoredAssessment,
  type Segment,
} from '../analysis.ts'
import { BRIEFING_COMPARABLES, type ZoneDetail } from '../facts.ts'
import { bedroomGroup } from '../../market/vocabulary.ts'
import { definePersona, PropertyTypeInput, UsdAmount } from './define.ts'
import { personaText } from '../text/catalogue.ts'

const PROFILES = ['first_time', 'family', 'downsizer'] as const
const VERDICTS = ['GOOD_DEAL', 'FAIR_PRICE', 'OVERPRICED'] as const
type Profile = (typeof PROFILES)[number]

/** Bedrooms assumed when the buyer does not say (for the zone's bedroom medians only, never for an estimate). */
const TYPICAL_BEDROOMS: Record<Profile, number> = { first_time: 2, family: 3, downsizer: 2 }
/** Score needed for GOOD_DEAL and for FAIR_PRICE (else OVERPRICED); first-time buyers are the most price-sensitive. */
const LADDERS: Record<Profile, Ladder<(typeof VERDICTS)[number]>> = {
  first_time: [['GOOD_DEAL', 1.25], ['FAIR_PRICE', -0.75]],
  family: [['GOOD_DEAL', 1], ['FAIR_PRICE', -1]],
  downsizer: [['GOOD_DEAL', 0.75], ['FAIR_PRICE', -1.25]],
}
/** Points of a budget against the estimate of the home: below its range, inside it, above it (the ends of the median rule's scale). */
const BUDGET_IN_RANGE: Record<RangePosition, number> = { below: -2, inside: 0, above: 1 }

/** The budget against the estimate of the home described: its range decides the points. */
function budgetAgainstEstimate(budget: number, estimate: EstimateFigures): Finding {
  const position = positionIn(budget, estimate)
  const { price_usd, low_usd, high_usd } = estimate
  return { kind: 'budget_vs_estimate', budget_usd: budget, estimate_usd: price_usd, low_usd, high_usd, position, points: BUDGET_IN_RANGE[position] }
}

/** The budget against the zone's median price of homes with the wanted bedrooms (or the whole zone's). */
function budgetAgainstZone(budget: number, zone: ZoneDetail, bedrooms: number): Finding {
  const bucket = bedroomGroup(bedrooms)
  const stats = bedroomsStats(zone, bucket)
  const known = stats && stats.median_price_usd !== null
  const segment: Segment = known ? { kind: 'bedrooms', value: bucket } : { kind: 'zone' }
  return budgetFit(budget, segment, known ? stats : zone, 3, 2, 1)
}

export const homebuyer = definePersona({
  id: 'homebuyer',
  name: 'Homebuyer',
  description:
    'Whether homes in a zone are a good deal for a buyer who will live there: price level, trend, negotiating room and budget, ' +
    'the budget set against the estimate of the home when its type and area are given.',
  profiles: PROFILES,
  verdicts: VERDICTS,
  extra: {
    budget_usd: Type.Optional(UsdAmount('budget in USD')),
    bedrooms: Type.Optional(Type.Integer({ minimum: 0, maximum: 10, description: 'bedrooms wanted (0 = studio)' })),
    property_type: Type.Optional(PropertyTypeInput),
    area_m2: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000, description: 'area of the home wanted in m² (with property_type: the budget is set against its estimate)' })),
  },
  rules:
    'Score the zone for a buyer: cheaper than the country median price per m² is favourable (1 point per 10%, at most 2); ' +
    'rising prices over 30 days are unfavourable (0.3 points per %, at most 1); homes staying on the market longer than ' +
    'in the country give negotiating room (at most 1); a budget below the median price of homes with the wanted ' +
    'bedrooms (default 2, family 3) is unfavourable (at most -2), above it favourable (at most +1). ' +
    'With property_type and area_m2 (and bedrooms when given, never the default) the home is estimated for sale as ' +
    'GET /estimate does (operation Venta, the 10 closest comparables, docs/statistics.md "Estimates"), and the budget is set ' +
    'against the estimate instead of the median: below low_usd -2, from low_usd to high_usd inclusive 0, above high_usd +1; ' +
    'with fewer than 5 comparables there is no estimate, the briefing says so and the median rule stands. ' +
    'GOOD_DEAL at 1.25/1/0.75 points (first_time/family/downsizer), FAIR_PRICE at -0.75/-1/-1.25, otherwise OVERPRICED.',
  estimate: (input) =>
    input.property_type !== undefined && input.area_m2 !== undefined
      ? { operation: 'Venta', property_type: input.property_type, area_m2: input.area_m2, bedrooms: input.bedrooms ?? null, comparables: BRIEFING_COMPARABLES }
      : null,
  assess(input, facts) {
    const findings: Finding[] = [priceVsCountry(facts, -1, 2), momentum(facts, -0.3, 1), daysOnMarket(facts, -1.5, 1)]
    const estimate = estimateIn(facts)
    if (estimate && 'none' in estimate) findings.push(estimate.none)
    if (input.budget_usd !== undefined) {
      findings.push(
        estimate && 'figures' in estimate
          ? budgetAgainstEstimate(input.budget_usd, estimate.figures)
          : budgetAgainstZone(input.budget_usd, facts.zone, input.bedrooms ?? TYPICAL_BEDROOMS[input.profile]),
      )
    }
    return scoredAssessment(findings, facts.zone, LADDERS[input.profile], 'OVERPRICED')
  },
  text: personaText('homebuyer'),
})
