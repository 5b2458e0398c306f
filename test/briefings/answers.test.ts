import { describe, expect, test } from 'vitest'
import { answeredOnRetry, leftUnanswered, type SentRecord, unansweredOf } from '../../src/domain/briefings/answers.ts'

const charge: SentRecord = { eventId: '0f8fe2a3-4b1c-4c4e-9f0a-2f7f3c1d9e11', type: 'BriefingGenerated', briefingId: 'brf_1', ownerId: 'acme-corp', month: '2026-05' }
const replay: SentRecord = { eventId: '7d1c0a8e-5b2f-4e3d-8c9a-1b2c3d4e5f60', type: 'BriefingReplayed', briefingId: 'brf_1', ownerId: 'acme-corp', month: '2026-05' }
const at = new Date('2026-05-10T09:00:00Z')

describe('whether a briefing request\'s client got what it recorded (the marks)', () => {
  test('an event left unanswered is unanswered; one never marked is answered', () => {
    expect(unansweredOf(leftUnanswered([charge], 503, 'service_unavailable', at))).toEqual(new Set([charge.eventId]))
    expect(unansweredOf([])).toEqual(new Set())
  })

  test('answered on a retry, it was answered, whichever mark the store took first', () => {
    const left = leftUnanswered([charge, replay], 503, 'service_unavailable', at)
    const retried = answeredOnRetry([charge], at)
    expect(unansweredOf([...left, ...retried])).toEqual(new Set([replay.eventId]))
    expect(unansweredOf([...retried, ...left])).toEqual(new Set([replay.eventId]))
  })

  test('a mark is recorded on the owner-month\'s answer stream, with an id of its own that is the same each time it is decided', () => {
    const [first] = leftUnanswered([charge], 503, 'service_unavailable', at)
    const [again] = leftUnanswered([charge], 503, 'service_unavailable', new Date('2026-05-10T09:00:05Z'))
    expect(first).toMatchObject({ stream: 'answer-acme-corp-2026-05', type: 'BriefingLeftUnanswered', data: { event_id: charge.eventId, event_type: 'BriefingGenerated', status: 503, error: 'service_unavailable' } })
    expect(again!.id).toBe(first!.id)
    expect(answeredOnRetry([charge], at)[0]!.id).not.toBe(first!.id)
  })
})
