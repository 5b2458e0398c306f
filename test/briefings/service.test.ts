import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, test } from 'vitest'
import { briefingCacheProjection } from '../../projections/briefings/cache.ts'
import { liveTables } from '../../projections/engine/live-tables.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import { quotaAudit } from '../../src/audit/quota.ts'
import { quotaStream } from '../../src/domain/briefings/events.ts'
import type { BriefingService } from '../../src/briefings/service.ts'
import type { Briefed, Caller } from '../../src/briefings/deps.ts'
import { type BriefingWriter, localAnalyst } from '../../src/domain/briefings/writer.ts'
import { openPglite } from '../../src/db/pglite.ts'
import type { Db } from '../../src/db/port.ts'
import type { EventStore } from '../../src/eventstore/port.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { AppError } from '../../src/shared/errors.ts'
import { databaseTargets, reopenPostgres, uniqueSchema } from '../support/databases.ts'
import { fixtureFacts, gtZones } from './fixtures.ts'
import { BRIEFING_PROJECTIONS, briefingStoreFor, caller, failure, followBriefings, type ServiceOptions, testClock, testService, twoProcessesOn } from './harness.ts'

const ZONES = gtZones(400)
const facts = fixtureFacts(ZONES)

/** A service on `db` and `store`, whose read models a projection runner keeps current (followBriefings). */
const serviceOn = (db: Db, store: EventStore, options?: ServiceOptions) => testService(db, store, facts, options)

/** The response body (these specifications send no Idempotency-Key). */
const bodyOf = (answer: Briefed) => answer.briefing
const investorBody = (zone: number, extra: Record<string, unknown> = {}) => ({ zone: `Zona ${zone}`, profile: 'balanced', ...extra })

/** `n` distinct requests at once; resolves to how many succeeded and the quota errors. */
async function concurrentDistinct(services: BriefingService[], who: Caller, firstZone: number, n: number) {
  const results = await Promise.allSettled(
    Array.from({ length: n }, (_, i) => services[i % services.length]!.brief('investor', investorBody(firstZone + i), who).then(bodyOf)),
  )
  const ok = results.filter((r) => r.status === 'fulfilled')
  const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason as AppError)
  return { ok: ok.length, rejected, used: ok.map((r) => (r as PromiseFulfilledResult<{ usage: { used: number } }>).value.usage.used) }
}

for (const target of databaseTargets('briefing service')) {
  describe(`briefing service on ${target.name}`, () => {
    const env = briefingStoreFor(target.open)
    let service: BriefingService
    beforeAll(() => {
      service = serviceOn(env.db, env.store)
    })

    test('the same request twice: the second comes from the cache and consumes nothing', async () => {
      const first = await service.brief('investor', investorBody(1), caller('alice')).then(bodyOf)
      expect(first).toMatchObject({ ok: true, persona: 'investor', cached: false, usage: { used: 1, quota: 50, unlimited: false } })
      expect(Date.parse(first.expires_at) - Date.parse(first.generated_at)).toBe(24 * 3600 * 1000)
      // Key order and explicit defaults do not change the cache key; another owner shares the entry.
      const again = await service.brief('investor', { profile: 'balanced', language: 'es', country: 'GT', zone: 'Zona 1' }, caller('alice')).then(bodyOf)
      expect(again).toMatchObject({ cached: true, briefing_id: first.briefing_id, body_md: first.body_md, usage: { used: 1 } })
      const other = await service.brief('investor', investorBody(1), caller('bob')).then(bodyOf)
      expect(other).toMatchObject({ cached: true, briefing_id: first.briefing_id, usage: { used: 0, quota: 50 } })
      expect(await service.usage('alice', 'pro', new Date('2026-05-20T11:00:00Z'))).toEqual({ used: 1, quota: 50, unlimited: false })
    })

    test('unknown persona, invalid body, unknown zone: errors, and nothing recorded', async () => {
      const head = await env.store.headPosition()
      expect((await failure(service.brief('astrologer', investorBody(2), caller('carol')).then(bodyOf))).code).toBe('not_found')
      const invalid = await failure(service.brief('investor', { zone: 'zone 2', profile: 'reckless', budget_usd: -5, colour: 'red' }, caller('carol')).then(bodyOf))
      expect(invalid.code).toBe('invalid_request')
      const fields = (invalid.extra.details as { field: string; message: string }[]).map((d) => d.field).sort()
      expect(fields).toEqual(['budget_usd', 'colour', 'profile', 'zone'])
      expect((invalid.extra.details as { field: string; message: string }[]).find((d) => d.field === 'profile')!.message).toBe(
        'Expected one of: conservative, balanced, aggressive',
      )
      expect((await failure(service.brief('investor', investorBody(9999), caller('carol')).then(bodyOf))).code).toBe('not_found')
      expect((await failure(service.brief('investor', investorBody(2, { country: 'SV' }), caller('carol')).then(bodyOf))).code).toBe('not_found')
      expect(await env.store.headPosition()).toBe(head)
    })

    test('55 concurrent distinct requests of a fresh pro owner: exactly 50 succeed, 5 get quota_exceeded', async () => {
      const who = caller('dave')
      let writes = 0
      const counting: BriefingWriter = {
        write: (...args) => {
          writes += 1
          return localAnalyst.write(...args)
        },
      }
      const service = serviceOn(env.db, env.store, { writer: counting })
      const { ok, rejected, used } = await concurrentDistinct([service], who, 10, 55)
      expect(ok).toBe(50)
      // No writer call is wasted on a briefing that could not be charged.
      expect(writes).toBe(50)
      expect(rejected.map((e) => e.code)).toEqual(Array(5).fill('quota_exceeded'))
      expect(rejected[0]!.extra).toEqual({ used: 50, quota: 50, resets_at: '2026-06-01T00:00:00.000Z' })
      expect(rejected[0]!.headers['retry-after']).toBe(String(11 * 86400 + 14 * 3600))
      expect(used.sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1))
      expect(await env.store.readStream(quotaStream('dave', '2026-05'))).toHaveLength(50)

      // Quota used up: a cache hit is still served, free; a new briefing is refused.
      const cachedZone = await service.brief('investor', investorBody(10), who).then(bodyOf).catch(() => service.brief('investor', investorBody(11), who).then(bodyOf))
      expect(cachedZone).toMatchObject({ cached: true, usage: { used: 50, quota: 50 } })
      const fresh = await failure(service.brief('investor', investorBody(300), who).then(bodyOf))
      expect(fresh.code).toBe('quota_exceeded')

      // The audit replays every charge and every free hit, in order.
      const audit = await quotaAudit(env.store, 'dave', '2026-05')
      expect(audit.filter((e) => e.charged)).toHaveLength(50)
      expect(audit.filter((e) => !e.charged)).toHaveLength(1)
      expect(audit.at(-1)).toMatchObject({ type: 'BriefingServedFromCache', actor: 'key_dave', used: 50, key_id: 'key_dave' })
      expect(audit.map((e) => e.position)).toEqual([...audit.map((e) => e.position)].sort((a, b) => a - b))
      expect(await quotaAudit(env.store, 'dave', '2026-05', '2026-05-19T00:00:00Z')).toEqual([])
    })

    test('concurrent identical requests generate once; the others are cache hits', async () => {
      const results = await Promise.all(Array.from({ length: 8 }, () => service.brief('landlord', { zone: 'Zona 70', profile: 'long_term' }, caller('erin')).then(bodyOf)))
      expect(results.filter((r) => !r.cached)).toHaveLength(1)
      expect(new Set(results.map((r) => r.briefing_id)).size).toBe(1)
      expect(await service.usage('erin', 'pro', new Date('2026-05-20T10:00:00Z'))).toMatchObject({ used: 1 })
    })

    test('admins are unlimited; quotas come from configuration', async () => {
      const admin = await service.brief('developer', { zone: 'Zona 71', profile: 'commercial' }, caller('root', 'admin')).then(bodyOf)
      expect(admin.usage).toEqual({ used: 1, quota: 0, unlimited: true })

      const small = serviceOn(env.db, env.store, { quotas: { pro: 2, enterprise: 3 } })
      const who = caller('frank', 'enterprise')
      const { ok, rejected } = await concurrentDistinct([small], who, 72, 5)
      expect(ok).toBe(3)
      expect(rejected[0]!.extra).toMatchObject({ used: 3, quota: 3 })
    })

    test('a failing writer charges nothing', async () => {
      const failing: BriefingWriter = {
        async write() {
          throw new AppError('upstream_error', 'the AI writer failed (HTTP 500); no quota was used')
        },
      }
      const broken = serviceOn(env.db, env.store, { writer: failing })
      const error = await failure(broken.brief('broker', { zone: 'Zona 80', profile: 'buyer_agent' }, caller('gina')).then(bodyOf))
      expect(error.code).toBe('upstream_error')
      expect(await env.store.readStream(quotaStream('gina', '2026-05'))).toEqual([])
      expect(await broken.usage('gina', 'pro', new Date('2026-05-20T10:00:00Z'))).toMatchObject({ used: 0 })
    })

    test('the cache lasts 24 hours from generation; the quota resets with the UTC month', async () => {
      const clock = testClock('2026-05-31T12:00:00Z')
      const timed = serviceOn(env.db, env.store, { clock, quotas: { pro: 1, enterprise: 1 } })
      const who = caller('hank')
      const first = await timed.brief('homebuyer', { zone: 'Zona 81', profile: 'family' }, who).then(bodyOf)
      expect(first.usage).toMatchObject({ used: 1, quota: 1 })
      clock.now = new Date('2026-05-31T23:59:59Z')
      expect((await failure(timed.brief('homebuyer', { zone: 'Zona 82', profile: 'family' }, who).then(bodyOf))).extra).toMatchObject({
        resets_at: '2026-06-01T00:00:00.000Z',
      })
      clock.now = new Date('2026-06-01T11:59:59Z')
      expect(await timed.brief('homebuyer', { zone: 'Zona 81', profile: 'family' }, who).then(bodyOf)).toMatchObject({ cached: true, usage: { used: 0 } })
      clock.now = new Date('2026-06-01T12:00:00Z')
      const regenerated = await timed.brief('homebuyer', { zone: 'Zona 81', profile: 'family' }, who).then(bodyOf)
      expect(regenerated).toMatchObject({ cached: false, usage: { used: 1, quota: 1 } })
      expect(regenerated.briefing_id).not.toBe(first.briefing_id)
    })

    test('another process\'s projection runner may apply the same events alongside', async () => {
      const live = new ProjectionRunner(env.db, env.store, BRIEFING_PROJECTIONS)
      await live.start((error) => {
        throw error
      })
      try {
        const who = caller('lena')
        const results = await Promise.all(Array.from({ length: 12 }, (_, i) => service.brief('developer', { zone: `Zona ${200 + i}`, profile: 'mixed_use' }, who).then(bodyOf)))
        expect(results.map((r) => r.usage.used).sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1))
        const again = await Promise.all(Array.from({ length: 12 }, (_, i) => service.brief('developer', { zone: `Zona ${200 + i}`, profile: 'mixed_use' }, who).then(bodyOf)))
        expect(again.every((r) => r.cached && r.usage.used === 12)).toBe(true)
        await env.projections.runner.catchUp()
        const { tables } = await liveTables(env.db).of(briefingCacheProjection)
        const [row] = await env.db.query(`select count(*)::int as n from ${tables.cache} where cache_key like 'developer:GT:%mixed_use%Zona 2__"}'`)
        expect(row!.n).toBe(12)
      } finally {
        await live.stop()
      }
    })

    test('usage and cache live in the events: a new process sees them, and a rebuild reproduces them', async () => {
      const who = caller('ivan')
      const first = await service.brief('broker', { zone: 'Zona 90', profile: 'listing_agent', asking_price_usd: 250_000 }, who).then(bodyOf)
      // A fresh service holds no memory of the above: a new process, whose projections have caught up as it started.
      await env.projections.runner.catchUp()
      const restarted = serviceOn(env.db, env.store)
      expect(await restarted.usage('ivan', 'pro', new Date('2026-05-20T10:00:00Z'))).toMatchObject({ used: 1 })
      const hit = await restarted.brief('broker', { asking_price_usd: 250_000, profile: 'listing_agent', zone: 'Zona 90' }, who).then(bodyOf)
      expect(hit).toMatchObject({ cached: true, briefing_id: first.briefing_id, usage: { used: 1 } })

      const snapshot = async () => env.db.query(`select * from ${(await liveTables(env.db).of(briefingCacheProjection)).tables.cache} order by cache_key`)
      const before = JSON.stringify(await snapshot())
      await new ProjectionRunner(env.db, env.store, BRIEFING_PROJECTIONS).rebuild([])
      expect(JSON.stringify(await snapshot())).toBe(before)
    })
  })
}

test('PGlite: usage and cache survive closing and reopening the data directory', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mirador-briefings-'))
  try {
    let db = await openPglite(dir)
    let store = await openSqlEventStore(db)
    let projections = await followBriefings(db, store)
    const first = await serviceOn(db, store).brief('investor', investorBody(5), caller('judy')).then(bodyOf)
    await projections.stop()
    await store.close()
    await db.close()

    db = await openPglite(dir)
    store = await openSqlEventStore(db)
    projections = await followBriefings(db, store)
    const reopened = serviceOn(db, store)
    expect(await reopened.usage('judy', 'pro', new Date('2026-05-20T10:00:00Z'))).toMatchObject({ used: 1 })
    expect(await reopened.brief('investor', investorBody(5), caller('judy')).then(bodyOf)).toMatchObject({ cached: true, briefing_id: first.briefing_id })
    await projections.stop()
    await store.close()
    await db.close()
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})

const DATABASE_URL = process.env.DATABASE_URL
describe.runIf(DATABASE_URL)('two processes on one PostgreSQL', () => {
  test('55 concurrent requests split across two pools: exactly 50 succeed; reopening keeps usage and cache', async () => {
    const schema = uniqueSchema('brf')
    const { stores, services, close } = await twoProcessesOn(schema, facts)
    const who = caller('kate')
    const { ok, rejected } = await concurrentDistinct(services, who, 100, 55)
    expect(ok).toBe(50)
    expect(rejected.map((e) => e.code)).toEqual(Array(5).fill('quota_exceeded'))
    expect(await stores[0]!.readStream(quotaStream('kate', '2026-05'))).toHaveLength(50)
    await close()

    const db = await reopenPostgres(schema, 2)
    const store = await openSqlEventStore(db)
    const projections = await followBriefings(db, store)
    const reopened = serviceOn(db, store)
    expect(await reopened.usage('kate', 'pro', new Date('2026-05-20T10:00:00Z'))).toEqual({ used: 50, quota: 50, unlimited: false })
    const audit = await quotaAudit(store, 'kate', '2026-05')
    expect(audit.filter((e) => e.charged)).toHaveLength(50)
    const charged = audit[0]!
    const hit = await reopened.brief('investor', JSON.parse(charged.cache_key!.slice('investor:GT:'.length)), who).then(bodyOf)
    expect(hit).toMatchObject({ cached: true, briefing_id: charged.briefing_id, usage: { used: 50 } })
    await projections.stop()
    await store.close()
    await db.close()
  })
})
if (!DATABASE_URL) console.warn('[skipped] briefing quota across two PostgreSQL pools: DATABASE_URL is not set')
