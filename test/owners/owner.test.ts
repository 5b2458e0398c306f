import { describe, expect, test } from 'vitest'
import { type OwnerCommand, type OwnerEvent, OwnerId, ownerDecider } from '../../src/domain/owners/owner.ts'
import { isValid } from '../../src/shared/validate.ts'
import { specify } from '../support/given-when-then.ts'

const at = '2026-11-01T10:00:00.000Z'
const owner = specify(ownerDecider)

const register = (tier: 'free' | 'pro' | 'enterprise' | 'admin' = 'pro'): OwnerCommand => ({ type: 'RegisterOwner', ownerId: 'acme', tier, actor: 'operator', at })
const registered = (tier: 'free' | 'pro' | 'enterprise' | 'admin' = 'pro'): OwnerEvent => ({
  type: 'OwnerRegistered',
  data: { owner_id: 'acme', tier, by: 'operator', at },
})
const deactivated: OwnerEvent = { type: 'OwnerDeactivated', data: { owner_id: 'acme', by: 'root', at } }

describe('owner decider', () => {
  test('registering a new owner records OwnerRegistered with the actor and time', () => {
    owner.given().when(register('enterprise')).then([registered('enterprise')])
  })

  test('registering twice is refused as a conflict', () => {
    owner.given([registered()]).when(register()).thenRefused({ code: 'conflict', message: 'owner acme already exists' })
  })

  test('changing tier records from and to', () => {
    owner
      .given([registered('pro')])
      .when({ type: 'ChangeOwnerTier', ownerId: 'acme', tier: 'enterprise', actor: 'root', at })
      .then([{ type: 'OwnerTierChanged', data: { owner_id: 'acme', from: 'pro', to: 'enterprise', by: 'root', at } }])
  })

  test('changing to the same tier records nothing', () => {
    owner.given([registered('pro')]).when({ type: 'ChangeOwnerTier', ownerId: 'acme', tier: 'pro', actor: 'root', at }).thenNothing()
  })

  test('deactivating switches the status and keeps the tier; deactivating again records nothing', () => {
    owner.given([registered('enterprise')]).when({ type: 'DeactivateOwner', ownerId: 'acme', actor: 'root', at }).thenState({ status: 'inactive', id: 'acme', tier: 'enterprise' })
    owner.given([registered('enterprise'), deactivated]).when({ type: 'DeactivateOwner', ownerId: 'acme', actor: 'root', at }).thenNothing()
  })

  test('reactivating an inactive owner makes it active with its tier; an active one records nothing', () => {
    owner.given([registered('enterprise'), deactivated]).when({ type: 'ReactivateOwner', ownerId: 'acme', actor: 'root', at }).thenState({ status: 'active', id: 'acme', tier: 'enterprise' })
    owner.given([registered('enterprise')]).when({ type: 'ReactivateOwner', ownerId: 'acme', actor: 'root', at }).thenNothing()
  })

  test.each(['ChangeOwnerTier', 'DeactivateOwner', 'ReactivateOwner'] as const)('%s on an unknown owner → not_found', (type) => {
    owner.given().when({ type, ownerId: 'ghost', actor: 'root', at, tier: 'pro' } as OwnerCommand).thenRefused({ code: 'not_found', message: 'owner ghost does not exist' })
  })

  test('events of other aggregates are not owner events', () => {
    expect(ownerDecider.is({ type: 'ApiKeyIssued' })).toBe(false)
    expect(ownerDecider.is({ type: 'OwnerRegistered' })).toBe(true)
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
