import { BRIEFING_EXAMPLES } from './examples.ts'
import { Type } from '@sinclair/typebox'
import { BriefingResponse } from '../domain/briefings/answer.ts'
import { IDEMPOTENCY_HEADER, IDEMPOTENCY_KEY_PATTERN, nextStep, parseIdempotencyKey } from '../domain/briefings/idempotency.ts'
import { PERSONAS, type Persona } from '../domain/briefings/personas/index.ts'
import { quotaExceeded } from '../domain/briefings/quota.ts'
import { EventStoreUnavailable } from '../eventstore/port.ts'
import { readJsonBody } from '../http/body.ts'
import { rateLimiterUnavailable } from '../http/errors.ts'
import { refusalOf } from '../http/openapi.ts'
import { defineOperation } from '../http/operation.ts'
import { unknownZone } from './deps.ts'
import { upstreamFailure } from './openai-writer.ts'
import type { BriefingService } from './service.ts'

export type BriefingDeps = { service: BriefingService }

const IdempotencyHeaders = Type.Object({
  [IDEMPOTENCY_HEADER]: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: IDEMPOTENCY_KEY_PATTERN,
      // No `examples`: Swagger UI would fill it in, and a reader who tries the page twice with another
      // zone would meet 409 idempotency_conflict (test/docs/reference.test.ts).
      description:
        'retry safely: the same key with the same request within 24 h answers the first result again, free. Use one per request you mean, e.g. your order id (`order-4711-briefing`)',
    }),
  ),
})

const EXAMPLE_NOW = new Date('2026-05-07T10:20:30.000Z')

/** The conflict of a key reused for another body, as the idempotency rules answer it. */
function reusedKey(persona: Persona) {
  const step = nextStep(
    { status: 'completed', requestHash: 'first', briefingId: 'brf_Rdik6ACuZRtr8EvT', response: {}, at: EXAMPLE_NOW.toISOString(), expiresAt: '2026-05-08T10:20:30.000Z' },
    { ownerId: 'acme-corp', keyId: 'key_example', key: 'order-4711-briefing', persona: persona.id, requestHash: 'second' },
    EXAMPLE_NOW,
  )
  if (step.kind !== 'conflict') throw new Error('a reused key with another body must conflict')
  return step.error
}

/**
 * POST /briefings/{persona} for one persona: one operation per persona, so that each body schema is
 * documented on its own path (an unknown persona is an unknown path: 404), with examples built by
 * the code that answers each error. Order, after the gate: content type, size, JSON (400/413) →
 * body fields (400) → unknown zone (404) → cache hit → quota (429) → writer (502) → charge.
 */
function createBriefing(persona: Persona) {
  const name = `${persona.id[0]!.toUpperCase()}${persona.id.slice(1)}`
  return defineOperation({
    method: 'POST',
    path: `/briefings/${persona.id}`,
    access: 'write',
    operationId: `create${name}Briefing`,
    tag: 'Briefings',
    summary: `A briefing for the ${persona.id} persona (${persona.name}): verdict, confidence, headline and Markdown body`,
    description:
      `${persona.description} Verdicts: ${persona.verdicts.join(', ')}. ` +
      'Served from the 24-hour cache when the same persona, country and input were briefed before (free); ' +
      'otherwise written and charged as one unit of the owner’s monthly quota. Nothing is charged on any error.',
    body: {
      schema: Type.Unsafe({ ...persona.schema, title: `${persona.id} input` }),
      examples: { [persona.id]: { zone: 'Zona 10', profile: persona.profiles[0], country: 'GT', language: 'en' } },
    },
    ok: BriefingResponse,
    okExample: BRIEFING_EXAMPLES[persona.id],
    headers: IdempotencyHeaders,
    okHeaders: { 'Idempotent-Replayed': '"true" when the answer is the replay of an earlier request with the same Idempotency-Key' },
    errors: [
      refusalOf(() => persona.parse({ zone: 'Zona 03', profile: 'someone', colour: 'red' })),
      refusalOf(() => parseIdempotencyKey('two words')),
      unknownZone('Zona 99', 'GT'),
      reusedKey(persona),
      'payload_too_large',
      quotaExceeded({ used: 50, quota: 50, unlimited: false }, '2026-05', EXAMPLE_NOW),
      upstreamFailure(new Error('the writer failed'), 0),
      rateLimiterUnavailable(),
      new EventStoreUnavailable('example'),
    ],
    handler: (deps: BriefingDeps) => async ({ request, set, caller }) => {
      const body = await readJsonBody(request)
      const { briefing, replayed } = await deps.service.brief(persona.id, body, caller, request.headers.get('idempotency-key'))
      if (replayed) set.headers['idempotent-replayed'] = 'true'
      return briefing
    },
  })
}

/** One briefing operation per persona, in the catalogue's order. */
export const createBriefings = Object.values(PERSONAS).map(createBriefing)
