import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { apiKeysProjection } from '../../projections/owners-and-keys/api-keys.ts'
import { liveTables } from '../../projections/engine/live-tables.ts'
import { ownersProjection } from '../../projections/owners-and-keys/owners.ts'
import { type TestSystem, startTestSystem } from '../support/app.ts'
import { databaseTargets } from '../support/databases.ts'

for (const target of databaseTargets('owners and keys projections')) {
  describe(`owners and keys read models (${target.name})`, () => {
    let system: TestSystem
    const ownersTable = async () => (await liveTables(system.storage.db).of(ownersProjection)).tables.owners
    const keysTable = async () => (await liveTables(system.storage.db).of(apiKeysProjection)).tables.keys
    const dump = async () =>
      JSON.stringify([
        await system.storage.db.query(`select * from ${await ownersTable()} order by owner_id`),
        await system.storage.db.query(`select * from ${await keysTable()} order by key_id`),
      ])

    beforeAll(async () => {
      system = await startTestSystem(await target.open())
      const acme = await system.ownerWithKey('acme', 'enterprise')
      await system.ownerWithKey('client', 'pro', ['read'])
      await system.run('key revoke', { key_id: acme.keyId, actor: 'acme', reason: 'rotated' })
      await system.run('owner set-tier', { id: 'client', tier: 'enterprise', actor: 'root' })
      await system.run('owner deactivate', { id: 'client', actor: 'root' })
      await system.settle()
    })
    afterAll(() => system.close())

    test('rows reflect the latest state of each owner and key', async () => {
      const owners = await system.storage.db.query(`select owner_id, tier, status from ${await ownersTable()} order by owner_id`)
      expect(owners).toEqual([
        { owner_id: 'acme', tier: 'enterprise', status: 'active' },
        { owner_id: 'client', tier: 'enterprise', status: 'inactive' },
        { owner_id: 'root', tier: 'admin', status: 'active' },
      ])
      const keys = await system.storage.db.query<{ owner_id: string; status: string; scopes: string[]; revoke_reason: string | null }>(
        `select owner_id, status, scopes, revoke_reason from ${await keysTable()} order by owner_id`,
      )
      expect(keys).toEqual([
        { owner_id: 'acme', status: 'revoked', scopes: ['read', 'write'], revoke_reason: 'rotated' },
        { owner_id: 'client', status: 'active', scopes: ['read'], revoke_reason: null },
      ])
    })

    test('dropping the read models and replaying from zero gives identical rows', async () => {
      const before = await dump()
      await system.storage.runner.rebuild([])
      expect(await dump()).toBe(before)
      const status = await system.storage.runner.status()
      expect(status.filter((s) => s.state === 'live').map((s) => [s.projection, s.generation, s.lag_events]).sort()).toEqual(
        ['api_keys', 'briefing_cache', 'briefing_usage', 'listings', 'owners', 'webhooks'].map((name) => [name, name === 'listings' ? 'v6.2' : name === 'api_keys' ? 'v2.2' : 'v1.2', 0]),
      )
    })

    test('operator commands read the projections: key list and owner audit', async () => {
      const list = await system.run<{ keys: { status: string }[] }>('key list', { owner: 'acme' })
      expect(list.keys.map((k) => k.status)).toEqual(['revoked'])
      const audit = await system.run<{ events: { type: string; actor: string }[] }>('audit owner', { id: 'acme' })
      expect(audit.events.map((e) => e.type)).toEqual(['OwnerRegistered', 'ApiKeyIssued', 'ApiKeyRevoked'])
      await expect(system.run('key list', { owner: 'ghost' })).rejects.toMatchObject({ code: 'not_found' })
      await expect(system.run('audit key', { key_id: 'key_000000000000' })).rejects.toMatchObject({ code: 'not_found' })
      await expect(system.run('owner create', { id: 'Bad Id!', tier: 'pro' })).rejects.toMatchObject({ code: 'invalid_request' })
      await expect(system.run('owner create', { id: 'x1', tier: 'platinum' })).rejects.toMatchObject({ code: 'invalid_request' })
    })
  })
}
