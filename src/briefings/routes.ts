import { Elysia } from 'elysia'
import { readJsonBody } from '../http/body.ts'
import type { Gate } from '../http/gate.ts'
import { echo, notFound } from '../shared/errors.ts'
import { findPersona, PersonaCatalogue, personaCatalogue } from './personas/index.ts'
import { BriefingResponse, type BriefingService } from './service.ts'

const CATALOGUE = personaCatalogue()

/**
 * GET /briefings/personas and POST /briefings/{persona}, relative to /api/v1. Order for a briefing,
 * after the gate: unknown persona (404) → content type, size, JSON (400/413) → body fields (400) →
 * unknown zone (404) → cache hit → quota (429) → writer (502) → charge.
 */
export function briefingRoutes(deps: { gate: Gate; service: BriefingService }) {
  return new Elysia({ name: 'briefings' })
    .use(deps.gate)
    .get('/briefings/personas', () => CATALOGUE, { scope: 'read', response: { 200: PersonaCatalogue } })
    .post(
      '/briefings/:persona',
      async ({ request, params, caller }) => {
        if (!findPersona(params.persona)) {
          throw notFound(`no persona ${echo(params.persona)}; see GET /api/v1/briefings/personas`)
        }
        const body = await readJsonBody(request)
        return deps.service.brief(params.persona, body, caller)
      },
      { scope: 'write', response: { 200: BriefingResponse } },
    )
}
