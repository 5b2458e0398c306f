import { Type } from '@sinclair/typebox'
import type { EstimateFigures } from '../../market/estimate-figures.ts'
import {
  type Assessment,
  confidenceFor,
  confidenceLowered,
  daysOnMarket,
  estimateIn,
  type Finding,
  missingCount,
  positionIn,
  priceVsCountry,
  propertyTypeStats,
  type RangePosition,
  type Segment,
  saleSample,
} from '../analysis.ts'
import { BRIEFING_COMPARABLES, type SegmentStats, type ZoneDetail, type ZoneFacts } from '../facts.ts'
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

/** Against an estimate: its range decides, ends included. */
const VERDICT_IN_RANGE: Record<RangePosition, Verdict> = { above: 'PRICE_ABOVE_MARKET', inside: 'PRICE_AT_MARKET', below: 'PRICE_BELOW_MARKET' }

function marketFor(zone: ZoneDetail, propertyType: string | undefined, hasArea: boolean) {
  const own = propertyType
    ? comparable({ kind: 'property_type', value: propertyType }, propertyTypeStats(zone, propertyType), hasArea)
    : undefined
  return { own, fallback: comparable({ kind: 'zone' }, zone, hasArea) }
}

/** A verdict, how many listings stand behind it, and the figures it used (days on market are added after). */
type Judged = { verdict: Verdict; sample: number; findings: Finding[] }

/** The asking price against the estimate of the property: its range decides. */
function againstEstimate(asking: number, estimate: EstimateFigures, used: number): Judged {
  const position = positionIn(asking, estimate)
  const pct = (asking / estimate.price_usd - 1) * 100
  const { price_usd, low_usd, high_usd } = estimate
  const finding: Finding = { kind: 'asking_vs_estimate', asking_usd: asking, estimate_usd: price_usd, low_usd, high_usd, position, pct }
  return { verdict: VERDICT_IN_RANGE[position], sample: used, findings: [finding] }
}

/** The asking price against the zone market: the property type's median (per m² with an area), else the zone's. */
function againstZone(asking: number, zone: ZoneDetail, propertyType: string | undefined, area: number | undefined): Judged {
  const findings: Finding[] = []
  const { own, fallback } = marketFor(zone, propertyType, area !== undefined)
  const market = own ?? fallback
  if (!market || (propertyType !== undefined && !own)) findings.push({ kind: 'missing', figure: 'asking_segment' })
  if (!market) return { verdict: 'PRICE_AT_MARKET', sample: 0, findings }
  const askingPpm2 = market.basis === 'ppm2' ? asking / area! : null
  const reference = market.basis === 'ppm2' ? market.stats.median_ppm2_usd! : market.stats.median_price_usd!
  const pct = ((askingPpm2 ?? asking) / reference - 1) * 100
  findings.push({ kind: 'asking_price', asking_usd: asking, asking_ppm2: askingPpm2, market_usd: reference, basis: market.basis, segment: market.segment, pct })
  return { verdict: verdictForGap(pct), sample: market.stats.n_active, findings }
}

/** Without an asking price: the zone's median per m² against the country's. */
function zoneAgainstCountry(facts: ZoneFacts): Judged {
  const level = priceVsCountry(facts, 0, 0)
  const verdict = level.kind === 'price_vs_country' ? verdictForGap(level.pct) : 'PRICE_AT_MARKET'
  return { verdict, sample: saleSample(facts.zone), findings: [{ kind: 'missing', figure: 'asking_price' }, level] }
}

export const broker = definePersona({
  id: 'broker',
  name: 'Broker',
  description:
    'Where an asking price sits against the estimate of the property (with its type and area) or the zone market, for the agent listing the property or the agent advising the buyer.',
  profiles: PROFILES,
  verdicts: VERDICTS,
  extra: {
    property_type: Type.Optional(PropertyTypeInput),
    asking_price_usd: Type.Optional(UsdAmount('asking price in USD')),
    area_m2: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000, description: 'built or lot area in m²' })),
  },
  rules:
    'With property_type and area_m2 the property is estimated for sale as GET /estimate does (operation Venta, the 10 closest ' +
    'comparables, docs/statistics.md "Estimates"). With an asking price and an estimate, the estimate\'s range decides: asking ' +
    'price above high_usd → PRICE_ABOVE_MARKET, below low_usd → PRICE_BELOW_MARKET, from low_usd to high_usd inclusive → ' +
    'PRICE_AT_MARKET; the confidence is the estimate\'s, one level lower per missing figure. Without an estimate (no property ' +
    'type or area, or fewer than 5 comparables, which the briefing says), compare the asking price with the zone market: per m² ' +
    '(asking price ÷ area) against the median price per m² of the property type when the area is given, otherwise against its ' +
    'median price; the whole zone when the property type has no median. More than 10% above → PRICE_ABOVE_MARKET, more than ' +
    '10% below → PRICE_BELOW_MARKET, else PRICE_AT_MARKET. Without an asking price, compare the zone\'s median price per m² ' +
    'with the country median the same way.',
  estimate: (input) =>
    input.property_type !== undefined && input.area_m2 !== undefined
      ? { operation: 'Venta', property_type: input.property_type, area_m2: input.area_m2, bedrooms: null, comparables: BRIEFING_COMPARABLES }
      : null,
  assess(input, facts): Assessment & { verdict: Verdict } {
    const estimate = estimateIn(facts)
    const asking = input.asking_price_usd
    const judged =
      asking === undefined
        ? zoneAgainstCountry(facts)
        : estimate && 'figures' in estimate
          ? againstEstimate(asking, estimate.figures, facts.estimate!.method.used)
          : againstZone(asking, facts.zone, input.property_type, input.area_m2)
    const findings = [...(estimate && 'none' in estimate ? [estimate.none] : []), ...judged.findings, daysOnMarket(facts, 0, 0)]
    const confidence =
      asking !== undefined && estimate && 'figures' in estimate
        ? confidenceLowered(estimate.figures.confidence, missingCount(findings))
        : confidenceFor(judged.sample, missingCount(findings))
    return { verdict: judged.verdict, confidence, findings, sample: judged.sample }
  },
  text: personaText('broker'),
})
