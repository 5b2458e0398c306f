import { Type } from '@sinclair/typebox'
import { confidenceFor, daysOnMarket, type Finding, grossYield, momentum, priceVsCountry, propertyTypeStats, segmentFinding, verdictForScore } from '../analysis.ts'
import { definePersona, PropertyTypeInput } from './define.ts'
import { personaText } from '../text/catalogue.ts'

const PROFILES = ['long_term', 'short_term', 'corporate'] as const
const VERDICTS = ['STRONG_YIELD', 'MODERATE_YIELD', 'WEAK_YIELD'] as const

/**
 * Gross yield (%) needed for STRONG and MODERATE. Short-term letting carries more vacancy and
 * running costs, so it needs more gross yield; corporate tenants are steadier, so they need less.
 */
const THRESHOLDS: Record<(typeof PROFILES)[number], { strong: number; moderate: number }> = {
  long_term: { strong: 7, moderate: 5 },
  short_term: { strong: 9, moderate: 6 },
  corporate: { strong: 6.5, moderate: 4.5 },
}

export const landlord = definePersona({
  id: 'landlord',
  name: 'Landlord',
  description: 'The rental yield a zone offers a buy-to-let owner: median rent per m² against median sale price per m².',
  profiles: PROFILES,
  verdicts: VERDICTS,
  extra: { property_type: Type.Optional(PropertyTypeInput) },
  rules:
    'Gross yield = 12 × median monthly rent per m² (Renta listings) ÷ median sale price per m² (Venta listings). ' +
    'STRONG_YIELD from 7/9/6.5% (long_term/short_term/corporate), MODERATE_YIELD from 5/6/4.5%, otherwise ' +
    'WEAK_YIELD; without enough rent listings to compute a yield, WEAK_YIELD with low confidence. Days on market, ' +
    'the 30-day change and the price level against the country are context, not part of the verdict.',
  assess(input, facts) {
    const yieldNow = grossYield(facts.zone)
    const findings: Finding[] = [
      yieldNow ? { kind: 'gross_yield', ...yieldNow, points: yieldNow.pct } : { kind: 'missing', figure: 'gross_yield' },
      // Context only (0 points): the yield alone decides.
      priceVsCountry(facts, 0, 0),
      momentum(facts, 0, 0),
      daysOnMarket(facts, 0, 0),
    ]
    if (input.property_type !== undefined) {
      findings.push(segmentFinding({ kind: 'property_type', value: input.property_type }, propertyTypeStats(facts.zone, input.property_type)))
    }
    const t = THRESHOLDS[input.profile]
    const sample = yieldNow?.n_rent ?? 0
    // Only the yield counts as missing here: the context figures do not move the verdict.
    const missing = yieldNow ? 0 : 1
    return {
      verdict: yieldNow
        ? verdictForScore(yieldNow.pct, [['STRONG_YIELD', t.strong], ['MODERATE_YIELD', t.moderate]], 'WEAK_YIELD')
        : 'WEAK_YIELD',
      confidence: confidenceFor(sample, missing),
      findings: findings.filter((f) => f.kind !== 'missing' || f.figure === 'gross_yield'),
      sample,
    }
  },
  text: personaText('landlord'),
})
