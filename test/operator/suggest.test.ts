import { describe, expect, test } from 'vitest'
import { closest, editDistance } from '../../src/operator/suggest.ts'

describe('suggestions for mistyped commands and flags', () => {
  test('edit distance counts a swap of neighbours as one edit', () => {
    expect(editDistance('craete', 'create')).toBe(1)
    expect(editDistance('--tire', '--tier')).toBe(1)
    expect(editDistance('', 'key')).toBe(3)
    expect(editDistance('kitten', 'sitting')).toBe(3)
    expect(editDistance('same', 'same')).toBe(0)
  })

  test('the closest candidate within one edit per four characters (at least one, at most three), else none', () => {
    expect(closest('owner craete', ['owner create', 'owner activate'])).toBe('owner create')
    expect(closest('--tire', ['--id', '--tier', '--actor'])).toBe('--tier')
    expect(closest('--tiers', ['--tier'])).toBe('--tier')
    expect(closest('--xyz', ['--id', '--tier'])).toBeUndefined()
    expect(closest('frobnicate', ['ingest', 'owner create'])).toBeUndefined()
  })
})
