import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { readJsonBody } from '../http/body.ts'
import type { Gate } from '../http/gate.ts'
import { operation, type OperationSpec, refusalOf } from '../http/openapi.ts'
import { rateLimiterUnavailable } from '../http/errors.ts'
import { EventStoreUnavailable } from '../eventstore/port.ts'
import { PERSONAS, type Persona, PersonaCatalogue, personaCatalogue } from '../domain/briefings/personas/index.ts'
import { IDEMPOTENCY_HEADER, nextStep, parseIdempotencyKey } from '../domain/briefings/idempotency.ts'
import { quotaExceeded } from '../domain/briefings/quota.ts'
import { upstreamFailure } from './openai-writer.ts'
import { BriefingResponse } from '../domain/briefings/answer.ts'
import { unknownZone } from './deps.ts'
import type { BriefingService } from './service.ts'

const CATALOGUE = personaCatalogue()

const IdempotencyHeaders = Type.Object({
  [IDEMPOTENCY_HEADER]: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[!-~]+$',
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

/** POST /briefings/{persona} for one persona: its own body schema, and examples built by the code that answers each error. */
function briefingOperation(persona: Persona): OperationSpec {
  const name = `${persona.id[0]!.toUpperCase()}${persona.id.slice(1)}`
  return {
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
    headers: IdempotencyHeaders,
    okHeaders: { 'Idempotent-Replayed': '"true" when the answer is the replay of an earlier request with the same Idempotency-Key' },
    errors: [
      refusalOf(() => persona.parse({ zone: 'zona 3', profile: 'someone', colour: 'red' })),
      refusalOf(() => parseIdempotencyKey('two words')),
      unknownZone('Zona 99', 'GT'),
      reusedKey(persona),
      'payload_too_large',
      quotaExceeded({ used: 50, quota: 50, unlimited: false }, '2026-05', EXAMPLE_NOW),
      upstreamFailure(new Error('the writer failed'), 0),
      rateLimiterUnavailable(),
      new EventStoreUnavailable('example'),
    ],
  }
}

/**
 * GET /briefings/personas and POST /briefings/{persona} for each persona, relative to /api/v1 (one
 * route per persona, so that each body schema is documented on its own path; an unknown persona is
 * an unknown path: 404). Order for a briefing, after the gate: content type, size, JSON (400/413) →
 * body fields (400) → unknown zone (404) → cache hit → quota (429) → writer (502) → charge.
 */
export function briefingRoutes(deps: { gate: Gate; service: BriefingService }) {
  const routes = new Elysia({ name: 'briefings' }).use(deps.gate).get('/briefings/personas', () => CATALOGUE, {
    scope: 'read',
    detail: operation({
      operationId: 'listPersonas',
      tag: 'Briefings',
      summary: 'The five personas, each with its input JSON Schema and verdict vocabulary',
      description: 'Each persona’s id, name, description, the JSON Schema of its briefing input (canonical spellings) and its verdicts.',
      ok: PersonaCatalogue,
      errors: [],
    }),
  })
  for (const persona of Object.values(PERSONAS)) {
    routes.post(
      `/briefings/${persona.id}`,
      async ({ request, set, caller }) => {
        const body = await readJsonBody(request)
        const { briefing, replayed } = await deps.service.brief(persona.id, body, caller, request.headers.get('idempotency-key'))
        if (replayed) set.headers['idempotent-replayed'] = 'true'
        return briefing
      },
      { scope: 'write', detail: operation(briefingOperation(persona)) },
    )
  }
  return routes
}
