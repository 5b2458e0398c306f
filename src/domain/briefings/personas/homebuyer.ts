import { Type } from '@sinclair/typebox'
import { bedroomsStats, budgetFit, daysOnMarket, type Finding, type Ladder, momentum, priceVsCountry, scoredAssessment, type Segment } from '../analysis.ts'
import { bedroomGroup } from '../../market/vocabulary.ts'
import { definePersona, UsdAmount } from './define.ts'

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
  text: {
    en: {
      title: 'homebuyer briefing',
      profiles: { first_time: 'first-time buyer', family: 'family', downsizer: 'downsizer' },
      verdicts: { GOOD_DEAL: 'good deal', FAIR_PRICE: 'fair price', OVERPRICED: 'overpriced' },
      advice: {
        GOOD_DEAL: 'Prices here compare well: move on homes priced at or below the zone median and ask for the property history before offering.',
        FAIR_PRICE: 'Prices are in line with the market: offer around the median and use days on market to negotiate on specific homes.',
        OVERPRICED: 'Prices are stretched for you here: compare neighbouring zones, or wait for the 30-day trend to cool before offering.',
      },
      profileAdvice: {
        first_time: 'As a first-time buyer, keep a margin in your budget for closing costs and taxes.',
        family: 'As a family, weigh schools and commuting alongside the price figures.',
        downsizer: 'As a downsizer, price your current home with the same figures before you buy.',
      },
    },
    es: {
      title: 'informe para compradores de vivienda',
      profiles: { first_time: 'primera vivienda', family: 'familia', downsizer: 'reducir espacio' },
      verdicts: { GOOD_DEAL: 'buena oportunidad', FAIR_PRICE: 'precio justo', OVERPRICED: 'sobrevalorado' },
      advice: {
        GOOD_DEAL: 'Los precios comparan bien: avance con viviendas en o por debajo de la mediana de la zona y pida el historial de la propiedad antes de ofertar.',
        FAIR_PRICE: 'Los precios están en línea con el mercado: oferte cerca de la mediana y use los días en el mercado para negociar casos concretos.',
        OVERPRICED: 'Los precios están exigentes para usted aquí: compare zonas vecinas o espere a que se enfríe la tendencia de 30 días antes de ofertar.',
      },
      profileAdvice: {
        first_time: 'Como comprador de primera vivienda, reserve margen en su presupuesto para gastos de cierre e impuestos.',
        family: 'Como familia, pondere colegios y traslados junto con las cifras de precio.',
        downsizer: 'Si busca reducir espacio, valore su vivienda actual con las mismas cifras antes de comprar.',
      },
    },
    pt: {
      title: 'relatório para compradores de imóvel',
      profiles: { first_time: 'primeiro imóvel', family: 'família', downsizer: 'reduzir espaço' },
      verdicts: { GOOD_DEAL: 'bom negócio', FAIR_PRICE: 'preço justo', OVERPRICED: 'caro demais' },
      advice: {
        GOOD_DEAL: 'Os preços comparam bem: avance com imóveis no preço mediano da zona ou abaixo dele e peça o histórico do imóvel antes de ofertar.',
        FAIR_PRICE: 'Os preços estão alinhados ao mercado: oferte perto da mediana e use o tempo de venda para negociar casos específicos.',
        OVERPRICED: 'Os preços estão puxados para você aqui: compare zonas vizinhas ou espere a tendência de 30 dias esfriar antes de ofertar.',
      },
      profileAdvice: {
        first_time: 'Como comprador do primeiro imóvel, reserve margem no orçamento para custos de escritura e impostos.',
        family: 'Como família, pese escolas e deslocamentos junto com os números de preço.',
        downsizer: 'Se vai reduzir espaço, avalie o seu imóvel atual com os mesmos números antes de comprar.',
      },
    },
  },
})
