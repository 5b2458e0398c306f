import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { CONFIDENCE_LEVELS } from '../../src/domain/briefings/analysis.ts'
import type { ZoneFacts } from '../../src/domain/briefings/facts.ts'
import { PERSONAS, type Persona } from '../../src/domain/briefings/personas/index.ts'
import { localAnalyst } from '../../src/domain/briefings/writer.ts'
import { bodyArbs, facts, factsArb } from './fixtures.ts'

const RUNS = { numRuns: 300 }
const rank = (persona: Persona, verdict: string) => persona.verdicts.indexOf(verdict)
const verdictOf = (persona: Persona, body: Record<string, unknown>, f: ZoneFacts) => persona.assess(persona.parse(body), f).verdict

/** For any body and facts, two values of `field` in [min, max]: the larger one's verdict stands at the same or an earlier place in `persona.verdicts`. */
function verdictNeverLaterWithMore(persona: Persona, field: string, min: number, max: number) {
  const value = fc.double({ min, max, noNaN: true })
  fc.assert(
    fc.property(bodyArbs[persona.id]!, factsArb, value, value, (body, f, a, b) => {
      const [small, big] = a <= b ? [a, b] : [b, a]
      expect(rank(persona, verdictOf(persona, { ...body, [field]: big }, f))).toBeLessThanOrEqual(rank(persona, verdictOf(persona, { ...body, [field]: small }, f)))
    }),
    RUNS,
  )
}
const confidenceRank = (c: string) => CONFIDENCE_LEVELS.indexOf(c as (typeof CONFIDENCE_LEVELS)[number])

describe('every persona', () => {
  for (const persona of Object.values(PERSONAS)) {
    test(`${persona.id}: verdicts come from its vocabulary, confidence from the levels, for any data`, async () => {
      await fc.assert(
        fc.asyncProperty(bodyArbs[persona.id]!, factsArb, async (body, f) => {
          const draft = await localAnalyst.write(persona, persona.parse(body), f)
          expect(persona.verdicts).toContain(draft.verdict)
          expect(CONFIDENCE_LEVELS).toContain(draft.confidence)
          expect(draft.headline).not.toContain('\n')
          expect(draft.body_md).toContain(draft.verdict)
        }),
        RUNS,
      )
    })

    test(`${persona.id}: more listings never lower the confidence`, () => {
      fc.assert(
        fc.property(bodyArbs[persona.id]!, factsArb, fc.integer({ min: 2, max: 20 }), (body, f, factor) => {
          const scale = <T extends { n_active: number }>(s: T): T => ({ ...s, n_active: s.n_active * factor })
          const z = f.zone
          const bigger: ZoneFacts = {
            ...f,
            zone: {
              ...scale(z),
              by_property_type: z.by_property_type.map(scale),
              by_bedrooms: z.by_bedrooms.map(scale),
              by_operation: z.by_operation.map(scale),
            },
          }
          const input = persona.parse(body)
          expect(confidenceRank(persona.assess(input, bigger).confidence)).toBeGreaterThanOrEqual(
            confidenceRank(persona.assess(input, f).confidence),
          )
        }),
        RUNS,
      )
    })

    test(`${persona.id}: the same input and data give the same briefing`, async () => {
      const input = persona.parse({ zone: 'Zona 10', profile: persona.profiles[0], language: 'en' })
      const first = await localAnalyst.write(persona, input, facts())
      const second = await localAnalyst.write(persona, structuredClone(input), facts())
      expect(second).toEqual(first)
    })
  }
})

describe('verdicts move the right way', () => {
  test('broker: a lower asking price never gets a higher-price verdict', () => {
    // verdicts are ordered ABOVE, AT, BELOW: a higher price sits at the same or an earlier index
    verdictNeverLaterWithMore(PERSONAS.broker, 'asking_price_usd', 1000, 1e7)
  })

  test('broker: the asking price decides against the property type median per m²', () => {
    const broker = PERSONAS.broker
    const body = { zone: 'Zona 10', profile: 'buyer_agent', property_type: 'Apartamento', area_m2: 100 }
    // Apartamento median in the fixture: USD 1,900/m², so 100 m² ≈ USD 190,000
    expect(verdictOf(broker, { ...body, asking_price_usd: 230_000 }, facts())).toBe('PRICE_ABOVE_MARKET')
    expect(verdictOf(broker, { ...body, asking_price_usd: 195_000 }, facts())).toBe('PRICE_AT_MARKET')
    expect(verdictOf(broker, { ...body, asking_price_usd: 150_000 }, facts())).toBe('PRICE_BELOW_MARKET')
  })

  test('homebuyer: a bigger budget never gives a worse verdict', () => {
    verdictNeverLaterWithMore(PERSONAS.homebuyer, 'budget_usd', 1000, 5e6)
  })

  test('homebuyer: a zone dearer against the country never looks like a better deal', () => {
    const homebuyer = PERSONAS.homebuyer
    fc.assert(
      fc.property(bodyArbs.homebuyer!, factsArb, fc.double({ min: 1, max: 3, noNaN: true }), (body, f, factor) => {
        fc.pre(f.zone.median_ppm2_usd !== null)
        const dearer: ZoneFacts = { ...f, zone: { ...f.zone, median_ppm2_usd: f.zone.median_ppm2_usd! * factor } }
        expect(rank(homebuyer, verdictOf(homebuyer, body, dearer))).toBeGreaterThanOrEqual(rank(homebuyer, verdictOf(homebuyer, body, f)))
      }),
      RUNS,
    )
  })

  test('investor: a bigger budget never gives a worse verdict', () => {
    verdictNeverLaterWithMore(PERSONAS.investor, 'budget_usd', 1000, 5e6)
  })

  test('investor: aggressive is never more cautious than balanced, balanced never more than conservative', () => {
    const investor = PERSONAS.investor
    fc.assert(
      fc.property(bodyArbs.investor!, factsArb, (body, f) => {
        const [aggressive, balanced, conservative] = (['aggressive', 'balanced', 'conservative'] as const).map((profile) =>
          rank(investor, verdictOf(investor, { ...body, profile }, f)),
        )
        expect(aggressive).toBeLessThanOrEqual(balanced!)
        expect(balanced).toBeLessThanOrEqual(conservative!)
      }),
      RUNS,
    )
  })

  test('landlord: higher rents never lower the yield verdict; higher sale prices never raise it', () => {
    const landlord = PERSONAS.landlord
    fc.assert(
      fc.property(bodyArbs.landlord!, factsArb, fc.double({ min: 1, max: 3, noNaN: true }), (body, f, factor) => {
        const rent = f.zone.by_operation.find((o) => o.operation === 'Renta')
        fc.pre(rent !== undefined && rent.median_ppm2_usd !== null)
        const withOperation = (operation: string, change: (ppm2: number | null) => number | null): ZoneFacts => ({
          ...f,
          zone: {
            ...f.zone,
            median_ppm2_usd: operation === 'Venta' ? change(f.zone.median_ppm2_usd) : f.zone.median_ppm2_usd,
            by_operation: f.zone.by_operation.map((o) => (o.operation === operation ? { ...o, median_ppm2_usd: change(o.median_ppm2_usd) } : o)),
          },
        })
        const scaled = (v: number | null) => (v === null ? null : v * factor)
        const base = rank(landlord, verdictOf(landlord, body, f))
        expect(rank(landlord, verdictOf(landlord, body, withOperation('Renta', scaled)))).toBeLessThanOrEqual(base)
        expect(rank(landlord, verdictOf(landlord, body, withOperation('Venta', scaled)))).toBeGreaterThanOrEqual(base)
      }),
      RUNS,
    )
  })

  test('landlord: thresholds follow the profile (5.6% gross is moderate long-term, weak short-term)', () => {
    const landlord = PERSONAS.landlord
    // 12 × 9.5 / 1820 = 6.3%
    const f = facts({ by_operation: [{ operation: 'Venta', n_active: 120, median_ppm2_usd: 1820, median_price_usd: 245_000 }, { operation: 'Renta', n_active: 40, median_ppm2_usd: 9.5, median_price_usd: 1200 }] })
    expect(verdictOf(landlord, { zone: 'Zona 10', profile: 'long_term' }, f)).toBe('MODERATE_YIELD')
    expect(verdictOf(landlord, { zone: 'Zona 10', profile: 'short_term' }, f)).toBe('MODERATE_YIELD')
    expect(verdictOf(landlord, { zone: 'Zona 10', profile: 'corporate' }, f)).toBe('MODERATE_YIELD')
    const g = facts({ by_operation: [{ operation: 'Venta', n_active: 120, median_ppm2_usd: 1820, median_price_usd: 245_000 }, { operation: 'Renta', n_active: 40, median_ppm2_usd: 8.5, median_price_usd: 1100 }] })
    // 12 × 8.5 / 1820 = 5.6%
    expect(verdictOf(landlord, { zone: 'Zona 10', profile: 'long_term' }, g)).toBe('MODERATE_YIELD')
    expect(verdictOf(landlord, { zone: 'Zona 10', profile: 'short_term' }, g)).toBe('WEAK_YIELD')
  })

  test('developer: a larger lot never improves the verdict; a stronger 30-day trend never worsens it', () => {
    const developer = PERSONAS.developer
    fc.assert(
      fc.property(
        bodyArbs.developer!,
        factsArb,
        fc.double({ min: 10, max: 1e6, noNaN: true }),
        fc.double({ min: 10, max: 1e6, noNaN: true }),
        fc.double({ min: 0, max: 20, noNaN: true }),
        (body, f, a, b, rise) => {
          const [small, large] = a <= b ? [a, b] : [b, a]
          expect(rank(developer, verdictOf(developer, { ...body, lot_m2: large }, f))).toBeGreaterThanOrEqual(
            rank(developer, verdictOf(developer, { ...body, lot_m2: small }, f)),
          )
          fc.pre(f.zone.change_30d.pct !== null)
          const stronger: ZoneFacts = { ...f, zone: { ...f.zone, change_30d: { ...f.zone.change_30d, pct: f.zone.change_30d.pct! + rise } } }
          expect(rank(developer, verdictOf(developer, body, stronger))).toBeLessThanOrEqual(rank(developer, verdictOf(developer, body, f)))
        },
      ),
      RUNS,
    )
  })
})

describe('the briefing text', () => {
  test('cites the figures it used, in the requested language', async () => {
    const investor = PERSONAS.investor
    const f = facts()
    const en = await localAnalyst.write(investor, investor.parse({ zone: 'Zona 10', profile: 'balanced', language: 'en', budget_usd: 150_000 }), f)
    expect(en.body_md).toContain('USD 1,820') // zone median per m²
    expect(en.body_md).toContain('USD 1,500') // country median per m²
    expect(en.body_md).toContain('21.3% above') // (1820/1500 - 1)
    expect(en.body_md).toContain('+3.1%') // 30-day change
    expect(en.body_md).toContain('USD 150,000') // the budget
    expect(en.body_md).toContain('Verdict')
    const pt = await localAnalyst.write(investor, investor.parse({ zone: 'Zona 10', profile: 'balanced', language: 'pt' }), f)
    expect(pt.body_md).toContain('USD 1.820')
    expect(pt.body_md).toContain('21,3%')
    expect(pt.body_md).toContain('Veredito')
    const es = await localAnalyst.write(investor, investor.parse({ zone: 'Zona 10', profile: 'balanced' }), f)
    expect(es.body_md).toContain('Veredicto')
    expect(es.body_md).toContain('USD 1,820')
  })

  test('a thin sample gives low confidence and says how many listings stand behind it', async () => {
    const investor = PERSONAS.investor
    const thin = facts({ n_active: 6, by_operation: [{ operation: 'Venta', n_active: 6, median_ppm2_usd: 1820, median_price_usd: 245_000 }, { operation: 'Renta', n_active: 0, median_ppm2_usd: null, median_price_usd: null }] })
    const draft = await localAnalyst.write(investor, investor.parse({ zone: 'Zona 10', profile: 'balanced', language: 'en' }), thin)
    expect(draft.confidence).toBe('low')
    expect(draft.body_md).toContain('6 listings behind the main figure')
    expect(draft.body_md).toContain('too few rent listings')
  })
})
