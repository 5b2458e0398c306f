import { describe, expect, test } from 'vitest'
import type { Briefed } from '../../src/briefings/deps.ts'
import { requestHashOf } from '../../src/domain/briefings/idempotency.ts'
import { requestKeyOf } from '../../src/domain/briefings/cache-key.ts'
import { PERSONAS } from '../../src/domain/briefings/personas/index.ts'
import { openPglite } from '../../src/db/pglite.ts'
import { fixtureFacts, gtZones } from './fixtures.ts'
import { briefingStoreFor, caller, testService } from './harness.ts'

/**
 * The briefing service asks for the estimate a persona's input describes, once per briefing written
 * (never for a cache hit), and caches the briefing under a key that carries the estimate's subject.
 */
const apartments = [1600, 1650, 1700, 1800, 1900, 1950, 1980, 2000].map((ppm2, i) => ({ id: `lst_apt${i + 1}`, areaM2: 100, bedrooms: 2, bathrooms: 2, cents: ppm2 * 100 * 100 }))
const bodyOf = (answer: Briefed) => answer.briefing
const broker = (extra: Record<string, unknown> = {}) => ({ zone: 'Zona 4', profile: 'listing_agent', language: 'en', property_type: 'Apartamento', area_m2: 100, asking_price_usd: 205_000, ...extra })

describe('briefings judged against an estimate, through the service (pglite)', () => {
  const env = briefingStoreFor(openPglite)
  const facts = fixtureFacts(gtZones(10), undefined, apartments)

  test('given a broker input with a property type and an area, when it is written, then the body names the estimate and every comparable; a cache hit asks for none', async () => {
    const service = testService(env.db, env.store, facts)
    const first = await service.brief('broker', broker(), caller('erin')).then(bodyOf)
    expect(facts.estimateCalls).toBe(1)
    expect(first).toMatchObject({ verdict: 'PRICE_ABOVE_MARKET', confidence: 'high', cached: false })
    expect(first.body_md).toContain('**USD 185,000**, range USD 160,000 to USD 200,000')
    for (const { id } of apartments) expect(first.body_md).toContain(`| \`${id}\` |`)
    const again = await service.brief('broker', broker(), caller('fred')).then(bodyOf)
    expect(again).toMatchObject({ cached: true, briefing_id: first.briefing_id })
    expect(facts.estimateCalls).toBe(1)
  })

  test('given two inputs whose estimates would differ (another area), then neither is served the other\'s briefing', async () => {
    const service = testService(env.db, env.store, facts)
    const hundred = await service.brief('broker', broker({ zone: 'Zona 5' }), caller('erin')).then(bodyOf)
    const bigger = await service.brief('broker', broker({ zone: 'Zona 5', area_m2: 120 }), caller('erin')).then(bodyOf)
    expect(bigger.cached).toBe(false)
    expect(bigger.briefing_id).not.toBe(hundred.briefing_id)
    // 120 m² at the same prices per m²: USD 222,000, range 192,000 to 240,000; the same asking price is inside it.
    expect(bigger.body_md).toContain('**USD 222,000**, range USD 192,000 to USD 240,000')
    expect(bigger.verdict).toBe('PRICE_AT_MARKET')
  })

  test('given an input that describes no property, then no estimate is asked for', async () => {
    const service = testService(env.db, env.store, facts)
    const before = facts.estimateCalls
    await service.brief('broker', { zone: 'Zona 6', profile: 'listing_agent', asking_price_usd: 205_000 }, caller('erin'))
    await service.brief('homebuyer', { zone: 'Zona 6', profile: 'family', budget_usd: 200_000, bedrooms: 3 }, caller('erin'))
    await service.brief('investor', { zone: 'Zona 6', profile: 'balanced' }, caller('erin'))
    expect(facts.estimateCalls).toBe(before)
  })

  test('given an Idempotency-Key, then its request hash is of the request alone, as before estimates: a retry is still a replay', async () => {
    const service = testService(env.db, env.store, facts)
    const body = broker({ zone: 'Zona 7' })
    const first = await service.brief('broker', body, caller('gina'), 'retry-1')
    const retry = await service.brief('broker', { ...body }, caller('gina'), 'retry-1')
    expect(retry).toMatchObject({ replayed: true, briefing: { briefing_id: first.briefing.briefing_id } })
    const input = PERSONAS.broker.parse(body)
    expect(requestHashOf(requestKeyOf('broker', input))).toBe(requestHashOf(`broker:GT:${JSON.stringify({ area_m2: 100, asking_price_usd: 205_000, country: 'GT', language: 'en', profile: 'listing_agent', property_type: 'Apartamento', zone: 'Zona 7' })}`))
  })
})
