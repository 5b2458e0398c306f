import { describe, expect, test } from 'vitest'
import { type KeyCommand, type KeyEvent, MAX_GRACE_MS, keyDecider, keyStanding, keyStatusAt } from '../../src/domain/keys/key.ts'
import type { Owner } from '../../src/domain/owners/owner.ts'
import { specify } from '../support/given-when-then.ts'

const at = '2026-11-01T10:00:00.000Z'
const key = specify(keyDecider)

const owner = (id: string, tier: 'free' | 'pro' | 'enterprise' | 'admin', status: 'active' | 'inactive' = 'active'): Owner => ({ status, id, tier })
const nobody: Owner = { status: 'unregistered' }

const issue = (ownerId: string, actor: string, states: { owner: Owner; actor: Owner }, scopes = ['read', 'write']): KeyCommand & { type: 'IssueApiKey' } => ({
  type: 'IssueApiKey',
  keyId: 'key_000000000001',
  ownerId,
  scopes,
  keyHash: 'a'.repeat(64),
  hint: 'mrd_abcd…wxyz',
  label: null,
  actor,
  at,
  ownerState: states.owner,
  actorState: states.actor,
})
const issuedTo = (ownerId: string, by = ownerId): KeyEvent => ({
  type: 'ApiKeyIssued',
  data: { key_id: 'key_000000000001', owner_id: ownerId, scopes: ['read', 'write'], key_hash: 'a'.repeat(64), hint: 'mrd_abcd…wxyz', label: null, by, at },
})
const revoke = (actor: string, actorState: Owner): KeyCommand => ({ type: 'RevokeApiKey', keyId: 'key_000000000001', actor, reason: 'lost', at, actorState })
const revokedBy = (by: string): KeyEvent => ({ type: 'ApiKeyRevoked', data: { key_id: 'key_000000000001', owner_id: 'acme', by, reason: 'lost', at } })

describe('who may issue a key', () => {
  test('an enterprise owner issues its own keys; the event holds the hash and hint, never the key', () => {
    key
      .given()
      .when(issue('acme', 'acme', { owner: owner('acme', 'enterprise'), actor: owner('acme', 'enterprise') }))
      .then((events) => {
        expect(events).toEqual([issuedTo('acme')])
        expect(JSON.stringify(events)).not.toMatch(/mrd_[0-9A-Za-z]{38}/)
      })
  })

  test.each(['pro', 'enterprise'] as const)('an admin issues keys for a %s owner', (tier) => {
    key.given().when(issue('client', 'root', { owner: owner('client', tier), actor: owner('root', 'admin') })).then([issuedTo('client', 'root')])
  })

  test('an admin issues keys for itself', () => {
    key.given().when(issue('root', 'root', { owner: owner('root', 'admin'), actor: owner('root', 'admin') })).then([issuedTo('root')])
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
    key.given().when(issue(ownerId, actorId, { owner: ownerState, actor: actorState })).thenRefused({ code })
  })

  test('a key id is issued once', () => {
    key
      .given([issuedTo('acme')])
      .when(issue('acme', 'acme', { owner: owner('acme', 'enterprise'), actor: owner('acme', 'enterprise') }))
      .thenRefused({ code: 'conflict' })
  })

  test('scopes are a non-empty subset of read, write; duplicates collapse into the canonical order', () => {
    const states = { owner: owner('acme', 'enterprise'), actor: owner('acme', 'enterprise') }
    key.given().when(issue('acme', 'acme', states, ['write', 'read', 'read'])).then([issuedTo('acme')])
    key.given().when(issue('acme', 'acme', states, [])).thenRefused({ code: 'invalid_request' })
    key.given().when(issue('acme', 'acme', states, ['read', 'admin'])).thenRefused({ code: 'invalid_request', message: /admin/ })
  })
})

describe('revoking a key', () => {
  test('its owner may revoke it; the event names who and why', () => {
    key.given([issuedTo('acme')]).when(revoke('acme', owner('acme', 'enterprise'))).then([revokedBy('acme')])
  })

  test('an active admin may revoke any key', () => {
    key.given([issuedTo('acme')]).when(revoke('root', owner('root', 'admin'))).then([revokedBy('root')])
  })

  test('anybody else is refused', () => {
    key.given([issuedTo('acme')]).when(revoke('mallory', owner('mallory', 'enterprise'))).thenRefused({ code: 'forbidden' })
  })

  test('an unknown key is not found', () => {
    key.given().when(revoke('acme', owner('acme', 'enterprise'))).thenRefused({ code: 'not_found' })
  })

  test('a revoked key stays revoked; revoking it again is a conflict', () => {
    key.given([issuedTo('acme')]).when(revoke('acme', owner('acme', 'enterprise'))).thenState({
      status: 'revoked',
      keyId: 'key_000000000001',
      ownerId: 'acme',
      scopes: ['read', 'write'],
      label: null,
      rolledFrom: null,
      rolledTo: null,
    })
    key.given([issuedTo('acme'), revokedBy('acme')]).when(revoke('acme', owner('acme', 'enterprise'))).thenRefused({ code: 'conflict' })
  })
})

const hour = 3600_000
const successor = 'key_000000000002'
const roll = (actor: string, states: { owner: Owner; actor: Owner }, graceMs = 24 * hour): KeyCommand => ({
  type: 'RollApiKey',
  keyId: 'key_000000000001',
  successorKeyId: successor,
  graceMs,
  actor,
  at,
  ownerState: states.owner,
  actorState: states.actor,
})
const rolledBy = (by: string, graceEndsAt = '2026-11-02T10:00:00.000Z'): KeyEvent => ({
  type: 'ApiKeyRolled',
  data: { key_id: 'key_000000000001', owner_id: 'acme', successor_key_id: successor, grace_ends_at: graceEndsAt, by, at },
})
const enterprise = { owner: owner('acme', 'enterprise'), actor: owner('acme', 'enterprise') }

describe('rolling a key', () => {
  test('its enterprise owner rolls it: the event names the successor and the grace end, and holds no key material', () => {
    key
      .given([issuedTo('acme')])
      .when(roll('acme', enterprise))
      .then((events) => {
        expect(events).toEqual([rolledBy('acme')])
        expect(JSON.stringify(events)).not.toMatch(/key_hash|mrd_/)
      })
  })

  test('an active admin rolls the key of a pro owner; the key is then known to be rolled, and still active', () => {
    const states = { owner: owner('acme', 'pro'), actor: owner('root', 'admin') }
    key.given([issuedTo('acme', 'root')]).when(roll('root', states)).then([rolledBy('root')])
    key
      .given([issuedTo('acme', 'root')])
      .when(roll('root', states))
      .thenState({
        status: 'active',
        keyId: 'key_000000000001',
        ownerId: 'acme',
        scopes: ['read', 'write'],
        label: null,
        rolledFrom: null,
        rolledTo: { keyId: successor, graceEndsAt: '2026-11-02T10:00:00.000Z' },
      })
  })

  test('a grace of 0 ends at once; 30 days is the most', () => {
    key.given([issuedTo('acme')]).when(roll('acme', enterprise, 0)).then([rolledBy('acme', at)])
    key.given([issuedTo('acme')]).when(roll('acme', enterprise, MAX_GRACE_MS)).then([rolledBy('acme', '2026-12-01T10:00:00.000Z')])
    key.given([issuedTo('acme')]).when(roll('acme', enterprise, MAX_GRACE_MS + 1)).thenRefused({ code: 'invalid_request', message: /30 days/ })
    key.given([issuedTo('acme')]).when(roll('acme', enterprise, -1)).thenRefused({ code: 'invalid_request' })
  })

  test.each([
    ['an unknown key', [], enterprise, 'not_found'],
    ['a revoked key', [issuedTo('acme'), revokedBy('acme')], enterprise, 'conflict'],
    ['a key already rolled (its successor is the one to roll)', [issuedTo('acme'), rolledBy('acme')], enterprise, 'conflict'],
    ['by a pro owner, who may not issue its own keys', [issuedTo('acme', 'root')], { owner: owner('acme', 'pro'), actor: owner('acme', 'pro') }, 'forbidden'],
    ['by another enterprise owner', [issuedTo('acme')], { owner: owner('acme', 'enterprise'), actor: owner('mallory', 'enterprise') }, 'forbidden'],
    ['for an owner now on the free tier', [issuedTo('acme')], { owner: owner('acme', 'free'), actor: owner('root', 'admin') }, 'tier_required'],
    ['for an inactive owner', [issuedTo('acme')], { owner: owner('acme', 'enterprise', 'inactive'), actor: owner('root', 'admin') }, 'forbidden'],
  ] as const)('refused: %s', (_name, history, states, code) => {
    const actorId = states.actor.status === 'unregistered' ? 'ghost' : states.actor.id
    key.given(history).when(roll(actorId, states)).thenRefused({ code })
  })

  test('the successor is issued on its own stream, linked to the key it replaces', () => {
    key
      .given()
      .when({ ...issue('acme', 'acme', enterprise), keyId: successor, rolledFrom: 'key_000000000001' })
      .then((events) => expect(events).toEqual([{ type: 'ApiKeyIssued', data: { ...issuedTo('acme').data, key_id: successor, rolled_from: 'key_000000000001' } }]))
  })

  test('revoking a key during its grace ends the grace: it is revoked', () => {
    key.given([issuedTo('acme'), rolledBy('acme')]).when(revoke('acme', owner('acme', 'enterprise'))).then([revokedBy('acme')])
  })
})

describe('whether a key lets its holder in', () => {
  const now = Date.parse(at)
  test.each([
    ['an active key of an active pro owner', 'active', { status: 'active', tier: 'pro' }, 'valid'],
    ['a revoked key', 'revoked', { status: 'active', tier: 'pro' }, 'revoked'],
    ['a key of an inactive owner', 'active', { status: 'inactive', tier: 'enterprise' }, 'owner_inactive'],
    ['a key of an owner not known (yet)', 'active', undefined, 'owner_inactive'],
    ['a key of an owner now on the free tier', 'active', { status: 'active', tier: 'free' }, 'free_tier'],
  ] as const)('%s: %s', (_name, status, ownerState, standing) => {
    expect(keyStanding({ status, expiresAt: null }, ownerState, now)).toBe(standing)
  })

  test('a rolled key lets its holder in until the grace end, exclusive, with no event at that moment', () => {
    const pro = { status: 'active', tier: 'pro' }
    const rolled = { status: 'active' as const, expiresAt: now + hour }
    expect([now, now + hour - 1, now + hour, now + 2 * hour].map((t) => [keyStanding(rolled, pro, t), keyStatusAt(rolled, t)])).toEqual([
      ['valid', 'rolled'],
      ['valid', 'rolled'],
      ['expired', 'expired'],
      ['expired', 'expired'],
    ])
    expect(keyStanding({ status: 'revoked', expiresAt: now + hour }, pro, now)).toBe('revoked')
    expect(keyStatusAt({ status: 'active', expiresAt: null }, now)).toBe('active')
  })
})
