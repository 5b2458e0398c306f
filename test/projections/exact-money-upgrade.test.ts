import { describe, expect, it } from 'vitest'
import { listingsProjection } from '../../projections/listings/projection.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import { generateDemoFeed } from '../../src/domain/demo/market.ts'
import type { FeedRecord } from '../../src/domain/listings/feed.ts'
import { listingId } from '../../src/domain/listings/listing.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { COUNTRIES } from '../../src/domain/market/vocabulary.ts'
import { diffProjection } from '../../src/operator/projection-diff.ts'
import { databaseTargets } from '../support/databases.ts'
import { storeFor } from '../support/store.ts'
import { halfCentPrices, isHalfCent, usdCents } from '../support/half-cents.ts'
import { ANCHOR } from '../support/market.ts'
import { listZones } from '../support/sql-zone-answers.ts'
import { floatUsd, listingsV2, recordWithFloatUsd } from './listings-v2-store.ts'

/**
 * The exact-money upgrade as an operator runs it (README, "Upgrading to exact money"): events recorded
 * by the floating-point conversion stay as they are; listings version 3 and later recompute every
 * USD amount from each event's local price and recorded rate; the current version is built beside
 * version 2, compared, promoted.
 */

const NOW = new Date(ANCHOR.getTime() + 86_400_000)
const records = halfCentPrices(generateDemoFeed({ seed: 'exact-money', listings: 900, anchor: ANCHOR }), 1)
const latest = [...new Map(records.map((r) => [listingId(r.source, r.source_id), r])).entries()]
const isPublic = (r: FeedRecord) => r.status === 'active' && r.source === 'broker' && r.verified_at !== null
/** Public listings whose recorded (floating-point) price in USD is not the exact one: what must change. */
const wrong = latest.filter(([, r]) => isPublic(r) && floatUsd(r.price, DEFAULT_FX[r.currency]) !== usdCents(r.price, DEFAULT_FX[r.currency]) / 100)

for (const target of databaseTargets('exact money upgrade')) {
  describe(`the exact-money upgrade of listings (v2 → v6) on ${target.name}`, () => {
    const env = storeFor(target.open, {
      seed: async (store, db) => {
        await recordWithFloatUsd(store, records)
        const v2 = new ProjectionRunner(db, store, [listingsV2])
        await v2.catchUp()
        await v2.stop()
      },
      projections: [listingsProjection],
    })

    it('builds v6 beside v2, shows exactly the prices and figures that change, promotes; the events stay as recorded', async () => {
      const eventsBefore = JSON.stringify(await env.store.readAll(0, { limit: 100_000 }))
      expect(latest.filter(([, r]) => isHalfCent(r)).length).toBeGreaterThan(700)
      expect(wrong.length).toBeGreaterThan(5)
      const servedBefore = await Promise.all(COUNTRIES.map((c) => listZones(env.db, c, NOW)))

      await env.runner.prepare()
      expect((await env.runner.status()).map((g) => [g.generation, g.state])).toEqual([
        ['v2.1', 'live'],
        ['v6.1', 'building'],
      ])
      const [built] = await env.runner.rebuild(['listings'], { hold: true })
      expect(built).toMatchObject({ generation: 'v6.1', outcome: 'held' })
      expect(await Promise.all(COUNTRIES.map((c) => listZones(env.db, c, NOW)))).toEqual(servedBefore)

      const diff = await diffProjection(env.db, listingsProjection, NOW)
      // Exactly the public listings whose recorded amount was rounded the wrong way, each by one cent up.
      expect(diff.listings!.changed).toBe(wrong.length)
      expect(diff.listings!.changes.map((c) => c.listing_id).sort()).toEqual(wrong.map(([id]) => id).sort())
      for (const change of diff.listings!.changes) {
        const record = latest.find(([id]) => id === change.listing_id)![1]
        const rate = DEFAULT_FX[record.currency]
        expect(change).toMatchObject({ change: 'changed', fields: { price_usd: { live: floatUsd(record.price, rate), held: usdCents(record.price, rate) / 100 } } })
        expect(Object.keys(change.fields).every((f) => f === 'price_usd' || f === 'price_per_m2_usd')).toBe(true)
        expect(Math.round(((change.fields.price_usd!.held as number) - (change.fields.price_usd!.live as number)) * 100)).toBe(1)
      }
      // Zone figures: medians of money and what derives from them; no count changes.
      expect(diff.zones!.figures_changed).toBeGreaterThan(0)
      expect(diff.zones!.changes.every((c) => /(median_price_usd|median_ppm2_usd|pct|change_30d\.median_ppm2_usd_(now|then))$/.test(c.field))).toBe(true)
      expect(diff.summary).toMatch(
        new RegExp(`^listings v2\\.1 \\(live\\) → v6\\.1 \\(held\\): ${diff.zones!.figures_changed} figure\\(s\\) differ in \\d+ of \\d+ zones; ${wrong.length} of \\d+ public listings differ$`),
      )

      expect(await env.runner.promote('listings')).toMatchObject({ from: 'v2.1', to: 'v6.1' })
      // What the diff announced as held is what /zones serves now.
      const served = await Promise.all(COUNTRIES.map(async (c) => [c, await listZones(env.db, c, NOW)] as const))
      const zoneFields = diff.zones!.changes.filter((c) => !c.field.includes('.') && !c.field.includes('['))
      expect(zoneFields.length).toBeGreaterThan(0)
      for (const change of zoneFields) {
        const zone = served.find(([c]) => c === change.country)![1].find((z) => z.zone === change.zone)!
        expect(zone[change.field as keyof typeof zone]).toEqual(change.held)
      }
      expect(JSON.stringify(await env.store.readAll(0, { limit: 100_000 }))).toBe(eventsBefore)
    })
  })
}
