import type { BriefingInput, PersonaId } from './personas/index.ts'

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

/** The cache key of a validated input (defaults applied): shared by every owner asking the same thing. */
export const cacheKeyOf = (persona: PersonaId, input: BriefingInput) => `${persona}:${input.country}:${canonicalJson(input)}`
