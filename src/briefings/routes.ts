import { Elysia } from 'elysia'
import { readJsonBody } from '../http/body.ts'
import { Type } from '@sinclair/typebox'
import type { Gate } from '../http/gate.ts'
import { operation } from '../http/openapi.ts'
import { echo, notFound } from '../shared/errors.ts'
import { findPersona, PERSONA_IDS, PERSONAS, PersonaCatalogue, personaCatalogue } from '../domain/briefings/personas/index.ts'
import { IDEMPOTENCY_HEADER } from '../domain/briefings/idempotency.ts'
import { BriefingResponse } from '../domain/briefings/answer.ts'
import type { BriefingService } from './service.ts'

const CATALOGUE = personaCatalogue()

const PersonaParams = Type.Object({
  persona: Type.Union(
    PERSONA_IDS.map((id) => Type.Literal(id)),
    { description: 'one of the five personas (GET /api/v1/briefings/personas)' },
  ),
})
const IdempotencyHeaders = Type.Object({
  [IDEMPOTENCY_HEADER]: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[!-~]+$',
      description: 'retry safely: the same key with the same request within 24 h answers the first result again, free',
      examples: ['order-4711-briefing'],
    }),
  ),
})
/** The body is the persona's own input: one schema per persona, told apart by their `profile` values. */
const BriefingRequest = Type.Union(
  PERSONA_IDS.map((id) => Type.Unsafe({ ...PERSONAS[id].schema, title: `${id} input` })),
  { description: 'the input of the persona named in the path' },
)

/**
 * GET /briefings/personas and POST /briefings/{persona}, relative to /api/v1. Order for a briefing,
 * after the gate: unknown persona (404) → content type, size, JSON (400/413) → body fields (400) →
 * unknown zone (404) → cache hit → quota (429) → writer (502) → charge.
 */
export function briefingRoutes(deps: { gate: Gate; service: BriefingService }) {
  return new Elysia({ name: 'briefings' })
    .use(deps.gate)
    .get('/briefings/personas', () => CATALOGUE, {
      scope: 'read',
      detail: operation({
        operationId: 'listPersonas',
        tag: 'Briefings',
        summary: 'The five personas, each with its input JSON Schema and verdict vocabulary',
        ok: PersonaCatalogue,
        errors: [],
      }),
    })
    .post(
      '/briefings/:persona',
      async ({ request, params, set, caller }) => {
        if (!findPersona(params.persona)) {
          throw notFound(`no persona ${echo(params.persona)}; see GET /api/v1/briefings/personas`)
        }
        const body = await readJsonBody(request)
        const { briefing, replayed } = await deps.service.brief(params.persona, body, caller, request.headers.get('idempotency-key'))
        if (replayed) set.headers['idempotent-replayed'] = 'true'
        return briefing
      },
      {
        scope: 'write',
        detail: operation({
          operationId: 'createBriefing',
          tag: 'Briefings',
          summary: 'A briefing for a persona: verdict, confidence, headline and Markdown body',
          description:
            'Served from the 24-hour cache when the same persona, country and input were briefed before (free); ' +
            'otherwise written and charged as one unit of the owner’s monthly quota. Nothing is charged on any error.',
          params: PersonaParams,
          body: {
            schema: BriefingRequest,
            examples: {
              investor: { zone: 'Zona 3', profile: 'balanced', language: 'en', budget_usd: 250000 },
              homebuyer: { zone: 'Zona 10', profile: 'family', country: 'GT', bedrooms: 3 },
            },
          },
          ok: BriefingResponse,
          headers: IdempotencyHeaders,
          okHeaders: { 'Idempotent-Replayed': '"true" when the answer is the replay of an earlier request with the same Idempotency-Key' },
          errors: ['invalid_request', 'not_found', 'idempotency_conflict', 'payload_too_large', 'quota_exceeded', 'upstream_error'],
        }),
      },
    )
}
