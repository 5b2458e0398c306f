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
  text: {
    en: {
      title: 'broker briefing',
      profiles: { listing_agent: 'listing agent', buyer_agent: "buyer's agent" },
      verdicts: {
        PRICE_ABOVE_MARKET: 'priced above the market',
        PRICE_AT_MARKET: 'priced at the market',
        PRICE_BELOW_MARKET: 'priced below the market',
      },
      advice: {
        PRICE_ABOVE_MARKET: 'The price is more than 10% above comparable listings: expect a longer time on market unless the property has a clear premium feature.',
        PRICE_AT_MARKET: 'The price is within 10% of comparable listings: it should meet the market at the zone\'s usual pace.',
        PRICE_BELOW_MARKET: 'The price is more than 10% below comparable listings: expect quick interest; check why before assuming a bargain.',
      },
      profileAdvice: {
        listing_agent: 'As the listing agent, use the median per m² above to set or defend the price with the seller.',
        buyer_agent: "As the buyer's agent, use the gap to the median per m² to anchor the offer.",
      },
    },
    es: {
      title: 'informe para corredores',
      profiles: { listing_agent: 'agente del vendedor', buyer_agent: 'agente del comprador' },
      verdicts: {
        PRICE_ABOVE_MARKET: 'precio sobre el mercado',
        PRICE_AT_MARKET: 'precio de mercado',
        PRICE_BELOW_MARKET: 'precio bajo el mercado',
      },
      advice: {
        PRICE_ABOVE_MARKET: 'El precio supera en más de 10% a los comparables: espere más tiempo en el mercado salvo que la propiedad tenga un atributo claramente superior.',
        PRICE_AT_MARKET: 'El precio está dentro de ±10% de los comparables: debería venderse al ritmo habitual de la zona.',
        PRICE_BELOW_MARKET: 'El precio está más de 10% por debajo de los comparables: espere interés rápido; verifique el motivo antes de darlo por ganga.',
      },
      profileAdvice: {
        listing_agent: 'Como agente del vendedor, use la mediana por m² para fijar o defender el precio con el propietario.',
        buyer_agent: 'Como agente del comprador, use la diferencia con la mediana por m² para anclar la oferta.',
      },
    },
    pt: {
      title: 'relatório para corretores',
      profiles: { listing_agent: 'corretor do vendedor', buyer_agent: 'corretor do comprador' },
      verdicts: {
        PRICE_ABOVE_MARKET: 'preço acima do mercado',
        PRICE_AT_MARKET: 'preço de mercado',
        PRICE_BELOW_MARKET: 'preço abaixo do mercado',
      },
      advice: {
        PRICE_ABOVE_MARKET: 'O preço está mais de 10% acima dos comparáveis: espere mais tempo de venda, a menos que o imóvel tenha um diferencial claro.',
        PRICE_AT_MARKET: 'O preço está dentro de ±10% dos comparáveis: deve vender no ritmo habitual da zona.',
        PRICE_BELOW_MARKET: 'O preço está mais de 10% abaixo dos comparáveis: espere interesse rápido; verifique o motivo antes de tratá-lo como pechincha.',
      },
      profileAdvice: {
        listing_agent: 'Como corretor do vendedor, use a mediana por m² para definir ou defender o preço com o proprietário.',
        buyer_agent: 'Como corretor do comprador, use a diferença para a mediana por m² para ancorar a oferta.',
      },
    },
  },
})
