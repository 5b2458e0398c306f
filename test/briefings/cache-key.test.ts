import fc from 'fast-check'
import { expect, test } from 'vitest'
import { cacheKeyOf, canonicalJson } from '../../src/domain/briefings/cache-key.ts'
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
