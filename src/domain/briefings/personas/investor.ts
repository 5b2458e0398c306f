import { Type } from '@sinclair/typebox'
import { budgetFit, clamp, daysOnMarket, type Finding, grossYield, type Ladder, momentum, priceVsCountry, scoredAssessment } from '../analysis.ts'
import type { ZoneDetail } from '../facts.ts'
import { definePersona, UsdAmount } from './define.ts'
import { personaText } from '../text/catalogue.ts'

const PROFILES = ['conservative', 'balanced', 'aggressive'] as const
const VERDICTS = ['BUY', 'HOLD', 'AVOID'] as const

/** Score needed for BUY and for HOLD (else AVOID); a riskier profile needs less. */
const LADDERS: Record<(typeof PROFILES)[number], Ladder<(typeof VERDICTS)[number]>> = {
  conservative: [['BUY', 2.5], ['HOLD', -0.25]],
  balanced: [['BUY', 1.5], ['HOLD', -1]],
  aggressive: [['BUY', 0.75], ['HOLD', -2]],
}
/** A 30-day move matters fully up to this horizon and proportionally less beyond it. */
const MOMENTUM_HORIZON_YEARS = 3
const TARGET_YIELD_PCT = 6

/** The cheapest built property type with a median price: the entry ticket to the zone. */
function entrySegment(zone: ZoneDetail) {
  const priced = zone.by_property_type.filter((p) => p.property_type !== 'Terreno' && p.median_price_usd !== null)
  return priced.sort((a, b) => a.median_price_usd! - b.median_price_usd! || a.property_type.localeCompare(b.property_type))[0]
}

export const investor = definePersona({
  id: 'investor',
  name: 'Investor',
  description: 'Whether to buy into a zone now: value against the country, momentum, liquidity, rental yield and budget fit.',
  profiles: PROFILES,
  verdicts: VERDICTS,
  extra: {
    budget_usd: Type.Optional(UsdAmount('budget in USD')),
    horizon_years: Type.Optional(Type.Integer({ minimum: 1, maximum: 30, description: 'holding period in years' })),
  },
  rules:
    'Score the zone: cheaper than the country median price per m² is favourable (1 point per 10%, at most 2); the ' +
    '30-day change is favourable when positive (0.4 points per %, at most 2, weighted down for horizons over 3 years); ' +
    'selling faster than the country (median days on market) is favourable (at most 1.5); a gross rental yield above ' +
    '6% is favourable (at most 1.5); a budget below the cheapest property type\'s median price is unfavourable. ' +
    'BUY at 2.5/1.5/0.75 points (conservative/balanced/aggressive), HOLD at -0.25/-1/-2, otherwise AVOID.',
  assess(input, facts) {
    const weight = input.horizon_years ? Math.min(1, MOMENTUM_HORIZON_YEARS / input.horizon_years) : 1
    const yieldNow = grossYield(facts.zone)
    const findings: Finding[] = [
      priceVsCountry(facts, -1, 2),
      momentum(facts, 0.4 * weight, 2 * weight),
      daysOnMarket(facts, 2, 1.5),
      yieldNow
        ? { kind: 'gross_yield', ...yieldNow, points: clamp((yieldNow.pct - TARGET_YIELD_PCT) / 1.5, -1.5, 1.5) }
        : { kind: 'missing', figure: 'gross_yield' },
    ]
    if (input.budget_usd !== undefined) {
      const entry = entrySegment(facts.zone)
      const segment = entry ? { kind: 'property_type' as const, value: entry.property_type } : { kind: 'zone' as const }
      findings.push(budgetFit(input.budget_usd, segment, entry ?? facts.zone, 2.5, 2, 0))
    }
    if (input.horizon_years !== undefined) findings.push({ kind: 'horizon', years: input.horizon_years, momentum_weight: weight })
    return scoredAssessment(findings, facts.zone, LADDERS[input.profile], 'AVOID')
  },
  text: personaText('investor'),
})
