import { Type } from '@sinclair/typebox'
import { confidenceFor, daysOnMarket, type Finding, grossYield, momentum, priceVsCountry, propertyTypeStats, segmentFinding, verdictForScore } from '../analysis.ts'
import { definePersona, PropertyTypeInput } from './define.ts'

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
  text: {
    en: {
      title: 'landlord briefing',
      profiles: { long_term: 'long-term letting', short_term: 'short-term letting', corporate: 'corporate letting' },
      verdicts: { STRONG_YIELD: 'strong yield', MODERATE_YIELD: 'moderate yield', WEAK_YIELD: 'weak yield' },
      advice: {
        STRONG_YIELD: 'Rents are high relative to prices: buy-to-let works here; check service charges and taxes against the gross figure.',
        MODERATE_YIELD: 'The yield is acceptable but not generous: buy below the median price per m² to lift it.',
        WEAK_YIELD: 'Rents do not justify current prices for letting: look at zones with a higher rent-to-price ratio, or negotiate hard on price.',
      },
      profileAdvice: {
        long_term: 'For long-term letting, the gross yield above is the figure to compare with your financing cost.',
        short_term: 'For short-term letting, expect occupancy and platform fees to cut the gross yield substantially.',
        corporate: 'For corporate tenants, steadier occupancy lets you accept a somewhat lower gross yield.',
      },
    },
    es: {
      title: 'informe para arrendadores',
      profiles: { long_term: 'alquiler de largo plazo', short_term: 'alquiler de corto plazo', corporate: 'alquiler corporativo' },
      verdicts: { STRONG_YIELD: 'rentabilidad alta', MODERATE_YIELD: 'rentabilidad moderada', WEAK_YIELD: 'rentabilidad baja' },
      advice: {
        STRONG_YIELD: 'Las rentas son altas en relación con los precios: comprar para alquilar funciona aquí; descuente cuotas de mantenimiento e impuestos de la cifra bruta.',
        MODERATE_YIELD: 'La rentabilidad es aceptable pero no generosa: compre por debajo de la mediana de precio por m² para mejorarla.',
        WEAK_YIELD: 'Las rentas no justifican los precios actuales para alquilar: busque zonas con mejor relación renta-precio o negocie fuerte el precio.',
      },
      profileAdvice: {
        long_term: 'Para alquiler de largo plazo, compare la rentabilidad bruta con su costo de financiamiento.',
        short_term: 'Para alquiler de corto plazo, la ocupación y las comisiones de plataforma reducirán bastante la rentabilidad bruta.',
        corporate: 'Con inquilinos corporativos, la ocupación más estable permite aceptar una rentabilidad bruta algo menor.',
      },
    },
    pt: {
      title: 'relatório para proprietários que alugam',
      profiles: { long_term: 'aluguel de longo prazo', short_term: 'aluguel de curta temporada', corporate: 'aluguel corporativo' },
      verdicts: { STRONG_YIELD: 'rentabilidade alta', MODERATE_YIELD: 'rentabilidade moderada', WEAK_YIELD: 'rentabilidade baixa' },
      advice: {
        STRONG_YIELD: 'Os aluguéis são altos em relação aos preços: comprar para alugar funciona aqui; desconte condomínio e impostos do número bruto.',
        MODERATE_YIELD: 'A rentabilidade é aceitável, mas não generosa: compre abaixo do preço mediano por m² para melhorá-la.',
        WEAK_YIELD: 'Os aluguéis não justificam os preços atuais para locação: procure zonas com melhor relação aluguel-preço ou negocie firme o preço.',
      },
      profileAdvice: {
        long_term: 'Para aluguel de longo prazo, compare a rentabilidade bruta com o seu custo de financiamento.',
        short_term: 'Para curta temporada, a ocupação e as taxas das plataformas reduzem bastante a rentabilidade bruta.',
        corporate: 'Com inquilinos corporativos, a ocupação mais estável permite aceitar uma rentabilidade bruta um pouco menor.',
      },
    },
  },
})
