import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { quotaAudit } from '../../src/audit/quota.ts'
import { quotaStream } from '../../src/domain/briefings/events.ts'
import { idempotencyStream, legacyReplayStream } from '../../src/domain/briefings/idempotency.ts'
import { type BriefingWriter, localAnalyst } from '../../src/domain/briefings/writer.ts'
import { AppError } from '../../src/shared/errors.ts'
import { type EventStore, EventStoreUnavailable } from '../../src/eventstore/port.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import { briefingUsageProjection } from '../../projections/briefings/usage.ts'
import { startTestSystem, type TestSystem } from '../support/app.ts'
import { databaseTargets, uniqueSchema } from '../support/databases.ts'
import { fixtureFacts, gtZones } from './fixtures.ts'
import { briefingStoreFor, caller, failure, followBriefings, type ServiceOptions, testClock, testService, twoProcessesOn } from './harness.ts'

const facts = fixtureFacts(gtZones(60))

/** The local analyst, slowed down (so that requests overlap) and counting its calls. */
function slowWriter(ms: number): BriefingWriter & { calls: number; failNext: number } {
  const writer = {
    calls: 0,
    failNext: 0,
    async write(...args: Parameters<BriefingWriter['write']>) {
      writer.calls += 1
      await new Promise((r) => setTimeout(r, ms))
      if (writer.failNext > 0) {
        writer.failNext -= 1
        throw new AppError('upstream_error', 'the AI writer failed (HTTP 500); no quota was used')
      }
      return localAnalyst.write(...args)
    },
  }
  return writer
}

const body = (zone: number, extra: Record<string, unknown> = {}) => ({ zone: `Zona ${zone}`, profile: 'balanced', ...extra })

/**
 * `store` whose first append to `stream` is cut short as a request's deadline cuts it: the caller gets
 * a 503 (sent, outcome unknown) and the append lands later, right after the next look at `stream`
 * (so that look misses it, and whatever comes after it finds it), followed by `afterLanding`.
 */
function landsLate(store: EventStore, stream: string, afterLanding: () => Promise<unknown>) {
  let late: (() => Promise<unknown>) | null = null
  let cut = false
  return new Proxy(store, {
    get(target, name) {
      if (name === 'append') {
        return async (...args: Parameters<EventStore['append']>) => {
          if (args[0] !== stream || cut) return target.append(...args)
          cut = true
          late = () => target.append(...args)
          throw new EventStoreUnavailable('no answer within the request\'s time (cut short by the spec)')
        }
      }
      if (name === 'readStream') {
        return async (read: string) => {
          const events = await target.readStream(read)
          if (read === stream && late) {
            const land = late
            late = null
            await land()
            await afterLanding()
          }
          return events
        }
      }
      const value = Reflect.get(target, name, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

for (const target of databaseTargets('idempotent briefings')) {
  describe(`Idempotency-Key on briefings (${target.name})`, () => {
    const env = briefingStoreFor(target.open)
    const serviceOn = (options?: ServiceOptions) => testService(env.db, env.store, facts, options)

    test('the same key and body return the first result: same briefing, one charge, one writer call; recorded and audited', async () => {
      const writer = slowWriter(0)
      const service = serviceOn({ writer })
      const who = caller('alice')
      const first = await service.brief('investor', body(1), who, 'order-1')
      expect(first.replayed).toBe(false)
      expect(first.briefing).toMatchObject({ cached: false, usage: { used: 1, quota: 50 } })
      // Key order, explicit defaults and the country's letter case do not make another request.
      const again = await service.brief('investor', { profile: 'balanced', language: 'es', country: 'gt', zone: 'Zona 1' }, who, 'order-1')
      expect(again).toEqual({ replayed: true, briefing: first.briefing })
      expect(writer.calls).toBe(1)
      expect(await env.store.readStream(quotaStream('alice', '2026-05'))).toHaveLength(1)
      expect(await service.usage('alice', 'pro', new Date('2026-05-20T10:00:00Z'))).toMatchObject({ used: 1 })

      const audit = await quotaAudit(env.store, 'alice', '2026-05')
      expect(audit.map((e) => [e.type, e.charged, e.used, e.briefing_id, e.idempotency_key])).toEqual([
        ['BriefingGenerated', true, 1, first.briefing.briefing_id, 'order-1'],
        ['BriefingReplayed', false, 1, first.briefing.briefing_id, 'order-1'],
      ])
      // The replay is recorded where it was decided: on the key's own stream.
      const history = await env.store.readStream(idempotencyStream('alice', 'order-1'))
      expect(history.map((e) => e.type)).toEqual(['IdempotencyKeyClaimed', 'IdempotencyKeyCompleted', 'BriefingReplayed'])
    })

    test('replays of 30 keys of one owner at once: each on its own key\'s stream (no stream shared by the owner\'s month), all in the audit', async () => {
      const service = serviceOn()
      const who = caller('rita')
      const keys = Array.from({ length: 30 }, (_, i) => `rita-${i}`)
      const firsts = await Promise.all(keys.map((k, i) => service.brief('investor', body(20 + (i % 30)), who, k)))
      const replays = await Promise.all(keys.map((k, i) => service.brief('investor', body(20 + (i % 30)), who, k)))
      expect(replays.map((r) => r.replayed)).toEqual(keys.map(() => true))
      expect(replays.map((r) => r.briefing.briefing_id)).toEqual(firsts.map((r) => r.briefing.briefing_id))
      for (const k of keys) {
        const recorded = (await env.store.readStream(idempotencyStream('rita', k))).filter((e) => e.type === 'BriefingReplayed')
        expect(recorded.map((e) => e.data.idempotency_key)).toEqual([k])
      }
      const audited = (await quotaAudit(env.store, 'rita', '2026-05')).filter((e) => e.type === 'BriefingReplayed')
      expect(audited.map((e) => e.idempotency_key).sort()).toEqual([...keys].sort())
    })

    test('a replay recorded before decision 0107, in replay-<owner>-<month>, is still in the audit', async () => {
      const service = serviceOn()
      const first = await service.brief('investor', body(55), caller('olga'), 'k-olga')
      const data = {
        briefing_id: first.briefing.briefing_id,
        owner_id: 'olga',
        key_id: 'key_olga',
        persona: 'investor',
        idempotency_key: 'k-olga',
        first_at: '2026-05-20T10:00:00.000Z',
        quota_month: '2026-05',
        at: '2026-05-20T10:00:05.000Z',
      }
      await env.store.append(legacyReplayStream('olga', '2026-05'), [{ id: crypto.randomUUID(), type: 'BriefingReplayed', data }], 'any')
      expect((await quotaAudit(env.store, 'olga', '2026-05')).map((e) => [e.type, e.idempotency_key])).toEqual([
        ['BriefingGenerated', 'k-olga'],
        ['BriefingReplayed', 'k-olga'],
      ])
    })

    test('a charge that lands after the retry looked for it: the retry, refused by the now full quota, serves that charge', async () => {
      // The usage read model counts the late charge at once; the cache has not seen it yet (each projection follows on its own).
      const usage = new ProjectionRunner(env.db, env.store, [briefingUsageProjection])
      const store = landsLate(env.store, quotaStream('lena', '2026-05'), () => usage.catchUp())
      const service = testService(env.db, store, facts, { quotas: { pro: 1, enterprise: 1 } })
      const who = caller('lena')
      await env.projections.stop()
      try {
        // The first run's charge is on its way when its request gives up: 503, the key released as "may have charged".
        expect((await failure(service.brief('investor', body(58), who, 'k-lena'))).code).toBe('service_unavailable')
        // The retry, on another process, looks for that charge (not there yet); then the quota says the
        // month's one briefing is used: by that very charge.
        const other = testService(env.db, store, facts, { quotas: { pro: 1, enterprise: 1 } })
        const retry = await other.brief('investor', body(58), who, 'k-lena')
        const charges = await env.store.readStream(quotaStream('lena', '2026-05'))
        expect(charges).toHaveLength(1)
        expect(retry).toMatchObject({ replayed: false, briefing: { briefing_id: charges[0]!.data.briefing_id, usage: { used: 1, quota: 1 } } })
        // And from then on, the key's result.
        expect(await service.brief('investor', body(58), who, 'k-lena')).toEqual({ replayed: true, briefing: retry.briefing })
      } finally {
        env.projections = await followBriefings(env.db, env.store)
      }
    })

    test('the same key with another body or persona is 409 idempotency_conflict and charges nothing', async () => {
      const service = serviceOn()
      const who = caller('bob')
      await service.brief('investor', body(2), who, 'k-bob')
      const charges = () => env.store.readStream(quotaStream('bob', '2026-05'))
      const other = await failure(service.brief('investor', body(3), who, 'k-bob'))
      expect(other.code).toBe('idempotency_conflict')
      expect(other.message).toMatch(/Idempotency-Key "k-bob" was used for a different body or persona/)
      expect((await failure(service.brief('homebuyer', { zone: 'Zona 2', profile: 'family' }, who, 'k-bob'))).code).toBe('idempotency_conflict')
      expect((await failure(service.brief('investor', body(2, { budget_usd: 1 }), who, 'k-bob'))).code).toBe('idempotency_conflict')
      expect(await charges()).toHaveLength(1)
    })

    test('keys belong to their owner: another owner\'s identical key is independent', async () => {
      const service = serviceOn()
      const carol = await service.brief('investor', body(4), caller('carol'), 'shared-key')
      // Another body under the same key is no conflict for dave: it is his key.
      const dave = await service.brief('investor', body(5), caller('dave'), 'shared-key')
      expect(dave).toMatchObject({ replayed: false, briefing: { cached: false, usage: { used: 1 } } })
      expect(dave.briefing.briefing_id).not.toBe(carol.briefing.briefing_id)
      // The same body as carol's: served from the shared cache, not replayed from carol's key.
      const erin = await service.brief('investor', body(4), caller('erin'), 'shared-key')
      expect(erin).toMatchObject({ replayed: false, briefing: { cached: true, briefing_id: carol.briefing.briefing_id, usage: { used: 0 } } })
    })

    test('errors are not results: after a 404, a 429 or a 502 the key is free, and a retry runs afresh', async () => {
      const writer = slowWriter(0)
      const service = serviceOn({ writer })
      const who = caller('fay')
      expect((await failure(service.brief('investor', body(999), who, 'k-fay'))).code).toBe('not_found')
      writer.failNext = 1
      expect((await failure(service.brief('investor', body(6), who, 'k-fay'))).code).toBe('upstream_error')
      const retried = await service.brief('investor', body(6), who, 'k-fay')
      expect(retried).toMatchObject({ replayed: false, briefing: { cached: false, usage: { used: 1 } } })
      expect(writer.calls).toBe(2)
      const history = await env.store.readStream(idempotencyStream('fay', 'k-fay'))
      expect(history.map((e) => [e.type, e.data.error ?? null])).toEqual([
        ['IdempotencyKeyClaimed', null],
        ['IdempotencyKeyReleased', 'not_found'],
        ['IdempotencyKeyClaimed', null],
        ['IdempotencyKeyReleased', 'upstream_error'],
        ['IdempotencyKeyClaimed', null],
        ['IdempotencyKeyCompleted', null],
      ])

      const full = serviceOn({ writer })
      const exhausted = caller('gus')
      const small = serviceOn({ writer, quotas: { pro: 0, enterprise: 0 } })
      expect((await failure(small.brief('investor', body(7), exhausted, 'k-gus'))).code).toBe('quota_exceeded')
      expect(await full.brief('investor', body(7), { ...exhausted, tier: 'enterprise' }, 'k-gus')).toMatchObject({ replayed: false })
    })

    test('a first result that was a cache hit is replayed as it was (cached: true, usage then)', async () => {
      const service = serviceOn()
      const generated = await service.brief('landlord', { zone: 'Zona 8', profile: 'long_term' }, caller('hal'))
      const hit = await service.brief('landlord', { zone: 'Zona 8', profile: 'long_term' }, caller('ida'), 'k-ida')
      expect(hit.briefing).toMatchObject({ cached: true, briefing_id: generated.briefing.briefing_id, usage: { used: 0 } })
      await service.brief('landlord', { zone: 'Zona 9', profile: 'long_term' }, caller('ida'))
      expect(await service.brief('landlord', { zone: 'Zona 8', profile: 'long_term' }, caller('ida'), 'k-ida')).toEqual({ replayed: true, briefing: hit.briefing })
      expect((await quotaAudit(env.store, 'ida', '2026-05')).map((e) => e.type)).toEqual(['BriefingServedFromCache', 'BriefingGenerated', 'BriefingReplayed'])
    })

    test('10 concurrent retries with one key: one writer call, one charge, the same briefing for all', async () => {
      const writer = slowWriter(150)
      const service = serviceOn({ writer })
      const who = caller('jon')
      const results = await Promise.all(Array.from({ length: 10 }, () => service.brief('developer', { zone: 'Zona 10', profile: 'residential' }, who, 'k-jon')))
      expect(writer.calls).toBe(1)
      expect(new Set(results.map((r) => r.briefing.briefing_id)).size).toBe(1)
      expect(results.filter((r) => !r.replayed)).toHaveLength(1)
      expect(await env.store.readStream(quotaStream('jon', '2026-05'))).toHaveLength(1)
    })

    test('the key is kept 24 hours from the first result; admins\' recorded usage is exact', async () => {
      const clock = testClock('2026-05-20T12:00:00Z')
      const service = serviceOn({ clock })
      const who = caller('kim', 'admin')
      const first = await service.brief('broker', { zone: 'Zona 11', profile: 'buyer_agent' }, who, 'k-kim')
      expect(first.briefing.usage).toEqual({ used: 1, quota: 0, unlimited: true })
      clock.now = new Date('2026-05-21T11:59:59Z')
      expect((await service.brief('broker', { zone: 'Zona 11', profile: 'buyer_agent' }, who, 'k-kim')).replayed).toBe(true)
      clock.now = new Date('2026-05-21T12:00:01Z')
      const later = await service.brief('broker', { zone: 'Zona 11', profile: 'buyer_agent' }, who, 'k-kim')
      expect(later).toMatchObject({ replayed: false, briefing: { cached: false, usage: { used: 2, unlimited: true } } })
    })

    test('a key whose claimant died is taken over once its lease has passed', async () => {
      const clock = testClock('2026-05-20T13:00:00Z')
      const service = serviceOn({ clock, leaseMs: 60_000 })
      const stream = idempotencyStream('lou', 'k-lou')
      const claim = (at: string, until: string) => ({
        id: crypto.randomUUID(),
        type: 'IdempotencyKeyClaimed',
        data: { owner_id: 'lou', key_id: 'key_other', idempotency_key: 'k-lou', persona: 'investor', request_hash: 'another', at, lease_until: until },
      })
      // Within the lease, another body is a conflict; after it, the key is free.
      await env.store.append(stream, [claim('2026-05-20T12:59:30Z', '2026-05-20T13:00:30Z')], 'no_stream')
      expect((await failure(service.brief('investor', body(12), caller('lou'), 'k-lou'))).message).toMatch(/is in use by a request with a different body/)
      clock.now = new Date('2026-05-20T13:00:31Z')
      expect(await service.brief('investor', body(12), caller('lou'), 'k-lou')).toMatchObject({ replayed: false, briefing: { usage: { used: 1 } } })
    })
  })
}

const DATABASE_URL = process.env.DATABASE_URL
if (!DATABASE_URL) console.warn('[skipped] Idempotency-Key across two PostgreSQL pools: DATABASE_URL is not set')
describe.runIf(DATABASE_URL)('Idempotency-Key across two processes on one PostgreSQL', () => {
  test('12 concurrent retries with one key split across two pools: one writer call, one charge, one briefing', async () => {
    const writers = [slowWriter(200), slowWriter(200)]
    const { stores, services, close } = await twoProcessesOn(uniqueSchema('idem'), facts, [{ writer: writers[0] }, { writer: writers[1] }])
    try {
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => services[i % 2]!.brief('homebuyer', { zone: 'Zona 13', profile: 'family' }, caller('max'), 'k-max')),
      )
      expect(writers[0]!.calls + writers[1]!.calls).toBe(1)
      expect(new Set(results.map((r) => r.briefing.briefing_id)).size).toBe(1)
      expect(results.filter((r) => !r.replayed)).toHaveLength(1)
      expect(await stores[0]!.readStream(quotaStream('max', '2026-05'))).toHaveLength(1)
      expect((await quotaAudit(stores[1]!, 'max', '2026-05')).filter((e) => e.type === 'BriefingReplayed')).toHaveLength(11)
    } finally {
      await close()
    }
  })
})

describe('Idempotency-Key over HTTP (the whole app, embedded store)', () => {
  let system: TestSystem
  let key: string
  beforeAll(async () => {
    system = await startTestSystem(await databaseTargets('idempotency over HTTP')[0]!.open())
    await system.run('demo seed', { listings: 200, anchor: '2026-05-01' })
    key = (await system.ownerWithKey('acme-corp', 'enterprise')).key
  })
  afterAll(() => system.close())

  const post = (headers: Record<string, string>, payload: unknown = { zone: 'Zona 1', profile: 'balanced' }) =>
    system.request('/api/v1/briefings/investor', {
      key,
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(payload),
    })

  test('a replay is the first body again, with Idempotent-Replayed: true; a conflict is 409; a bad key is 400', async () => {
    const first = await post({ 'idempotency-key': 'req-1' })
    expect(first.status).toBe(200)
    expect(first.headers.get('idempotent-replayed')).toBeNull()
    const firstBody = await first.text()
    const replay = await post({ 'Idempotency-Key': 'req-1' })
    expect(replay.status).toBe(200)
    expect(replay.headers.get('idempotent-replayed')).toBe('true')
    expect(await replay.text()).toBe(firstBody)

    const conflict = await post({ 'idempotency-key': 'req-1' }, { zone: 'Zona 2', profile: 'balanced' })
    expect(conflict.status).toBe(409)
    const conflictBody = (await conflict.json()) as Record<string, unknown>
    expect(conflictBody).toMatchObject({ ok: false, error: 'idempotency_conflict' })
    expect(Object.keys(conflictBody).sort()).toEqual(['error', 'message', 'ok'])
    expect(conflict.headers.get('x-request-id')).toBeTruthy()

    const bad = await post({ 'idempotency-key': 'two words' })
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ ok: false, error: 'invalid_request', details: [{ field: 'Idempotency-Key' }] })

    const audit = await system.run<{ charged: number; replays: number }>('audit quota', { id: 'acme-corp' })
    expect(audit).toMatchObject({ charged: 1, replays: 1 })
  })
})
