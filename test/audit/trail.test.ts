import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { KeyAudit, OwnerAudit } from '../../src/audit/trail.ts'
import { type TestSystem, startTestSystem } from '../support/app.ts'
import { databaseTargets } from '../support/databases.ts'

/** A clock the test moves: every operator command records the time it reads. */
const clock = Object.assign(() => new Date(clock.now), { now: Date.parse('2026-05-01T10:00:00Z') })
const at = (hhmm: string) => {
  clock.now = Date.parse(`2026-05-01T${hhmm}:00Z`)
}

for (const target of databaseTargets('audit trails')) {
  describe(`audit key and audit owner on ${target.name}`, () => {
    let system: TestSystem
    let keyId = ''

    beforeAll(async () => {
      system = await startTestSystem(await target.open(), { clock })
      at('10:00')
      await system.run('owner create', { id: 'root', tier: 'admin' })
      await system.run('owner create', { id: 'acme', tier: 'enterprise' })
      at('10:01')
      keyId = (await system.run<{ key_id: string }>('key issue', { owner: 'acme', scopes: ['read'], actor: 'acme' })).key_id
      at('10:05')
      await system.run('owner set-tier', { id: 'acme', tier: 'pro', actor: 'root' })
      at('10:10')
      await system.run('owner deactivate', { id: 'acme', actor: 'root' })
      at('10:20')
      await system.run('owner activate', { id: 'acme', actor: 'root' })
      at('10:30')
      await system.run('key revoke', { key_id: keyId, actor: 'root', reason: 'leaked' })
      at('10:40')
      await system.run('owner set-tier', { id: 'acme', tier: 'free', actor: 'root' })
    })
    afterAll(() => system?.close())

    const keyAt = (until?: string) => system.run<KeyAudit>('audit key', { key_id: keyId, ...(until ? { until } : {}) })

    test('every line has position, time, type, actor and the state it left the key in', async () => {
      const audit = await keyAt()
      expect(audit.events.map((e) => [e.at.slice(11, 16), e.type, e.actor, e.state.status, e.state.owner_tier, e.state.owner_status, e.state.valid])).toEqual([
        ['10:01', 'ApiKeyIssued', 'acme', 'active', 'enterprise', 'active', true],
        ['10:05', 'OwnerTierChanged', 'root', 'active', 'pro', 'active', true],
        ['10:10', 'OwnerDeactivated', 'root', 'active', 'pro', 'inactive', false],
        ['10:20', 'OwnerReactivated', 'root', 'active', 'pro', 'active', true],
        ['10:30', 'ApiKeyRevoked', 'root', 'revoked', 'pro', 'active', false],
        ['10:40', 'OwnerTierChanged', 'root', 'revoked', 'free', 'active', false],
      ])
      const positions = audit.events.map((e) => e.position)
      expect(positions).toEqual([...positions].sort((a, b) => a - b))
      expect(audit.events[4]!.details).toMatchObject({ reason: 'leaked' })
      expect(JSON.stringify(audit)).not.toContain('key_hash')
    })

    test('--until tells whether the key was valid at that moment', async () => {
      expect((await keyAt('2026-05-01T10:00:30Z')).state).toBeNull()
      expect((await keyAt('2026-05-01T10:07:00Z')).state).toEqual({
        key_id: keyId,
        status: 'active',
        scopes: ['read'],
        owner_tier: 'pro',
        owner_status: 'active',
        rolled_from: null,
        rolled_to: null,
        grace_ends_at: null,
        valid: true,
      })
      expect((await keyAt('2026-05-01T10:15:00Z')).state).toMatchObject({ owner_status: 'inactive', valid: false })
      expect((await keyAt('2026-05-01T10:25:00Z')).state).toMatchObject({ status: 'active', valid: true })
      const revoked = await keyAt('2026-05-01T10:35:00Z')
      expect(revoked.state).toMatchObject({ status: 'revoked', valid: false })
      expect(revoked.events.map((e) => e.type).at(-1)).toBe('ApiKeyRevoked')
      // The boundary is inclusive: the revocation at 10:30:00 has happened at 10:30:00.
      expect((await keyAt('2026-05-01T10:30:00Z')).state).toMatchObject({ status: 'revoked' })
    })

    test('audit owner: its own and its keys\' events; --until gives tier, status and active keys then', async () => {
      const full = await system.run<OwnerAudit>('audit owner', { id: 'acme' })
      expect(full.events.map((e) => [e.type, e.state.tier, e.state.status, e.state.active_keys.length])).toEqual([
        ['OwnerRegistered', 'enterprise', 'active', 0],
        ['ApiKeyIssued', 'enterprise', 'active', 1],
        ['OwnerTierChanged', 'pro', 'active', 1],
        ['OwnerDeactivated', 'pro', 'inactive', 1],
        ['OwnerReactivated', 'pro', 'active', 1],
        ['ApiKeyRevoked', 'pro', 'active', 0],
        ['OwnerTierChanged', 'free', 'active', 0],
      ])
      expect((await system.run<OwnerAudit>('audit owner', { id: 'acme', until: '2026-05-01T10:12:00Z' })).state).toEqual({
        tier: 'pro',
        status: 'inactive',
        active_keys: [keyId],
      })
      expect((await system.run<OwnerAudit>('audit owner', { id: 'root', until: '2026-05-01T09:00:00Z' })).state).toBeNull()
    })

    test('a bad time or an unknown id is refused clearly', async () => {
      await expect(keyAt('yesterday')).rejects.toMatchObject({ code: 'invalid_request', message: 'until must be an ISO time' })
      await expect(system.run('audit owner', { id: 'ghost' })).rejects.toMatchObject({ code: 'not_found' })
      await expect(system.run('audit key', { key_id: 'key_000000000000' })).rejects.toMatchObject({ code: 'not_found' })
    })
  })
}
