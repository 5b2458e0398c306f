import { describe, expect, test } from 'vitest'
import {
  type IdempotencyCommand,
  type IdempotencyEvent,
  idempotencyDecider,
  type IdempotentRequest,
  initialIdempotency,
  nextStep,
  parseIdempotencyKey,
} from '../../src/domain/briefings/idempotency.ts'
import type { AppError } from '../../src/shared/errors.ts'
import { specify } from '../support/given-when-then.ts'

const LEASE = 60_000
const request: IdempotentRequest = { ownerId: 'acme', keyId: 'key_a', key: 'k1', persona: 'investor', requestHash: 'h1' }
const other: IdempotentRequest = { ...request, keyId: 'key_b', requestHash: 'h2' }
const at = (iso: string) => new Date(iso)

const claim = (claimId: string, when: string, of = request): IdempotencyCommand => ({ type: 'ClaimKey', request: of, claimId, leaseMs: LEASE, at: at(when) })
const complete = (claimId: string, when: string): IdempotencyCommand => ({
  type: 'CompleteKey',
  request,
  claimId,
  briefingId: 'brf_1',
  response: { ok: true, briefing_id: 'brf_1' },
  at: at(when),
})
const release = (claimId: string, when: string, mayHaveRecorded = false): IdempotencyCommand => ({
  type: 'ReleaseKey',
  request,
  claimId,
  error: 'upstream_error',
  mayHaveRecorded,
  at: at(when),
})

/** The events a command decides on a history, to write the next history. */
const decided = (history: IdempotencyEvent[], command: IdempotencyCommand) =>
  idempotencyDecider.decide(command, history.reduce(idempotencyDecider.evolve, idempotencyDecider.initialState))
const claimed = (claimId: string, when: string, history: IdempotencyEvent[] = [], of = request) => [...history, ...decided(history, claim(claimId, when, of))]
const stateAfter = (history: IdempotencyEvent[]) => history.reduce(idempotencyDecider.evolve, initialIdempotency)

const key = specify(idempotencyDecider)

describe('claiming a key', () => {
  test('a free key is claimed with a lease; the claim opens an attempt of its own', () => {
    key.given([]).when(claim('c1', '2026-05-20T10:00:00Z')).then([
      {
        type: 'IdempotencyKeyClaimed',
        data: {
          owner_id: 'acme',
          key_id: 'key_a',
          idempotency_key: 'k1',
          persona: 'investor',
          request_hash: 'h1',
          claim_id: 'c1',
          attempt_id: 'c1',
          attempt_at: '2026-05-20T10:00:00.000Z',
          at: '2026-05-20T10:00:00.000Z',
          lease_until: '2026-05-20T10:01:00.000Z',
        },
      },
    ])
  })

  test('while the lease runs, the same request waits (nothing claimed) and another one is a conflict', () => {
    const history = claimed('c1', '2026-05-20T10:00:00Z')
    key.given(history).when(claim('c2', '2026-05-20T10:00:30Z')).thenNothing()
    expect(nextStep(stateAfter(history), request, at('2026-05-20T10:00:30Z'))).toEqual({ kind: 'wait', until: at('2026-05-20T10:01:00Z') })
    key.given(history).when(claim('c2', '2026-05-20T10:00:30Z', other)).thenRefused({ code: 'idempotency_conflict', message: /"k1" is in use by a request with a different body/ })
  })

  test('after the lease, the same request takes the key over and continues the attempt: it looks for its charge first', () => {
    const history = claimed('c1', '2026-05-20T10:00:00Z')
    expect(nextStep(stateAfter(history), request, at('2026-05-20T10:01:00Z'))).toMatchObject({ kind: 'claim', continuing: { id: 'c1', runs: 1 } })
    key
      .given(history)
      .when(claim('c2', '2026-05-20T10:01:00Z'))
      .thenState({
        status: 'claimed',
        claimId: 'c2',
        requestHash: 'h1',
        leaseUntil: '2026-05-20T10:02:00.000Z',
        attempt: { id: 'c1', openedAt: '2026-05-20T10:00:00.000Z', requestHash: 'h1', runs: 2 },
      })
  })

  test('another request may not take over an attempt that may hold a charge, until its 24 hours are over', () => {
    const history = claimed('c1', '2026-05-20T10:00:00Z')
    key.given(history).when(claim('c2', '2026-05-20T12:00:00Z', other)).thenRefused({ code: 'idempotency_conflict' })
    key
      .given(history)
      .when(claim('c2', '2026-05-21T10:00:00Z', other))
      .thenState({
        status: 'claimed',
        claimId: 'c2',
        requestHash: 'h2',
        leaseUntil: '2026-05-21T10:01:00.000Z',
        attempt: { id: 'c2', openedAt: '2026-05-21T10:00:00.000Z', requestHash: 'h2', runs: 1 },
      })
  })

  test('a claim of an earlier version (no attempt: its charge and result were recorded together) is taken over by any request after its lease', () => {
    const legacy: IdempotencyEvent = {
      type: 'IdempotencyKeyClaimed',
      data: { owner_id: 'acme', key_id: 'key_z', idempotency_key: 'k1', persona: 'investor', request_hash: 'h9', at: '2026-05-20T09:59:30Z', lease_until: '2026-05-20T10:00:30Z' },
    }
    key.given([legacy]).when(claim('c1', '2026-05-20T10:00:00Z')).thenRefused({ code: 'idempotency_conflict' })
    expect(nextStep(stateAfter([legacy]), request, at('2026-05-20T10:00:31Z'))).toEqual({ kind: 'claim', continuing: null })
  })
})

describe('completing and releasing', () => {
  test('the run holding the key records the first result, kept 24 hours; a run taken over records nothing', () => {
    const history = claimed('c1', '2026-05-20T10:00:00Z')
    key.given(history).when(complete('c1', '2026-05-20T10:00:05Z')).then([
      {
        type: 'IdempotencyKeyCompleted',
        data: {
          owner_id: 'acme',
          key_id: 'key_a',
          idempotency_key: 'k1',
          request_hash: 'h1',
          briefing_id: 'brf_1',
          response: { ok: true, briefing_id: 'brf_1' },
          at: '2026-05-20T10:00:05.000Z',
          expires_at: '2026-05-21T10:00:05.000Z',
        },
      },
    ])
    const takenOver = claimed('c2', '2026-05-20T10:01:30Z', history)
    key.given(takenOver).when(complete('c1', '2026-05-20T10:01:40Z')).thenNothing()
    key.given(takenOver).when(release('c1', '2026-05-20T10:01:40Z')).thenNothing()
  })

  test('completed: the same request replays the first result (nothing recorded) for 24 hours, another is a conflict; then the key is new', () => {
    const history = [...claimed('c1', '2026-05-20T09:00:00Z'), ...decided(claimed('c1', '2026-05-20T09:00:00Z'), complete('c1', '2026-05-20T09:00:00Z'))]
    key.given(history).when(claim('c2', '2026-05-20T10:00:00Z')).thenNothing()
    expect(nextStep(stateAfter(history), request, at('2026-05-20T10:00:00Z'))).toEqual({
      kind: 'replay',
      response: { ok: true, briefing_id: 'brf_1' },
      briefingId: 'brf_1',
      firstAt: '2026-05-20T09:00:00.000Z',
    })
    key.given(history).when(claim('c2', '2026-05-20T10:00:00Z', other)).thenRefused({ code: 'idempotency_conflict', message: /was used for a different body or persona/ })
    key.given(history).when(claim('c2', '2026-05-21T09:00:00Z', other)).thenState(expect.objectContaining({ status: 'claimed', attempt: expect.objectContaining({ id: 'c2' }) }))
  })

  test('an error before anything was recorded ends the attempt: the key is free for any request', () => {
    const history = claimed('c1', '2026-05-20T10:00:00Z')
    key.given(history).when(release('c1', '2026-05-20T10:00:02Z')).thenState({ status: 'free', open: null })
    const released = [...history, ...decided(history, release('c1', '2026-05-20T10:00:02Z'))]
    expect(nextStep(stateAfter(released), other, at('2026-05-20T10:00:03Z'))).toEqual({ kind: 'claim', continuing: null })
  })

  test('an error once the charge may be recorded keeps the attempt open: the same request continues it, another is a conflict', () => {
    const history = claimed('c1', '2026-05-20T10:00:00Z')
    const released = [...history, ...decided(history, release('c1', '2026-05-20T10:00:02Z', true))]
    expect(stateAfter(released)).toEqual({ status: 'free', open: { id: 'c1', openedAt: '2026-05-20T10:00:00.000Z', requestHash: 'h1', runs: 1 } })
    key.given(released).when(claim('c2', '2026-05-20T10:00:03Z')).thenState(expect.objectContaining({ claimId: 'c2', attempt: expect.objectContaining({ id: 'c1', runs: 2 }) }))
    key.given(released).when(claim('c2', '2026-05-20T10:00:03Z', other)).thenRefused({ code: 'idempotency_conflict' })
  })

  test('after a takeover, even an error before recording keeps the attempt open: the run taken over may still charge', () => {
    const takenOver = claimed('c2', '2026-05-20T10:01:30Z', claimed('c1', '2026-05-20T10:00:00Z'))
    key.given(takenOver).when(release('c2', '2026-05-20T10:01:35Z')).thenState(expect.objectContaining({ status: 'free', open: expect.objectContaining({ id: 'c1', runs: 2 }) }))
  })
})

test('the header: absent is no key; 1–255 visible ASCII characters are accepted; anything else is a 400 naming the header', () => {
  expect(parseIdempotencyKey(null)).toBeNull()
  for (const good of ['0f8fe2a3-4b1c-4c4e-9f0a-2f7f3c1d9e11', 'order-42/attempt:1', 'x', 'k'.repeat(255), '!~']) {
    expect(parseIdempotencyKey(good)).toBe(good)
  }
  for (const bad of ['', 'two words', 'k'.repeat(256), 'clé', 'tab\there']) {
    const error = (() => {
      try {
        parseIdempotencyKey(bad)
      } catch (e) {
        return e as AppError
      }
      throw new Error(`accepted ${JSON.stringify(bad)}`)
    })()
    expect(error.code).toBe('invalid_request')
    expect(error.extra.details).toEqual([{ field: 'Idempotency-Key', message: 'Expected 1 to 255 visible ASCII characters without spaces' }])
  }
})
