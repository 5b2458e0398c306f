import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { countryContext } from '../../src/domain/briefings/facts.ts'
import { zoneFactsFrom } from '../../src/briefings/facts-source.ts'
import { PERSONAS } from '../../src/domain/briefings/personas/index.ts'
import { estimateOf } from '../../src/domain/market/estimate.ts'
import { localAnalyst } from '../../src/domain/briefings/writer.ts'
import { listZones } from '../support/sql-zone-answers.ts'
import { databaseTargets } from '../support/databases.ts'
import { ANCHOR, type Market, openMarket } from '../support/market.ts'

test('country context: medians of the zones’ medians, skipping zones without one', () => {
  const zone = (n: number, ppm2: number | null, dom: number | null) => ({
    zone: `Zona ${n}`,
    slug: `zona-${n}`,
    median_ppm2_usd: ppm2,
    n_active: 10 * n,
    n_sale: 8 * n,
    median_dom: dom,
    median_price_usd: ppm2 === null ? null : ppm2 * 100,
    change_30d_pct: null,
    updated_at: '2026-05-01T00:00:00.000Z',
  })
  const context = countryContext('GT', [zone(1, 1000, 30), zone(2, 2000, null), zone(3, null, 50), zone(4, 1600, 40)])
  expect(context).toEqual({
    country: 'GT',
    zones: 4,
    n_active: 100,
    median_ppm2_usd: 1600,
    median_price_usd: 160_000,
    median_dom: 40,
    change_30d_pct: null,
  })
})

for (const target of databaseTargets('briefing facts from the zone read models')) {
  describe(`facts from the zone read models (${target.name})`, () => {
    let market: Market
    const now = new Date(ANCHOR.getTime() + 3600_000)

    beforeAll(async () => {
      market = await openMarket(target, 600)
    })
    afterAll(() => market.close())

    test('the zone detail as GET /zone serves it, the country from GET /zones, null for an unknown zone', async () => {
      const source = zoneFactsFrom(market.zones, market.inventory)
      const zone = await source.zone('GT', 'Zona 1', now)
      expect(zone).toMatchObject({ zone: 'Zona 1', slug: 'zona-1', country: 'GT' })
      expect(await source.zone('GT', 'Zona 999', now)).toBeNull()
      const country = await source.country('GT', now)
      const zones = await listZones(market.db, 'GT', now)
      expect(country.zones).toBe(zones.length)
      expect(country.n_active).toBe(zones.reduce((sum, z) => sum + z.n_active, 0))
    })

    test('the estimate as GET /estimate computes it now: from the inventory\'s public listings of the zone, operation and type', async () => {
      const source = zoneFactsFrom(market.zones, market.inventory)
      const subject = { operation: 'Venta', property_type: 'Apartamento', area_m2: 100, bedrooms: null, comparables: 10 } as const
      const estimate = await source.estimate('GT', 'Zona 2', subject)
      expect(estimate).toEqual({ subject, ...(await market.inventory.estimate('GT', 2, 'Venta', 'Apartamento', { areaM2: 100, comparables: 10 })) })
      expect(estimate.method.candidates).toBeGreaterThan(0)
    })

    test('every persona writes from real market data, in its vocabulary', async () => {
      const source = zoneFactsFrom(market.zones, market.inventory)
      const zone = (await source.zone('GT', 'Zona 2', now))!
      const f = { zone, country: await source.country('GT', now) }
      for (const persona of Object.values(PERSONAS)) {
        const draft = await localAnalyst.write(persona, persona.parse({ zone: 'Zona 2', profile: persona.profiles[0], language: 'en' }), f)
        expect(persona.verdicts).toContain(draft.verdict)
        expect(draft.body_md).toContain(`| Active listings | ${zone.n_active} |`)
      }
    })
  })
}
