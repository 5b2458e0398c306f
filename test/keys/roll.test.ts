import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { KeyAudit, OwnerAudit } from '../../src/audit/trail.ts'
import { liveTables } from '../../projections/engine/live-tables.ts'
import { apiKeysProjection } from '../../projections/owners-and-keys/api-keys.ts'
import { type TestSystem, startTestSystem } from '../support/app.ts'
import { databaseTargets } from '../support/databases.ts'
import { EventStoreUnavailable } from '../../src/eventstore/port.ts'
import { runOperatorCommand } from '../../src/operator/commands.ts'

/** A clock the test moves: the gate and every operator command read it. */
const clock = Object.assign(() => new Date(clock.now), { now: Date.parse('2026-05-01T10:00:00Z') })
const at = (hhmmss: string) => {
  clock.now = Date.parse(`2026-05-01T${hhmmss}Z`)
}

type Rolled = { key: string; key_id: string; owner_id: string; scopes: string[]; label: string | null; rolled_from: string; grace_ends_at: string }
type Listed = { keys: { key_id: string; status: string; grace_ends_at: string | null; successor_key_id: string | null; rolled_from: string | null; label: string | null }[] }

for (const target of databaseTargets('key roll')) {
  describe(`key roll on ${target.name}`, () => {
    let system: TestSystem
    const status = async (key: string) => {
      const response = await system.request('/api/v1/health', { key })
      return [response.status, ((await response.json()) as { error?: string }).error ?? 'ok']
    }

    beforeAll(async () => {
      at('09:00:00')
      system = await startTestSystem(await target.open(), { clock })
      await system.run('owner create', { id: 'root', tier: 'admin' })
    })
    afterAll(() => system?.close())

    test('old and new key both answer during the grace; from its end the old one is invalid_key, with no event then', async () => {
      at('09:30:00')
      await system.run('owner create', { id: 'acme', tier: 'enterprise' })
      const first = await system.run<{ key: string; key_id: string }>('key issue', { owner: 'acme', scopes: ['read'], actor: 'acme', label: 'ci' })
      at('10:00:00')
      const rolled = await system.run<Rolled>('key roll', { key_id: first.key_id, grace: '1h', actor: 'acme' })
      expect(rolled).toMatchObject({ owner_id: 'acme', scopes: ['read'], label: 'ci', rolled_from: first.key_id, grace_ends_at: '2026-05-01T11:00:00.000Z' })
      expect(rolled.key).toMatch(/^mrd_[0-9A-Za-z]{38}$/)
      await system.settle()

      at('10:59:59.999')
      expect([await status(first.key), await status(rolled.key)]).toEqual([
        [200, 'ok'],
        [200, 'ok'],
      ])
      // Each key counts its own hourly window: the old key's requests are not the new one's.
      const health = (await (await system.request('/api/v1/health', { key: rolled.key })).json()) as { rate_limit: { used: number } }
      expect(health.rate_limit.used).toBe(2)

      at('11:00:00')
      expect([await status(first.key), await status(rolled.key)]).toEqual([
        [401, 'invalid_key'],
        [200, 'ok'],
      ])
      const list = await system.run<Listed>('key list', { owner: 'acme' })
      expect(list.keys.map((k) => [k.key_id, k.status, k.grace_ends_at, k.successor_key_id, k.rolled_from, k.label])).toEqual([
        [first.key_id, 'expired', '2026-05-01T11:00:00.000Z', rolled.key_id, null, 'ci'],
        [rolled.key_id, 'active', null, null, first.key_id, 'ci'],
      ])
      at('10:30:00')
      expect((await system.run<Listed>('key list', { owner: 'acme' })).keys[0]!.status).toBe('rolled')

      // The plaintext keys are in no event and no row.
      const events = JSON.stringify(await system.storage.store.readAll(0, { limit: 10_000 }))
      const { tables } = await liveTables(system.storage.db).of(apiKeysProjection)
      const rows = JSON.stringify(await system.storage.db.query(`select * from ${tables.keys}`))
      for (const key of [first.key, rolled.key]) {
        expect(events).not.toContain(key)
        expect(rows).not.toContain(key)
      }
    })

    test('key revoke ends the grace early; a grace of 0 ends it at once', async () => {
      at('12:00:00')
      const { key, keyId } = await system.ownerWithKey('early', 'enterprise')
      const rolled = await system.run<Rolled>('key roll', { key_id: keyId, grace: '24h', actor: 'root' })
      await system.settle()
      expect(await status(key)).toEqual([200, 'ok'])
      await system.run('key revoke', { key_id: keyId, actor: 'early', reason: 'rotation done' })
      await system.settle()
      expect([await status(key), await status(rolled.key)]).toEqual([
        [401, 'invalid_key'],
        [200, 'ok'],
      ])

      const again = await system.run<Rolled>('key roll', { key_id: rolled.key_id, grace: '0', actor: 'early' })
      expect(again.grace_ends_at).toBe('2026-05-01T12:00:00.000Z')
      await system.settle()
      expect([await status(rolled.key), await status(again.key)]).toEqual([
        [401, 'invalid_key'],
        [200, 'ok'],
      ])
    })

    test('refusals: a rolled key is not rolled twice, a grace over 30 days, a pro owner rolling its own key', async () => {
      at('13:00:00')
      const { keyId } = await system.ownerWithKey('picky', 'pro')
      await expect(system.run('key roll', { key_id: keyId, grace: '31d', actor: 'root' })).rejects.toMatchObject({ code: 'invalid_request' })
      await expect(system.run('key roll', { key_id: keyId, grace: '1 day', actor: 'root' })).rejects.toMatchObject({ code: 'invalid_request' })
      await expect(system.run('key roll', { key_id: keyId, grace: '1h', actor: 'picky' })).rejects.toMatchObject({ code: 'forbidden' })
      await expect(system.run('key roll', { key_id: 'key_000000000000', grace: '1h', actor: 'root' })).rejects.toMatchObject({ code: 'not_found' })
      const rolled = await system.run<Rolled>('key roll', { key_id: keyId, grace: '30d', actor: 'root' })
      expect(rolled.grace_ends_at).toBe('2026-05-31T13:00:00.000Z')
      await expect(system.run('key roll', { key_id: keyId, grace: '1h', actor: 'root' })).rejects.toMatchObject({
        code: 'conflict',
        message: expect.stringContaining(rolled.key_id),
      })
    })

    test('a roll whose successor could not be recorded: the error is told, no key is shown, and the audit shows a successor never issued', async () => {
      at('16:00:00')
      const { key, keyId } = await system.ownerWithKey('halfway', 'enterprise')
      const store = system.storage.store
      // The successor's issue (the second append of a roll, on a fresh stream) fails as an unreachable store would.
      const failing = {
        ...store,
        batches: store.batches,
        append: (stream: string, events: Parameters<typeof store.append>[1], expected: Parameters<typeof store.append>[2]) =>
          expected === 'no_stream' ? Promise.reject(new EventStoreUnavailable('connection refused')) : store.append(stream, events, expected),
        readStream: (stream: string) => store.readStream(stream),
      }
      await expect(runOperatorCommand({ ...system.operator, store: failing }, 'key roll', { key_id: keyId, grace: '1h', actor: 'halfway' })).rejects.toMatchObject({
        code: 'service_unavailable',
      })
      const audit = await system.run<KeyAudit>('audit key', { key_id: keyId })
      expect(audit.state).toMatchObject({ status: 'active', grace_ends_at: '2026-05-01T17:00:00.000Z', valid: true })
      expect(audit.linked).toEqual([{ key_id: audit.state!.rolled_to, relation: 'successor', state: null }])
      // The way out: a fresh key; the old one keeps its grace.
      await system.settle()
      expect(await status(key)).toEqual([200, 'ok'])
    })

    test('audit key: both keys, the link between them, the grace end, and whether each was valid at --until', async () => {
      at('14:00:00')
      const { keyId } = await system.ownerWithKey('audited', 'enterprise')
      at('14:10:00')
      const rolled = await system.run<Rolled>('key roll', { key_id: keyId, grace: '30m', actor: 'audited' })
      at('15:00:00')
      const audit = (until?: string) => system.run<KeyAudit>('audit key', { key_id: keyId, ...(until ? { until } : {}) })

      const now = await audit()
      // Each line tells validity at its own time; the successor's line carries the successor's state.
      expect(now.events.map((e) => [e.at.slice(11, 16), e.type, e.state.key_id, e.state.valid])).toEqual([
        ['14:00', 'ApiKeyIssued', keyId, true],
        ['14:10', 'ApiKeyRolled', keyId, true],
        ['14:10', 'ApiKeyIssued', rolled.key_id, true],
      ])
      expect(now.events[1]!.details).toMatchObject({ successor_key_id: rolled.key_id, grace_ends_at: '2026-05-01T14:40:00.000Z' })
      expect(now.events[2]!.details).toMatchObject({ rolled_from: keyId })
      expect(now.state).toMatchObject({ key_id: keyId, status: 'active', rolled_to: rolled.key_id, grace_ends_at: '2026-05-01T14:40:00.000Z', valid: false })
      expect(now.linked).toEqual([{ key_id: rolled.key_id, relation: 'successor', state: expect.objectContaining({ rolled_from: keyId, valid: true }) }])

      expect((await audit('2026-05-01T14:39:59.999Z')).state).toMatchObject({ valid: true })
      expect((await audit('2026-05-01T14:40:00Z')).state).toMatchObject({ valid: false })
      const before = await audit('2026-05-01T14:05:00Z')
      expect([before.state?.rolled_to, before.linked[0]!.state]).toEqual([null, null])

      const successor = await system.run<KeyAudit>('audit key', { key_id: rolled.key_id })
      expect(successor.linked).toEqual([{ key_id: keyId, relation: 'predecessor', state: expect.objectContaining({ valid: false }) }])
      expect(successor.events.map((e) => [e.type, e.state.key_id])).toEqual([
        ['ApiKeyIssued', keyId],
        ['ApiKeyRolled', keyId],
        ['ApiKeyIssued', rolled.key_id],
      ])
      expect(JSON.stringify([now, successor])).not.toContain('key_hash')

      // audit owner: a key past its grace is no longer one of the owner's active keys.
      const activeKeys = async (until: string) => (await system.run<OwnerAudit>('audit owner', { id: 'audited', until })).state!.active_keys
      expect(await activeKeys('2026-05-01T14:39:59Z')).toEqual([keyId, rolled.key_id].sort())
      expect(await activeKeys('2026-05-01T14:40:00Z')).toEqual([rolled.key_id])
    })
  })
}
