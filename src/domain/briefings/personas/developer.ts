import { Type } from '@sinclair/typebox'
import { clamp, daysOnMarket, type Finding, type Ladder, momentum, priceVsCountry, propertyTypeStats, scoredAssessment, segmentFinding } from '../analysis.ts'
import type { ZoneDetail } from '../facts.ts'
import type { PropertyType } from '../../market/vocabulary.ts'
import { definePersona } from './define.ts'
import { personaText } from '../text/catalogue.ts'

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
  text: personaText('developer'),
})
