import { Type } from '@sinclair/typebox'
import {
  confidenceFor,
  daysOnMarket,
  type Finding,
  missingCount,
  priceVsCountry,
  propertyTypeStats,
  type Segment,
  saleSample,
} from '../analysis.ts'
import type { SegmentStats, ZoneDetail } from '../facts.ts'
import { definePersona, PropertyTypeInput, UsdAmount } from './define.ts'
import { personaText } from '../text/catalogue.ts'

const PROFILES = ['listing_agent', 'buyer_agent'] as const
const VERDICTS = ['PRICE_ABOVE_MARKET', 'PRICE_AT_MARKET', 'PRICE_BELOW_MARKET'] as const
type Verdict = (typeof VERDICTS)[number]

/** Within ±10% of the market figure a price is "at market". */
const AT_MARKET_BAND_PCT = 10

const verdictForGap = (pct: number): Verdict =>
  pct > AT_MARKET_BAND_PCT ? 'PRICE_ABOVE_MARKET' : pct < -AT_MARKET_BAND_PCT ? 'PRICE_BELOW_MARKET' : 'PRICE_AT_MARKET'

type Comparable = { segment: Segment; stats: SegmentStats; basis: 'ppm2' | 'price' }

/** Per m² when the area is known and the segment has a median per m², else the median price. */
function comparable(segment: Segment, stats: SegmentStats | undefined, hasArea: boolean): Comparable | undefined {
  if (!stats) return undefined
  if (hasArea && stats.median_ppm2_usd !== null) return { segment, stats, basis: 'ppm2' }
  if (stats.median_price_usd !== null) return { segment, stats, basis: 'price' }
  return undefined
}

function marketFor(zone: ZoneDetail, propertyType: string | undefined, hasArea: boolean) {
  const own = propertyType
    ? comparable({ kind: 'property_type', value: propertyType }, propertyTypeStats(zone, propertyType), hasArea)
    : undefined
  return { own, fallback: comparable({ kind: 'zone' }, zone, hasArea) }
}

export const broker = definePersona({
  id: 'broker',
  name: 'Broker',
  description: 'Where an asking price sits against the zone market, for the agent listing the property or the agent advising the buyer.',
  profiles: PROFILES,
  verdicts: VERDICTS,
  extra: {
    property_type: Type.Optional(PropertyTypeInput),
    asking_price_usd: Type.Optional(UsdAmount('asking price in USD')),
    area_m2: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000, description: 'built or lot area in m²' })),
  },
  rules:
    'Compare the asking price with the zone market: per m² (asking price ÷ area) against the median price per m² of ' +
    'the property type when the area is given, otherwise against its median price; the whole zone when the property ' +
    'type has no median. More than 10% above → PRICE_ABOVE_MARKET, more than 10% below → PRICE_BELOW_MARKET, else ' +
    'PRICE_AT_MARKET. Without an asking price, compare the zone\'s median price per m² with the country median the same way.',
  assess(input, facts) {
    const findings: Finding[] = []
    let verdict: Verdict
    let sample: number
    if (input.asking_price_usd !== undefined) {
      const { own, fallback } = marketFor(facts.zone, input.property_type, input.area_m2 !== undefined)
      const market = own ?? fallback
      if (!market || (input.property_type !== undefined && !own)) findings.push({ kind: 'missing', figure: 'asking_segment' })
      if (market) {
        const askingPpm2 = market.basis === 'ppm2' ? input.asking_price_usd / input.area_m2! : null
        const reference = market.basis === 'ppm2' ? market.stats.median_ppm2_usd! : market.stats.median_price_usd!
        const pct = ((askingPpm2 ?? input.asking_price_usd) / reference - 1) * 100
        findings.push({
          kind: 'asking_price',
          asking_usd: input.asking_price_usd,
          asking_ppm2: askingPpm2,
          market_usd: reference,
          basis: market.basis,
          segment: market.segment,
          pct,
        })
        verdict = verdictForGap(pct)
        sample = market.stats.n_active
      } else {
        verdict = 'PRICE_AT_MARKET'
        sample = 0
      }
    } else {
      findings.push({ kind: 'missing', figure: 'asking_price' })
      const level = priceVsCountry(facts, 0, 0)
      findings.push(level)
      verdict = level.kind === 'price_vs_country' ? verdictForGap(level.pct) : 'PRICE_AT_MARKET'
      sample = saleSample(facts.zone)
    }
    findings.push(daysOnMarket(facts, 0, 0))
    return {
      verdict,
      confidence: confidenceFor(sample, missingCount(findings)),
      findings,
      sample,
    }
  },
  text: personaText('broker'),
})
