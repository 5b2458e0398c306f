import { describe, expect, test } from 'vitest'
import { briefingOf, replayOf, respond, stillCached } from '../../src/domain/briefings/answer.ts'
import { briefingGenerated, briefingServedFromCache } from '../../src/domain/briefings/events.ts'
import { attemptEventId, briefingReplayed, idempotencyStream } from '../../src/domain/briefings/idempotency.ts'
import { PERSONAS } from '../../src/domain/briefings/personas/index.ts'
import type { BriefingDraft } from '../../src/domain/briefings/writer.ts'

const input = PERSONAS.landlord.parse({ zone: 'Zona 8', profile: 'long_term' })
const draft: BriefingDraft = { verdict: 'HOLD', confidence: 'medium', headline: 'Zona 8 holds', body_md: '## Zona 8', writer: 'local_analyst', model: 'mirador-analyst-1' }
const asker = { ownerId: 'acme-corp', keyId: 'key_a' }
const generated = (attempt: { key: string; attemptId: string } | null = null) =>
  briefingGenerated({
    briefingId: 'brf_1',
    asker,
    persona: 'landlord',
    input,
    cacheKey: 'landlord:GT:{}',
    month: '2026-05',
    draft,
    attempt,
    at: new Date('2026-05-31T23:00:00Z'),
  })

describe('briefing events are built from what was decided, the time and the ids', () => {
  test('a generated briefing: the charge to the given month, cached 24 hours from its time; under a key it names the key and the attempt', () => {
    expect(generated()).toEqual({
      briefing_id: 'brf_1',
      owner_id: 'acme-corp',
      key_id: 'key_a',
      persona: 'landlord',
      input,
      cache_key: 'landlord:GT:{}',
      quota_month: '2026-05',
      result: { verdict: 'HOLD', confidence: 'medium', headline: 'Zona 8 holds', body_md: '## Zona 8' },
      writer: 'local_analyst',
      model: 'mirador-analyst-1',
      at: '2026-05-31T23:00:00.000Z',
      expires_at: '2026-06-01T23:00:00.000Z',
    })
    expect(generated({ key: 'order-1', attemptId: 'c1' })).toMatchObject({ idempotency_key: 'order-1', attempt_id: 'c1' })
  })

  test('a generated briefing is served from the cache until 24 hours after it was generated, not at that instant', () => {
    const briefing = briefingOf(generated())
    expect(stillCached(briefing, new Date('2026-06-01T22:59:59.999Z'))).toBe(true)
    expect(stillCached(briefing, new Date('2026-06-01T23:00:00.000Z'))).toBe(false)
  })

  test('a cache hit and a replay: free, recorded for the audit', () => {
    const at = new Date('2026-05-20T10:00:00Z')
    expect(briefingServedFromCache({ briefingId: 'brf_1', asker, persona: 'landlord', cacheKey: 'landlord:GT:{}', month: '2026-05', attempt: null, at })).toEqual({
      briefing_id: 'brf_1',
      owner_id: 'acme-corp',
      key_id: 'key_a',
      persona: 'landlord',
      cache_key: 'landlord:GT:{}',
      quota_month: '2026-05',
      at: '2026-05-20T10:00:00.000Z',
    })
    expect(briefingReplayed({ briefingId: 'brf_1', asker, persona: 'landlord', key: 'order-1', firstAt: '2026-05-19T10:00:00.000Z', at })).toEqual({
      briefing_id: 'brf_1',
      owner_id: 'acme-corp',
      key_id: 'key_a',
      persona: 'landlord',
      idempotency_key: 'order-1',
      first_at: '2026-05-19T10:00:00.000Z',
      quota_month: '2026-05',
      at: '2026-05-20T10:00:00.000Z',
    })
  })

  test('the answer: fields in one order, a replay the first answer again in that order', () => {
    const answer = respond(briefingOf(generated()), false, { used: 3, quota: 50, unlimited: false })
    expect(JSON.stringify(answer)).toBe(
      JSON.stringify({
        ok: true,
        briefing_id: 'brf_1',
        persona: 'landlord',
        verdict: 'HOLD',
        confidence: 'medium',
        headline: 'Zona 8 holds',
        body_md: '## Zona 8',
        cached: false,
        generated_at: '2026-05-31T23:00:00.000Z',
        expires_at: '2026-06-01T23:00:00.000Z',
        usage: { used: 3, quota: 50, unlimited: false },
      }),
    )
    // Recorded as JSON (jsonb may reorder the fields): the replay puts them back in order.
    const { usage, ...rest } = answer
    const stored = JSON.parse(JSON.stringify({ usage, ...rest })) as typeof answer
    expect(JSON.stringify(replayOf(stored))).toBe(JSON.stringify(answer))
  })

  test('an attempt\'s charge and cache hit have ids of their own, the same whichever run decides them', () => {
    const stream = idempotencyStream('acme-corp', 'order-1')
    const charge = attemptEventId(stream, 'c1', 'BriefingGenerated')
    expect(charge).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(attemptEventId(stream, 'c1', 'BriefingGenerated')).toBe(charge)
    expect(new Set([charge, attemptEventId(stream, 'c1', 'BriefingServedFromCache'), attemptEventId(stream, 'c2', 'BriefingGenerated')]).size).toBe(3)
    expect(attemptEventId(idempotencyStream('acme', 'order-1'), 'c1', 'BriefingGenerated')).not.toBe(charge)
  })
})
