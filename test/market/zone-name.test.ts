import { describe, expect, it } from 'vitest'
import { zoneName, zoneNumberOfName, zoneNumberOfSlug, zoneSlug } from '../../src/domain/market/zone-name.ts'

describe('zone names and slugs', () => {
  it('round-trips Zona N and zona-N', () => {
    for (const n of [1, 9, 10, 16, 250]) {
      expect(zoneNumberOfName(zoneName(n))).toBe(n)
      expect(zoneNumberOfSlug(zoneSlug(n))).toBe(n)
    }
  })

  it('accepts only the canonical spellings', () => {
    for (const bad of ['zona 1', 'Zona 01', 'Zona 0', 'Zona', 'Zona -1', ' Zona 1', 'Zona 1 ', 'Zona 1a']) {
      expect(zoneNumberOfName(bad)).toBeNull()
    }
    for (const bad of ['Zona-1', 'zona-01', 'zona-0', 'zona_1', 'zona-', 'zona-1/']) expect(zoneNumberOfSlug(bad)).toBeNull()
  })
})
