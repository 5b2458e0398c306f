import { Elysia } from 'elysia'
import { MAX_BODY_BYTES } from '../http/auth.ts'
import { principalOf } from '../http/request-context.ts'
import { AppError, invalidRequest, notFound } from '../shared/errors.ts'
import { findPersona, PersonaCatalogue, personaCatalogue } from './personas/index.ts'
import { BriefingResponse, type BriefingService } from './service.ts'

const JSON_TYPE = /^application\/json\s*(;|$)/i
const CATALOGUE = personaCatalogue()

/** Reads at most `limit` bytes of the body; more is payload_too_large whatever Content-Length said. */
async function readLimited(request: Request, limit: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array()
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > limit) {
      await reader.cancel()
      throw new AppError('payload_too_large', `the body is over ${limit} bytes (16 KiB), the limit`)
    }
    chunks.push(value)
  }
  const bytes = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}

/** The JSON body, parsed here rather than by Elysia so that each failure has a precise error. */
async function readJsonBody(request: Request): Promise<unknown> {
  const type = request.headers.get('content-type') ?? ''
  if (!JSON_TYPE.test(type)) {
    throw invalidRequest(`the body must be JSON sent with "Content-Type: application/json"${type ? `, not "${type}"` : ''}`, [
      { field: 'content-type', message: 'Expected application/json' },
    ])
  }
  const bytes = await readLimited(request, MAX_BODY_BYTES)
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    throw invalidRequest('the body is not valid UTF-8', [{ field: 'body', message: 'Expected UTF-8 text' }])
  }
  if (!text.trim()) throw invalidRequest('the body is empty; send a JSON object', [{ field: 'body', message: 'Expected a JSON object' }])
  try {
    return JSON.parse(text)
  } catch (error) {
    const reason = error instanceof SyntaxError ? error.message : 'malformed JSON'
    throw invalidRequest(`the body is not valid JSON: ${reason}`, [{ field: 'body', message: 'Malformed JSON' }])
  }
}

/**
 * GET /briefings/personas and POST /briefings/{persona}, relative to /api/v1, behind the auth
 * plugin. Order for a briefing: unknown persona (404) → content type, size, JSON (400/413) →
 * body fields (400) → unknown zone (404) → cache hit → quota (429) → writer (502) → charge.
 */
export function briefingRoutes(deps: { service: BriefingService }) {
  return new Elysia()
    .get('/briefings/personas', () => CATALOGUE, { response: { 200: PersonaCatalogue } })
    .post(
      '/briefings/:persona',
      async ({ request, params, set }) => {
        if (!findPersona(params.persona)) {
          throw notFound(`no persona "${params.persona}"; see GET /api/v1/briefings/personas`)
        }
        const body = await readJsonBody(request)
        const { briefing, replayed } = await deps.service.brief(params.persona, body, principalOf(request), request.headers.get('idempotency-key'))
        if (replayed) set.headers['idempotent-replayed'] = 'true'
        return briefing
      },
      { parse: 'none', response: { 200: BriefingResponse } },
    )
}
