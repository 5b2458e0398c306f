import fc from 'fast-check'
import { expect, test } from 'vitest'
import { cacheKeyOf, canonicalJson, requestKeyOf } from '../../src/domain/briefings/cache-key.ts'
import { PERSONAS } from '../../src/domain/briefings/personas/index.ts'
import { bodyArbs } from './fixtures.ts'

const shuffled = <T>(items: readonly T[], seed: number) =>
  items
    .map((item, i) => ({ item, order: Math.sin(seed + i * 7919) }))
    .sort((a, b) => a.order - b.order)
    .map((x) => x.item)

test('canonical JSON ignores key order at every level and keeps values exact', () => {
  fc.assert(
    fc.property(fc.jsonValue(), fc.integer(), (value, seed) => {
      const reorder = (v: unknown): unknown =>
        Array.isArray(v)
          ? v.map(reorder)
          : v !== null && typeof v === 'object'
            ? Object.fromEntries(shuffled(Object.entries(v).map(([k, x]) => [k, reorder(x)] as const), seed))
            : v
      expect(canonicalJson(reorder(value))).toBe(canonicalJson(value))
      expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)))
    }),
  )
  expect(canonicalJson({ b: 1, a: { d: [2, { f: 1, e: 0 }], c: 'x' } })).toBe('{"a":{"c":"x","d":[2,{"e":0,"f":1}]},"b":1}')
})

test('the cache key is the persona, the country and the validated input with defaults applied', () => {
  for (const persona of Object.values(PERSONAS)) {
    fc.assert(
      fc.property(bodyArbs[persona.id]!, fc.integer(), (body, seed) => {
        const reordered = Object.fromEntries(shuffled(Object.entries(body), seed))
        const withDefaults = { country: 'GT', language: 'es', ...body }
        const key = cacheKeyOf(persona.id, persona.parse(body))
        expect(cacheKeyOf(persona.id, persona.parse(reordered))).toBe(key)
        expect(cacheKeyOf(persona.id, persona.parse(withDefaults))).toBe(key)
        expect(key.startsWith(`${persona.id}:GT:{`)).toBe(true)
      }),
      { numRuns: 50 },
    )
  }
  const investor = PERSONAS.investor
  const base = { zone: 'Zona 1', profile: 'balanced' }
  expect(cacheKeyOf('investor', investor.parse(base))).toBe('investor:GT:{"country":"GT","language":"es","profile":"balanced","zone":"Zona 1"}')
  expect(cacheKeyOf('investor', investor.parse({ ...base, language: 'en' }))).not.toBe(cacheKeyOf('investor', investor.parse(base)))
  expect(cacheKeyOf('investor', investor.parse({ ...base, country: 'SV' }))).toMatch(/^investor:SV:/)
})

test('the country is accepted in any letter case, like ?country=, and caches as one entry', () => {
  const persona = PERSONAS.investor
  const upper = cacheKeyOf('investor', persona.parse({ zone: 'Zona 1', profile: 'balanced', country: 'CR' }))
  expect(cacheKeyOf('investor', persona.parse({ zone: 'Zona 1', profile: 'balanced', country: 'cr' }))).toBe(upper)
  expect(upper.startsWith('investor:CR:{')).toBe(true)
  expect(() => persona.parse({ zone: 'Zona 1', profile: 'balanced', country: 'xx' })).toThrow(/country/)
})

test('the request key, which an Idempotency-Key hashes, is the persona, the country and the canonical input; without an estimate it is the cache key', () => {
  for (const persona of Object.values(PERSONAS)) {
    fc.assert(
      fc.property(bodyArbs[persona.id]!, (body) => {
        const input = persona.parse(body)
        const request = requestKeyOf(persona.id, input)
        expect(request).toBe(`${persona.id}:${input.country}:${canonicalJson(input)}`)
        const key = cacheKeyOf(persona.id, input)
        if (persona.estimateSubject(input) === null) expect(key).toBe(request)
        else expect(key.startsWith(`${request}:estimate:`)).toBe(true)
      }),
      { numRuns: 50 },
    )
  }
})

test('two requests whose estimates could differ never share a cache key: the key carries the subject and the method version', () => {
  for (const id of ['broker', 'homebuyer'] as const) {
    const persona = PERSONAS[id]
    fc.assert(
      fc.property(bodyArbs[id]!, bodyArbs[id]!, (a, b) => {
        const [x, y] = [persona.parse(a), persona.parse(b)]
        const [sx, sy] = [persona.estimateSubject(x), persona.estimateSubject(y)]
        if (canonicalJson(sx) !== canonicalJson(sy)) expect(cacheKeyOf(id, x)).not.toBe(cacheKeyOf(id, y))
      }),
      { numRuns: 200 },
    )
  }
  const broker = PERSONAS.broker
  const base = { zone: 'Zona 10', profile: 'listing_agent', property_type: 'Apartamento', area_m2: 100, asking_price_usd: 200_000 }
  const key = (body: Record<string, unknown>) => cacheKeyOf('broker', broker.parse(body))
  expect(key(base)).toBe(
    'broker:GT:{"area_m2":100,"asking_price_usd":200000,"country":"GT","language":"es","profile":"listing_agent","property_type":"Apartamento","zone":"Zona 10"}' +
      ':estimate:{"area_m2":100,"bedrooms":null,"comparables":10,"method":1,"operation":"Venta","property_type":"Apartamento"}',
  )
  expect(key({ ...base, area_m2: 120 })).not.toBe(key(base))
  expect(key({ ...base, property_type: 'Casa' })).not.toBe(key(base))
  expect(key({ ...base, zone: 'zona-10' })).toBe(key(base))
  const homebuyer = PERSONAS.homebuyer
  const home = { zone: 'Zona 10', profile: 'family', property_type: 'Apartamento', area_m2: 100, budget_usd: 200_000 }
  const homeKey = (body: Record<string, unknown>) => cacheKeyOf('homebuyer', homebuyer.parse(body))
  expect(homeKey({ ...home, bedrooms: 2 })).not.toBe(homeKey({ ...home, bedrooms: 3 }))
  expect(homeKey({ ...home, bedrooms: 3 })).toContain(':estimate:{"area_m2":100,"bedrooms":3,')
  expect(homeKey(home)).toContain(':estimate:{"area_m2":100,"bedrooms":null,')
})
