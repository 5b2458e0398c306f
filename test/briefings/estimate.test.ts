import { describe, expect, test } from 'vitest'
import type { EstimateSubject, ZoneFacts } from '../../src/domain/briefings/facts.ts'
import { briefingEstimate } from './fixtures.ts'
import { PERSONAS, type Persona } from '../../src/domain/briefings/personas/index.ts'
import { localAnalyst } from '../../src/domain/briefings/writer.ts'
import type { ComparableListing } from '../../src/domain/market/comparable.ts'
import { facts } from './fixtures.ts'

/**
 * Briefings judged against the estimate of the property their input describes (decision 0110):
 * the broker's asking price and the homebuyer's budget against the estimate's range, the zone rule
 * when there is no estimate (and the briefing says so), the comparables named in the Markdown.
 *
 * The market below is worked by hand. Eight public apartments for sale in Zona 10, each of 100 m²,
 * at USD 1,600, 1,650, 1,700, 1,800, 1,900, 1,950, 1,980 and 2,000 per m²: for a property of 100 m²
 * every one is kept at level 2 (same area, bedrooms not asked), so the estimate is the median of the
 * eight prices per m², (1,800 + 1,900) / 2 = 1,850, × 100 m² = USD 185,000; the range the 1st and 8th
 * (⌈0.1·8⌉, ⌈0.9·8⌉) × 100 m²: USD 160,000 to USD 200,000; 8 used, level 2, 40,000 ≤ 50 % of 185,000:
 * confidence high.
 * The zone's own rule, for comparison: apartments' median USD 1,900/m² (fixtures.ts), at market within ±10 %.
 */
const apartment = (n: number, ppm2: number, bedrooms = 2): ComparableListing => ({ id: `lst_apt${n}`, areaM2: 100, bedrooms, bathrooms: 2, cents: ppm2 * 100 * 100 })
const EIGHT = [1600, 1650, 1700, 1800, 1900, 1950, 1980, 2000].map((ppm2, i) => apartment(i + 1, ppm2))
const IDS = EIGHT.map((c) => c.id)

/** The facts a briefing of `persona` for `body` gets when the public listings are `candidates` (the service's step 5). */
function factsFor(persona: Persona, body: Record<string, unknown>, candidates: readonly ComparableListing[], zoneFacts: ZoneFacts = facts()): ZoneFacts {
  const subject = persona.estimateSubject(persona.parse(body))
  return subject === null ? zoneFacts : { ...zoneFacts, estimate: briefingEstimate(subject, candidates) }
}

const write = (persona: Persona, body: Record<string, unknown>, f: ZoneFacts) => localAnalyst.write(persona, persona.parse(body), f)
const assess = (persona: Persona, body: Record<string, unknown>, f: ZoneFacts) => persona.assess(persona.parse(body), f)

describe('broker: the asking price against the estimate of the property', () => {
  const broker = PERSONAS.broker
  const property = { zone: 'Zona 10', profile: 'listing_agent', language: 'en', property_type: 'Apartamento', area_m2: 100 }
  const verdictAt = (asking: number) => assess(broker, { ...property, asking_price_usd: asking }, factsFor(broker, property, EIGHT)).verdict

  test('given a property type and an area, the briefing asks for an estimate of that property for sale, with GET /estimate\'s default comparables', () => {
    const subject: EstimateSubject = { operation: 'Venta', property_type: 'Apartamento', area_m2: 100, bedrooms: null, comparables: 10 }
    expect(broker.estimateSubject(broker.parse(property))).toEqual(subject)
    expect(broker.estimateSubject(broker.parse({ ...property, area_m2: undefined }))).toBeNull()
    expect(broker.estimateSubject(broker.parse({ ...property, property_type: undefined }))).toBeNull()
    expect(factsFor(broker, property, EIGHT).estimate).toMatchObject({
      estimate: { price_usd: 185_000, price_per_m2_usd: 1850, low_usd: 160_000, high_usd: 200_000, confidence: 'high' },
      method: { level: 2, candidates: 8, kept: 8, used: 8 },
    })
  })

  // The range is USD 160,000 to 200,000 (both ends inside); the zone's own rule is ±10 % of its USD 1,900/m².
  test.each([
    // 1,650/m² is 13.2 % under the zone's 1,900: the zone rule alone would say below; the estimate decides.
    [165_000, 'PRICE_AT_MARKET', 'PRICE_BELOW_MARKET'],
    [160_000, 'PRICE_AT_MARKET', 'PRICE_BELOW_MARKET'],
    [200_000, 'PRICE_AT_MARKET', 'PRICE_AT_MARKET'],
    [200_000.01, 'PRICE_ABOVE_MARKET', 'PRICE_AT_MARKET'],
    // 205,000 is 7.9 % over the zone's 190,000: at the market by the zone rule, above the range.
    [205_000, 'PRICE_ABOVE_MARKET', 'PRICE_AT_MARKET'],
    [159_999.99, 'PRICE_BELOW_MARKET', 'PRICE_BELOW_MARKET'],
    [120_000, 'PRICE_BELOW_MARKET', 'PRICE_BELOW_MARKET'],
  ])('given an asking price of USD %d, then %s against the estimate (the zone rule alone: %s)', (asking, verdict, zoneVerdict) => {
    expect(verdictAt(asking)).toBe(verdict)
    expect(assess(broker, { ...property, asking_price_usd: asking }, facts()).verdict).toBe(zoneVerdict)
  })

  test('then the confidence is the estimate\'s and the sample its comparables; the finding carries the figures it used', () => {
    const a = assess(broker, { ...property, asking_price_usd: 205_000 }, factsFor(broker, property, EIGHT))
    expect(a).toMatchObject({ confidence: 'high', sample: 8 })
    expect(a.findings).toContainEqual({
      kind: 'asking_vs_estimate',
      asking_usd: 205_000,
      estimate_usd: 185_000,
      low_usd: 160_000,
      high_usd: 200_000,
      position: 'above',
      pct: (205_000 / 185_000 - 1) * 100,
    })
    // A missing figure lowers it a level, as elsewhere: no days on market in the zone.
    const noDays = factsFor(broker, property, EIGHT, facts({ median_dom: null }))
    expect(assess(broker, { ...property, asking_price_usd: 205_000 }, noDays).confidence).toBe('medium')
  })

  test('given fewer than 5 comparables, then there is no estimate: the zone rule decides exactly as before, and the briefing says so', async () => {
    const four = EIGHT.slice(0, 4)
    const body = { ...property, asking_price_usd: 205_000 }
    const without = factsFor(broker, property, four)
    expect(without.estimate).toMatchObject({ estimate: null, reason: 'too_few_comparables', comparables: [], method: { candidates: 4 } })
    const zoneOnly = assess(broker, body, facts())
    const judged = assess(broker, body, without)
    expect(judged).toEqual({ ...zoneOnly, findings: [{ kind: 'no_estimate', operation: 'Venta', property_type: 'Apartamento', candidates: 4, min_comparables: 5 }, ...zoneOnly.findings] })
    const draft = await write(broker, body, without)
    expect(draft.verdict).toBe('PRICE_AT_MARKET')
    expect(draft.body_md).toContain(
      "- There is no estimate of this property: Zona 10 has 4 public listings of apartments for sale, fewer than the 5 an estimate needs; the zone's medians decide instead.",
    )
    expect(draft.body_md).not.toContain('#### Estimate')
    expect(draft.body_md).not.toContain('lst_apt')
  })

  test('given no asking price, then the estimate is shown and the zone is compared with the country as before', async () => {
    const draft = await write(broker, property, factsFor(broker, property, EIGHT))
    const before = await write(broker, property, facts())
    expect(draft.verdict).toBe(before.verdict)
    expect(draft.confidence).toBe(before.confidence)
    expect(draft.body_md).toContain('#### Estimate')
  })
})

describe('the Markdown names the estimate, its range, its confidence and the comparables it relied on', () => {
  const broker = PERSONAS.broker
  const property = { zone: 'Zona 10', profile: 'buyer_agent', property_type: 'Apartamento', area_m2: 100, asking_price_usd: 205_000 }

  test('in English: the figures, the method and one row per comparable, by listing id', async () => {
    const draft = await write(broker, { ...property, language: 'en' }, factsFor(broker, property, EIGHT))
    expect(draft.headline).toBe("Zona 10, Guatemala: PRICE_ABOVE_MARKET (priced above the market) — asking price above the estimate's range")
    expect(draft.body_md).toContain(
      'Estimate for the property (apartment, 100 m², for sale) in Zona 10: **USD 185,000**, range USD 160,000 to USD 200,000 (USD 1,850/m²), confidence high. ' +
        'It is the median price per m² of the 8 public listings below × 100 m², the range their 10th and 90th percentiles; ' +
        'they are the closest of the 8 kept at level 2 (any bedrooms, area within 25%) among 8 apartments for sale in the zone (method version 1).',
    )
    expect(draft.body_md).toContain("| Comparable listing | m² | Bedrooms | Price | Per m² | At the property's area |")
    expect(draft.body_md).toContain('| `lst_apt1` | 100 | 2 | USD 160,000 | USD 1,600 | USD 160,000 |')
    for (const id of IDS) expect(draft.body_md).toContain(`| \`${id}\` |`)
    expect(draft.body_md).toContain(
      "- The asking price of USD 205,000 is above the estimate's range (USD 160,000 to USD 200,000): 10.8% above the estimate of USD 185,000.",
    )
    // The section stands between the zone's figures and the analysis.
    expect(draft.body_md.indexOf('#### Figures used')).toBeLessThan(draft.body_md.indexOf('#### Estimate'))
    expect(draft.body_md.indexOf('#### Estimate')).toBeLessThan(draft.body_md.indexOf('#### Analysis'))
  })

  test('in Spanish and Portuguese, with the same ids and numbers in each language\'s format', async () => {
    const es = await write(broker, { ...property, language: 'es' }, factsFor(broker, property, EIGHT))
    expect(es.body_md).toContain('#### Estimación')
    expect(es.body_md).toContain('Estimación para el inmueble (apartamento, 100 m², en venta) en Zona 10: **USD 185,000**, rango de USD 160,000 a USD 200,000')
    expect(es.body_md).toContain('confianza alta')
    const pt = await write(broker, { ...property, language: 'pt' }, factsFor(broker, property, EIGHT))
    expect(pt.body_md).toContain('#### Estimativa')
    expect(pt.body_md).toContain('Estimativa para o imóvel (apartamento, 100 m², à venda) em Zona 10: **USD 185.000**, faixa de USD 160.000 a USD 200.000')
    expect(pt.body_md).toContain('O preço pedido de USD 205.000 está acima da faixa da estimativa (USD 160.000 a USD 200.000): 10,8% acima da estimativa de USD 185.000.')
    for (const id of IDS) {
      expect(es.body_md).toContain(`\`${id}\``)
      expect(pt.body_md).toContain(`\`${id}\``)
    }
  })

  test('only the comparables used are named: the 10 closest of more candidates', async () => {
    // Twelve at growing distance (areas 100 … 111 m² against 100): the two farthest are kept but not used.
    const twelve = Array.from({ length: 12 }, (_, i) => ({ ...apartment(i + 10, 1800), areaM2: 100 + i, cents: 1800 * (100 + i) * 100 }))
    const draft = await write(broker, { ...property, language: 'en' }, factsFor(broker, property, twelve))
    for (const used of twelve.slice(0, 10)) expect(draft.body_md).toContain(`\`${used.id}\``)
    for (const unused of twelve.slice(10)) expect(draft.body_md).not.toContain(unused.id)
    expect(draft.body_md).toContain('closest of the 12 kept at level 2')
  })
})

describe('homebuyer: the budget against the estimate of the home described', () => {
  const homebuyer = PERSONAS.homebuyer
  // A zone 17 % cheaper than its country (+1.7), rising 3.1 % (-0.93), selling faster (-0.375): 0.42 points before the budget.
  const zone = facts({}, { median_ppm2_usd: 2200 })
  const home = { zone: 'Zona 10', profile: 'family', language: 'en', property_type: 'Apartamento', area_m2: 100, bedrooms: 3 }
  const threeBedrooms = EIGHT.map((c) => ({ ...c, bedrooms: 3 }))
  const budgetFinding = (budget: number) =>
    assess(homebuyer, { ...home, budget_usd: budget }, factsFor(homebuyer, home, threeBedrooms, zone)).findings.find((f) => f.kind === 'budget_vs_estimate')

  test('given a property type and an area, the estimate is of that home for sale with the bedrooms asked, never the profile\'s default', () => {
    expect(homebuyer.estimateSubject(homebuyer.parse(home))).toEqual({ operation: 'Venta', property_type: 'Apartamento', area_m2: 100, bedrooms: 3, comparables: 10 })
    expect(homebuyer.estimateSubject(homebuyer.parse({ ...home, bedrooms: undefined }))).toMatchObject({ bedrooms: null })
    expect(homebuyer.estimateSubject(homebuyer.parse({ zone: 'Zona 10', profile: 'family', bedrooms: 3, budget_usd: 200_000 }))).toBeNull()
    expect(homebuyer.estimateSubject(homebuyer.parse({ ...home, area_m2: undefined }))).toBeNull()
    // Same bedrooms and area within 25 %: all eight kept at level 1.
    expect(factsFor(homebuyer, home, threeBedrooms).estimate).toMatchObject({ estimate: { price_usd: 185_000, low_usd: 160_000, high_usd: 200_000 }, method: { level: 1 } })
  })

  test('given a budget below, inside or above the range, then -2, 0 or +1 points', () => {
    expect(budgetFinding(159_999)).toMatchObject({ position: 'below', points: -2 })
    expect(budgetFinding(160_000)).toMatchObject({ position: 'inside', points: 0 })
    expect(budgetFinding(200_000)).toMatchObject({ position: 'inside', points: 0 })
    expect(budgetFinding(200_001)).toMatchObject({ position: 'above', points: 1 })
  })

  test('given a budget above the range, when the median of 3-bedroom homes says it is short, then the estimate decides: GOOD_DEAL, not FAIR_PRICE', async () => {
    // By the zone's median of 3-bedroom homes (USD 320,000) a budget of 250,000 is 78 %: -0.66 points, 0.42 - 0.66 → FAIR_PRICE.
    const body = { ...home, budget_usd: 250_000 }
    expect(assess(homebuyer, body, zone).verdict).toBe('FAIR_PRICE')
    const draft = await write(homebuyer, body, factsFor(homebuyer, home, threeBedrooms, zone))
    expect(draft.verdict).toBe('GOOD_DEAL')
    expect(draft.body_md).toContain(
      "- Your budget of USD 250,000 is above the estimate's range for the home you describe (USD 160,000 to USD 200,000; estimate USD 185,000). _(favourable)_",
    )
    expect(draft.body_md).toContain('Estimate for the property (apartment, 100 m², 3 bedrooms, for sale) in Zona 10: **USD 185,000**')
    for (const id of IDS) expect(draft.body_md).toContain(`\`${id}\``)
  })

  test('given fewer than 5 comparables, then the median rule stands and the briefing says there is no estimate', async () => {
    const body = { ...home, budget_usd: 250_000 }
    const without = factsFor(homebuyer, home, threeBedrooms.slice(0, 3), zone)
    const a = assess(homebuyer, body, without)
    expect(a.verdict).toBe('FAIR_PRICE')
    expect(a.findings).toContainEqual({ kind: 'no_estimate', operation: 'Venta', property_type: 'Apartamento', candidates: 3, min_comparables: 5 })
    expect(a.findings).toContainEqual(expect.objectContaining({ kind: 'budget', segment: { kind: 'bedrooms', value: '3' } }))
    const draft = await write(homebuyer, body, without)
    expect(draft.body_md).toContain('There is no estimate of this property: Zona 10 has 3 public listings of apartments for sale')
  })

  test('given no budget, then the estimate is shown and scores nothing', async () => {
    const draft = await write(homebuyer, home, factsFor(homebuyer, home, threeBedrooms, zone))
    expect(draft.verdict).toBe((await write(homebuyer, home, zone)).verdict)
    expect(draft.body_md).toContain('#### Estimate')
  })
})
