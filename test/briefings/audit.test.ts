import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { MIN_DEMO_LISTINGS } from '../../src/domain/demo/market.ts'
import { seedDemo } from '../../src/demo/seed.ts'
import type { QuotaAuditEntry } from '../../src/audit/quota.ts'
import { type TestSystem, startTestSystem } from '../support/app.ts'
import { databaseTargets } from '../support/databases.ts'

/** A clock the test moves a minute per request. */
const clock = Object.assign(() => new Date(clock.now), { now: Date.parse('2026-05-10T09:00:00Z') })

type QuotaAudit = { used: number; charged: number; cache_hits: number; month: string; entries: QuotaAuditEntry[] }

for (const target of databaseTargets('quota audit')) {
  describe(`audit quota against what the API reported (${target.name})`, () => {
    let system: TestSystem
    let key: { key: string; keyId: string }
    const answered: { at: string; briefing_id: string; cached: boolean; used: number }[] = []

    beforeAll(async () => {
      system = await startTestSystem(await target.open(), { clock })
      await seedDemo(system.storage.store, { seed: 'quota-audit', listings: MIN_DEMO_LISTINGS, anchor: new Date('2026-05-01T00:00:00Z') })
      key = await system.ownerWithKey('client', 'pro')
      const asks: [persona: string, body: Record<string, unknown>][] = [
        ['investor', { zone: 'Zona 1', profile: 'balanced' }],
        ['investor', { zone: 'Zona 1', profile: 'balanced' }],
        ['homebuyer', { zone: 'Zona 2', profile: 'family' }],
        ['landlord', { zone: 'Zona 3', profile: 'long_term' }],
        ['investor', { profile: 'balanced', zone: 'Zona 1' }],
        ['developer', { zone: 'Zona 4', profile: 'residential' }],
        ['homebuyer', { zone: 'Zona 2', profile: 'family' }],
      ]
      for (const [persona, body] of asks) {
        clock.now += 60_000
        const response = await system.request(`/api/v1/briefings/${persona}`, {
          key: key.key,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
        expect(response.status).toBe(200)
        const result = (await response.json()) as { briefing_id: string; cached: boolean; usage: { used: number } }
        answered.push({ at: new Date(clock.now).toISOString(), briefing_id: result.briefing_id, cached: result.cached, used: result.usage.used })
      }
    })
    afterAll(() => system?.close())

    test('every line has position, time, type, actor and the running total the API reported with that briefing', async () => {
      const audit = await system.run<QuotaAudit>('audit quota', { id: 'client', month: '2026-05' })
      expect(answered.map((a) => a.cached)).toEqual([false, true, false, false, true, false, true])
      expect(audit.entries.map((e) => [e.at, e.briefing_id, e.type, e.actor, e.charged, e.used])).toEqual(
        answered.map((a) => [a.at, a.briefing_id, a.cached ? 'BriefingServedFromCache' : 'BriefingGenerated', key.keyId, !a.cached, a.used]),
      )
      expect(audit).toMatchObject({ used: 4, charged: 4, cache_hits: 3 })
    })

    test('--until stops at that moment, with the total the API reported then (and its month by default)', async () => {
      const fourth = answered[3]!
      const audit = await system.run<QuotaAudit>('audit quota', { id: 'client', until: fourth.at })
      expect(audit.month).toBe('2026-05')
      expect(audit.entries).toHaveLength(4)
      expect(audit.used).toBe(fourth.used)
      expect(audit.entries.at(-1)!.briefing_id).toBe(fourth.briefing_id)
      expect((await system.run<QuotaAudit>('audit quota', { id: 'client', until: '2026-05-10T08:00:00Z' })).entries).toEqual([])
    })
  })
}
