import { Type } from '@sinclair/typebox'
import { bedroomsStats, budgetFit, daysOnMarket, type Finding, type Ladder, momentum, priceVsCountry, scoredAssessment, type Segment } from '../analysis.ts'
import { bedroomGroup } from '../../market/vocabulary.ts'
import { definePersona, UsdAmount } from './define.ts'
import { personaText } from '../text/catalogue.ts'

const PROFILES = ['first_time', 'family', 'downsizer'] as const
const VERDICTS = ['GOOD_DEAL', 'FAIR_PRICE', 'OVERPRICED'] as const

/** Bedrooms assumed when the buyer does not say. */
const TYPICAL_BEDROOMS: Record<(typeof PROFILES)[number], number> = { first_time: 2, family: 3, downsizer: 2 }
/** Score needed for GOOD_DEAL and for FAIR_PRICE (else OVERPRICED); first-time buyers are the most price-sensitive. */
const LADDERS: Record<(typeof PROFILES)[number], Ladder<(typeof VERDICTS)[number]>> = {
  first_time: [['GOOD_DEAL', 1.25], ['FAIR_PRICE', -0.75]],
  family: [['GOOD_DEAL', 1], ['FAIR_PRICE', -1]],
  downsizer: [['GOOD_DEAL', 0.75], ['FAIR_PRICE', -1.25]],
}

export const homebuyer = definePersona({
  id: 'homebuyer',
  name: 'Homebuyer',
  description: 'Whether homes in a zone are a good deal for a buyer who will live there: price level, trend, negotiating room and budget.',
  profiles: PROFILES,
  verdicts: VERDICTS,
  extra: {
    budget_usd: Type.Optional(UsdAmount('budget in USD')),
    bedrooms: Type.Optional(Type.Integer({ minimum: 0, maximum: 10, description: 'bedrooms wanted (0 = studio)' })),
  },
  rules:
    'Score the zone for a buyer: cheaper than the country median price per m² is favourable (1 point per 10%, at most 2); ' +
    'rising prices over 30 days are unfavourable (0.3 points per %, at most 1); homes staying on the market longer than ' +
    'in the country give negotiating room (at most 1); a budget below the median price of homes with the wanted ' +
    'bedrooms (default 2, family 3) is unfavourable (at most -2), above it favourable (at most +1). ' +
    'GOOD_DEAL at 1.25/1/0.75 points (first_time/family/downsizer), FAIR_PRICE at -0.75/-1/-1.25, otherwise OVERPRICED.',
  assess(input, facts) {
    const findings: Finding[] = [priceVsCountry(facts, -1, 2), momentum(facts, -0.3, 1), daysOnMarket(facts, -1.5, 1)]
    if (input.budget_usd !== undefined) {
      const bucket = bedroomGroup(input.bedrooms ?? TYPICAL_BEDROOMS[input.profile])
      const stats = bedroomsStats(facts.zone, bucket)
      const known = stats && stats.median_price_usd !== null
      const segment: Segment = known ? { kind: 'bedrooms', value: bucket } : { kind: 'zone' }
      findings.push(budgetFit(input.budget_usd, segment, known ? stats : facts.zone, 3, 2, 1))
    }
    return scoredAssessment(findings, facts.zone, LADDERS[input.profile], 'OVERPRICED')
  },
  text: personaText('homebuyer'),
})
