import { describe, expect, test } from 'vitest'
import { type ApiKey, type KeyCommand, decideKey, evolveKey, initialKey } from '../../src/domain/keys/key.ts'
import type { Owner } from '../../src/domain/owners/owner.ts'

const at = '2026-11-01T10:00:00.000Z'
const owner = (id: string, tier: 'free' | 'pro' | 'enterprise' | 'admin', status: 'active' | 'inactive' = 'active'): Owner => ({ status, id, tier })
const nobody: Owner = { status: 'unregistered' }
const issue = (ownerId: string, actor: string, scopes = ['read', 'write']): KeyCommand => ({
  type: 'IssueApiKey',
  keyId: 'key_000000000001',
  ownerId,
  scopes,
  keyHash: 'a'.repeat(64),
  hint: 'mrd_abcd…wxyz',
  label: null,
  actor,
  at,
})
const issued = (ownerId: string): ApiKey =>
  decideKey(issue(ownerId, ownerId), initialKey, { owner: owner(ownerId, 'enterprise'), actor: owner(ownerId, 'enterprise') }).reduce(evolveKey, initialKey)

describe('who may issue a key', () => {
  test('an enterprise owner issues its own keys', () => {
    const events = decideKey(issue('acme', 'acme'), initialKey, { owner: owner('acme', 'enterprise'), actor: owner('acme', 'enterprise') })
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({ type: 'ApiKeyIssued', data: { owner_id: 'acme', by: 'acme', scopes: ['read', 'write'] } })
    expect(JSON.stringify(events)).not.toMatch(/mrd_[0-9A-Za-z]{38}/)
  })

  test.each(['pro', 'enterprise'] as const)('an admin issues keys for a %s owner', (tier) => {
    const events = decideKey(issue('client', 'root'), initialKey, { owner: owner('client', tier), actor: owner('root', 'admin') })
    expect(events[0]).toMatchObject({ type: 'ApiKeyIssued', data: { by: 'root' } })
  })

  test('an admin issues keys for itself', () => {
    expect(decideKey(issue('root', 'root'), initialKey, { owner: owner('root', 'admin'), actor: owner('root', 'admin') })).toHaveLength(1)
  })

  test.each([
    ['a pro owner for itself', 'client', owner('client', 'pro'), owner('client', 'pro'), 'forbidden'],
    ['anybody for a free owner', 'cheap', owner('cheap', 'free'), owner('root', 'admin'), 'tier_required'],
    ['an enterprise owner for another owner', 'client', owner('client', 'pro'), owner('acme', 'enterprise'), 'forbidden'],
    ['an inactive admin', 'client', owner('client', 'pro'), owner('root', 'admin', 'inactive'), 'forbidden'],
    ['an unknown actor', 'client', owner('client', 'pro'), nobody, 'forbidden'],
    ['for an unknown owner', 'ghost', nobody, owner('root', 'admin'), 'not_found'],
    ['for an inactive owner', 'client', owner('client', 'enterprise', 'inactive'), owner('root', 'admin'), 'forbidden'],
  ] as const)('refused: %s', (_name, ownerId, ownerState, actorState, code) => {
    const actorId = actorState.status === 'unregistered' ? 'ghost-actor' : actorState.id
    expect(() => decideKey(issue(ownerId, actorId), initialKey, { owner: ownerState, actor: actorState })).toThrow(
      expect.objectContaining({ code }),
    )
  })

  test('scopes must be a non-empty subset of read, write (duplicates collapse)', () => {
    const ctx = { owner: owner('acme', 'enterprise'), actor: owner('acme', 'enterprise') }
    expect(decideKey(issue('acme', 'acme', ['write', 'read', 'read']), initialKey, ctx)[0]!.data).toMatchObject({ scopes: ['read', 'write'] })
    expect(() => decideKey(issue('acme', 'acme', []), initialKey, ctx)).toThrow(expect.objectContaining({ code: 'invalid_request' }))
    expect(() => decideKey(issue('acme', 'acme', ['read', 'admin']), initialKey, ctx)).toThrow(/admin/)
  })
})

describe('revoking a key', () => {
  const revoke = (actor: string): KeyCommand => ({ type: 'RevokeApiKey', keyId: 'key_000000000001', actor, reason: 'lost', at })

  test('its owner or an admin may revoke; the event names who and why', () => {
    const key = issued('acme')
    expect(decideKey(revoke('acme'), key, { owner: nobody, actor: owner('acme', 'enterprise') })[0]).toMatchObject({
      type: 'ApiKeyRevoked',
      data: { by: 'acme', reason: 'lost', owner_id: 'acme' },
    })
    expect(decideKey(revoke('root'), key, { owner: nobody, actor: owner('root', 'admin') })).toHaveLength(1)
  })

  test('anybody else, an unknown key, or a second revocation is refused', () => {
    const key = issued('acme')
    expect(() => decideKey(revoke('mallory'), key, { owner: nobody, actor: owner('mallory', 'enterprise') })).toThrow(
      expect.objectContaining({ code: 'forbidden' }),
    )
    expect(() => decideKey(revoke('acme'), initialKey, { owner: nobody, actor: owner('acme', 'enterprise') })).toThrow(
      expect.objectContaining({ code: 'not_found' }),
    )
    const revoked = decideKey(revoke('acme'), key, { owner: nobody, actor: owner('acme', 'enterprise') }).reduce(evolveKey, key)
    expect(revoked.status).toBe('revoked')
    expect(() => decideKey(revoke('acme'), revoked, { owner: nobody, actor: owner('acme', 'enterprise') })).toThrow(
      expect.objectContaining({ code: 'conflict' }),
    )
  })
})
