import { ESTIMATE_METHOD_VERSION } from '../market/estimate.ts'
import { type BriefingInput, PERSONAS, type PersonaId } from './personas/index.ts'

export const CACHE_TTL_MS = 24 * 60 * 60 * 1000

/** JSON with object keys sorted at every level, so equal inputs give equal text whatever the key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

/**
 * The request a validated input (defaults applied) asks: its persona, country and canonical input.
 * An Idempotency-Key's request hash is of this (idempotency.ts, `requestHashOf`), whatever the answer depends on.
 */
export const requestKeyOf = (persona: PersonaId, input: BriefingInput) => `${persona}:${input.country}:${canonicalJson(input)}`

/**
 * The cache key of a validated input: shared by every owner asking the same thing. It is the request,
 * plus, when the persona judges it against an estimate (docs/decisions/0110-briefings-judge-against-estimates.md),
 * the estimate's subject and method version: two requests whose estimates could differ never share a briefing,
 * and a briefing cached before the method changed is not served after.
 */
export function cacheKeyOf(persona: PersonaId, input: BriefingInput): string {
  const subject = PERSONAS[persona].estimateSubject(input)
  const request = requestKeyOf(persona, input)
  return subject === null ? request : `${request}:estimate:${canonicalJson({ ...subject, method: ESTIMATE_METHOD_VERSION })}`
}
