import { Type } from '@sinclair/typebox'
import { clamp, daysOnMarket, type Finding, type Ladder, momentum, priceVsCountry, propertyTypeStats, scoredAssessment, segmentFinding } from '../analysis.ts'
import type { ZoneDetail } from '../facts.ts'
import type { PropertyType } from '../../market/vocabulary.ts'
import { definePersona } from './define.ts'

const PROFILES = ['residential', 'commercial', 'mixed_use'] as const
type Profile = (typeof PROFILES)[number]
const VERDICTS = ['GO', 'CAUTION', 'NO_GO'] as const

/** The finished product each kind of scheme sells. */
const PRODUCTS: Record<Profile, readonly PropertyType[]> = {
  residential: ['Apartamento', 'Casa'],
  commercial: ['Oficina', 'Local', 'Bodega'],
  mixed_use: ['Apartamento', 'Casa', 'Oficina', 'Local'],
}
/** Score needed for GO and for CAUTION (else NO_GO). */
const LADDERS: Record<Profile, Ladder<(typeof VERDICTS)[number]>> = {
  residential: [['GO', 1], ['CAUTION', -1]],
  commercial: [['GO', 1.25], ['CAUTION', -0.75]],
  mixed_use: [['GO', 1], ['CAUTION', -1]],
}
/** Lots up to this size are absorbed at the zone's normal pace; each doubling beyond costs 0.5 points (at most 1). */
const COMFORTABLE_LOT_M2 = 2000
/** Land at 35% of the built price per m² is neutral; cheaper land is favourable. */
const NEUTRAL_LAND_SHARE = 0.35

/** The product with the most active listings among those with a median price per m². */
function mainProduct(zone: ZoneDetail, profile: Profile) {
  const candidates = PRODUCTS[profile]
    .map((type) => ({ type, stats: propertyTypeStats(zone, type) }))
    .filter((c) => c.stats && c.stats.median_ppm2_usd !== null)
  return candidates.sort((a, b) => b.stats!.n_active - a.stats!.n_active || a.type.localeCompare(b.type))[0]
}

export const developer = definePersona({
  id: 'developer',
  name: 'Developer',
  description: 'Whether a zone supports a new residential, commercial or mixed-use scheme: trend, absorption, price level, land cost and lot size.',
  profiles: PROFILES,
  verdicts: VERDICTS,
  extra: { lot_m2: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 10_000_000, description: 'lot area in m²' })) },
  rules:
    'Score the zone for a new scheme: a positive 30-day change is favourable (0.4 points per %, at most 1.5); selling ' +
    'faster than the country (days on market) is favourable (at most 1.5); prices per m² above the country median ' +
    'support margins (at most 1); land (Terreno) cheaper than 35% of the built product\'s price per m² is favourable ' +
    '(at most 1); lots above 2,000 m² cost 0.5 points per doubling (at most 1). GO at 1/1.25/1 points ' +
    '(residential/commercial/mixed_use), CAUTION at -1/-0.75/-1, otherwise NO_GO.',
  assess(input, facts) {
    const findings: Finding[] = [momentum(facts, 0.4, 1.5), daysOnMarket(facts, 2, 1.5), priceVsCountry(facts, 2 / 3, 1)]
    const product = mainProduct(facts.zone, input.profile)
    const land = propertyTypeStats(facts.zone, 'Terreno')
    if (product && land && land.median_ppm2_usd !== null && product.stats!.median_ppm2_usd! > 0) {
      const share = land.median_ppm2_usd / product.stats!.median_ppm2_usd!
      findings.push({
        kind: 'land_share',
        land_ppm2: land.median_ppm2_usd,
        built_ppm2: product.stats!.median_ppm2_usd!,
        pct: share * 100,
        points: clamp((NEUTRAL_LAND_SHARE - share) * 5, -1, 1),
      })
    } else {
      findings.push({ kind: 'missing', figure: 'land_share' })
    }
    if (product) findings.push(segmentFinding({ kind: 'property_type', value: product.type }, product.stats))
    if (input.lot_m2 !== undefined) {
      const doublings = clamp(Math.log2(input.lot_m2 / COMFORTABLE_LOT_M2), 0, 2)
      findings.push({ kind: 'lot_size', lot_m2: input.lot_m2, comfortable_m2: COMFORTABLE_LOT_M2, points: -0.5 * doublings })
    }
    return scoredAssessment(findings, facts.zone, LADDERS[input.profile], 'NO_GO')
  },
  text: {
    en: {
      title: 'developer briefing',
      profiles: { residential: 'residential scheme', commercial: 'commercial scheme', mixed_use: 'mixed-use scheme' },
      verdicts: { GO: 'go ahead', CAUTION: 'proceed with caution', NO_GO: 'do not proceed' },
      advice: {
        GO: 'The market supports a new scheme: test pricing at the zone median per m² and phase sales to the absorption pace.',
        CAUTION: 'The case is marginal: secure the land on conditional terms and run a pre-sales test before committing to construction.',
        NO_GO: 'The figures do not support a new scheme here now: revisit when the trend or the absorption pace improves.',
      },
      profileAdvice: {
        residential: 'For residential units, unit mix matters: check the bedroom breakdown of the zone before fixing the design.',
        commercial: 'For commercial space, vacancy is the main risk: pre-let anchor tenants before building.',
        mixed_use: 'For mixed use, let the stronger segment carry the scheme and size the weaker one conservatively.',
      },
    },
    es: {
      title: 'informe para desarrolladores',
      profiles: { residential: 'proyecto residencial', commercial: 'proyecto comercial', mixed_use: 'proyecto de uso mixto' },
      verdicts: { GO: 'adelante', CAUTION: 'proceder con cautela', NO_GO: 'no proceder' },
      advice: {
        GO: 'El mercado respalda un proyecto nuevo: pruebe precios en la mediana por m² de la zona y escalone las ventas al ritmo de absorción.',
        CAUTION: 'El caso es ajustado: asegure el terreno con condiciones y haga una prueba de preventa antes de comprometer la construcción.',
        NO_GO: 'Las cifras no respaldan un proyecto nuevo aquí por ahora: revise de nuevo cuando mejoren la tendencia o el ritmo de absorción.',
      },
      profileAdvice: {
        residential: 'En vivienda, la mezcla de unidades importa: revise el desglose por habitaciones de la zona antes de cerrar el diseño.',
        commercial: 'En comercial, la desocupación es el riesgo principal: asegure inquilinos ancla antes de construir.',
        mixed_use: 'En uso mixto, deje que el segmento más fuerte sostenga el proyecto y dimensione el más débil con prudencia.',
      },
    },
    pt: {
      title: 'relatório para incorporadores',
      profiles: { residential: 'empreendimento residencial', commercial: 'empreendimento comercial', mixed_use: 'empreendimento de uso misto' },
      verdicts: { GO: 'seguir', CAUTION: 'seguir com cautela', NO_GO: 'não seguir' },
      advice: {
        GO: 'O mercado sustenta um novo empreendimento: teste preços na mediana por m² da zona e escalone as vendas ao ritmo de absorção.',
        CAUTION: 'O caso é apertado: garanta o terreno com condições e faça um teste de pré-venda antes de comprometer a obra.',
        NO_GO: 'Os números não sustentam um novo empreendimento aqui por enquanto: reavalie quando a tendência ou o ritmo de absorção melhorarem.',
      },
      profileAdvice: {
        residential: 'No residencial, o mix de unidades importa: veja a distribuição por quartos da zona antes de fechar o projeto.',
        commercial: 'No comercial, a vacância é o principal risco: feche inquilinos âncora antes de construir.',
        mixed_use: 'No uso misto, deixe o segmento mais forte sustentar o projeto e dimensione o mais fraco com prudência.',
      },
    },
  },
})
