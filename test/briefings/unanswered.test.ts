import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest'
import { MIN_DEMO_LISTINGS } from '../../src/domain/demo/market.ts'
import { seedDemo } from '../../src/demo/seed.ts'
import type { QuotaAuditEntry } from '../../src/audit/quota.ts'
import type { EventStore } from '../../src/eventstore/port.ts'
import { asRequest } from '../../src/runtime/dependency.ts'
import { type TestSystem, startTestSystem } from '../support/app.ts'
import { databaseTargets } from '../support/databases.ts'

/**
 * The real store, except that the next append of an event of the type the test arms is recorded and
 * its answer then held until the test lets it go: the append commits, and its request, which waits
 * at most a second for it (src/runtime/dependency.ts), answers 503 first. So a KurrentDB server
 * answered late under load (issue 32: 102 replays recorded, 63 answered).
 */
function lateAnswers(store: EventStore) {
  let armed: { type: string; released: Promise<void> } | null = null
  let release = () => {}
  const late: EventStore = {
    ...store,
    async append(stream, events, expected) {
      const appended = await store.append(stream, events, expected)
      const held = armed
      if (held && events.some((e) => e.type === held.type)) {
        armed = null
        await held.released
      }
      return appended
    },
  }
  return {
    store: late,
    /** The next append of a `type` event answers once `release` is called. */
    arm(type: string) {
      armed = { type, released: new Promise<void>((resolve) => (release = resolve)) }
    },
    release: () => release(),
  }
}

type QuotaAudit = { used: number; charged: number; replays: number; not_answered: number; entries: QuotaAuditEntry[] }

const clock = Object.assign(() => new Date(clock.now), { now: Date.parse('2026-05-10T09:00:00Z') })

for (const target of databaseTargets('answered or not in audit quota')) {
  describe(`what the client received is what audit quota shows (${target.name})`, () => {
    let system: TestSystem
    let key: string
    let late: ReturnType<typeof lateAnswers>

    beforeAll(async () => {
      system = await startTestSystem(await target.open(), {
        clock,
        eventStore: (store) => (late = lateAnswers(store)).store,
      })
      await seedDemo(system.storage.store, { seed: 'unanswered', listings: MIN_DEMO_LISTINGS, anchor: new Date('2026-05-01T00:00:00Z') })
      key = (await system.ownerWithKey('client', 'pro')).key
    })
    afterAll(() => system?.close())

    /** A briefing request as the server runs one: bounded in time (asRequest, as src/server-components.ts does). */
    const post = (body: Record<string, unknown>, idempotencyKey?: string) => {
      clock.now += 60_000
      return asRequest(() =>
        system.request('/api/v1/briefings/investor', {
          key,
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) },
          body: JSON.stringify(body),
        }),
      )
    }
    /** The audit once `settled` holds of it: the record of an answer that failed is written after the failure. */
    const auditWhen = (settled: (audit: QuotaAudit) => void) =>
      vi.waitFor(async () => {
        const audit = await system.run<QuotaAudit>('audit quota', { id: 'client', month: '2026-05' })
        settled(audit)
        return audit
      }, { timeout: 10_000, interval: 50 })

    test('a replay recorded after its request ran out of time (503) is in audit quota as not answered; an answered one as answered', async () => {
      const first = await post({ zone: 'Zona 1', profile: 'balanced' }, 'order-1')
      expect(first.status).toBe(200)
      const firstBody = (await first.json()) as { briefing_id: string }

      late.arm('BriefingReplayed')
      const refused = await post({ zone: 'Zona 1', profile: 'balanced' }, 'order-1')
      expect(refused.status).toBe(503)
      expect(await refused.json()).toMatchObject({ ok: false, error: 'service_unavailable' })
      late.release()

      const replayed = await post({ zone: 'Zona 1', profile: 'balanced' }, 'order-1')
      expect(replayed.status).toBe(200)
      expect(replayed.headers.get('idempotent-replayed')).toBe('true')

      const audit = await auditWhen((a) => expect(a.entries.filter((e) => e.idempotency_key === 'order-1').map((e) => e.answered)).toEqual([true, false, true]))
      expect(audit.entries.filter((e) => e.idempotency_key === 'order-1').map((e) => [e.type, e.briefing_id, e.charged, e.answered])).toEqual([
        ['BriefingGenerated', firstBody.briefing_id, true, true],
        ['BriefingReplayed', firstBody.briefing_id, false, false],
        ['BriefingReplayed', firstBody.briefing_id, false, true],
      ])
      expect(audit).toMatchObject({ replays: 2, not_answered: 1 })
    })

    test('a charge recorded after its request ran out of time counts in the usage the API reports, and is shown as not answered', async () => {
      const before = await system.run<QuotaAudit>('audit quota', { id: 'client', month: '2026-05' })
      late.arm('BriefingGenerated')
      const refused = await post({ zone: 'Zona 2', profile: 'balanced' })
      expect(refused.status).toBe(503)
      late.release()

      const next = await post({ zone: 'Zona 3', profile: 'balanced' })
      expect(next.status).toBe(200)
      const { usage } = (await next.json()) as { usage: { used: number } }
      expect(usage.used).toBe(before.used + 2)

      const audit = await auditWhen((a) => expect(a.not_answered).toBe(before.not_answered + 1))
      const charges = audit.entries.slice(before.entries.length)
      expect(charges.map((e) => [e.type, e.charged, e.answered, e.used])).toEqual([
        ['BriefingGenerated', true, false, before.used + 1],
        ['BriefingGenerated', true, true, usage.used],
      ])
      expect(audit).toMatchObject({ used: usage.used, charged: before.charged + 2 })
    })

    test('a cache hit recorded after its request ran out of time is free and shown as not answered', async () => {
      const before = await system.run<QuotaAudit>('audit quota', { id: 'client', month: '2026-05' })
      late.arm('BriefingServedFromCache')
      const refused = await post({ zone: 'Zona 1', profile: 'balanced' })
      expect(refused.status).toBe(503)
      late.release()

      const audit = await auditWhen((a) => expect(a.not_answered).toBe(before.not_answered + 1))
      expect(audit.entries.slice(before.entries.length).map((e) => [e.type, e.charged, e.answered, e.used])).toEqual([['BriefingServedFromCache', false, false, before.used]])
      expect(audit.used).toBe(before.used)
    })

    test('a charge whose request got 503 and whose retry with the same Idempotency-Key got it (200) is answered', async () => {
      late.arm('BriefingGenerated')
      const refused = await post({ zone: 'Zona 4', profile: 'balanced' }, 'order-4')
      expect(refused.status).toBe(503)
      late.release()
      const ofOrder4 = (a: QuotaAudit) => a.entries.filter((e) => e.idempotency_key === 'order-4').map((e) => e.answered)
      await auditWhen((a) => expect(ofOrder4(a)).toEqual([false]))

      const retried = await post({ zone: 'Zona 4', profile: 'balanced' }, 'order-4')
      expect(retried.status).toBe(200)
      const { briefing_id } = (await retried.json()) as { briefing_id: string }

      const audit = await auditWhen((a) => expect(ofOrder4(a)).toEqual([true]))
      expect(audit.entries.filter((e) => e.idempotency_key === 'order-4').map((e) => [e.type, e.briefing_id, e.charged])).toEqual([['BriefingGenerated', briefing_id, true]])
    })
  })
}
