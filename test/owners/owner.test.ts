import { describe, expect, test } from 'vitest'
import { type Owner, type OwnerCommand, OwnerId, decideOwner, evolveOwner, initialOwner } from '../../src/domain/owners/owner.ts'
import { isValid } from '../../src/shared/validate.ts'

const at = '2026-11-01T10:00:00.000Z'
const given = (...commands: OwnerCommand[]): Owner =>
  commands.reduce((state, command) => decideOwner(command, state).reduce(evolveOwner, state), initialOwner)
const register = (tier: 'free' | 'pro' | 'enterprise' | 'admin' = 'pro'): OwnerCommand => ({ type: 'RegisterOwner', ownerId: 'acme', tier, actor: 'operator', at })

describe('owner decider', () => {
  test('registering a new owner records OwnerRegistered with the actor and time', () => {
    expect(decideOwner(register('enterprise'), initialOwner)).toEqual([
      { type: 'OwnerRegistered', data: { owner_id: 'acme', tier: 'enterprise', by: 'operator', at } },
    ])
  })

  test('registering twice is refused as a conflict', () => {
    expect(() => decideOwner(register(), given(register()))).toThrow(expect.objectContaining({ code: 'conflict' }))
  })

  test('changing tier records from and to; the same tier records nothing', () => {
    const state = given(register('pro'))
    expect(decideOwner({ type: 'ChangeOwnerTier', ownerId: 'acme', tier: 'enterprise', actor: 'root', at }, state)).toEqual([
      { type: 'OwnerTierChanged', data: { owner_id: 'acme', from: 'pro', to: 'enterprise', by: 'root', at } },
    ])
    expect(decideOwner({ type: 'ChangeOwnerTier', ownerId: 'acme', tier: 'pro', actor: 'root', at }, state)).toEqual([])
  })

  test('deactivate and reactivate switch the status and keep the tier; repeats are no-ops', () => {
    const inactive = given(register('enterprise'), { type: 'DeactivateOwner', ownerId: 'acme', actor: 'root', at })
    expect(inactive).toEqual({ status: 'inactive', id: 'acme', tier: 'enterprise' })
    expect(decideOwner({ type: 'DeactivateOwner', ownerId: 'acme', actor: 'root', at }, inactive)).toEqual([])
    const active = given(register('enterprise'), { type: 'DeactivateOwner', ownerId: 'acme', actor: 'root', at }, { type: 'ReactivateOwner', ownerId: 'acme', actor: 'root', at })
    expect(active).toEqual({ status: 'active', id: 'acme', tier: 'enterprise' })
  })

  test.each(['ChangeOwnerTier', 'DeactivateOwner', 'ReactivateOwner'] as const)('%s on an unknown owner → not_found', (type) => {
    const command = { type, ownerId: 'ghost', actor: 'root', at, tier: 'pro' } as OwnerCommand
    expect(() => decideOwner(command, initialOwner)).toThrow(expect.objectContaining({ code: 'not_found' }))
  })
})

describe('owner ids', () => {
  test('lowercase letters, digits, "_", "." and "-", 2 to 63 characters, starting with a letter or digit', () => {
    for (const id of ['acme', 'acme-corp', 'acme.corp', 'acme_corp', 'a1', '9-lives', 'x'.repeat(63), 'acme--corp-']) {
      expect(isValid(OwnerId, id), id).toBe(true)
    }
    for (const id of ['a', '-acme', '.acme', 'Acme', 'acme corp', 'acmé', 'x'.repeat(64), 'acme/corp', '']) {
      expect(isValid(OwnerId, id), id).toBe(false)
    }
  })
})
