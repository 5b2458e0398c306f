import { type Static, Type } from '@sinclair/typebox'
import { CONFIDENCE_LEVELS } from '../analysis.ts'
import { broker } from './broker.ts'
import type { Persona, PersonaId } from './define.ts'
import { developer } from './developer.ts'
import { homebuyer } from './homebuyer.ts'
import { investor } from './investor.ts'
import { landlord } from './landlord.ts'
import { wireForm } from '../../../shared/input-schema.ts'

export type { BriefingInput, Persona, PersonaId } from './define.ts'
export { PERSONA_IDS } from './define.ts'

export const PERSONAS: Readonly<Record<PersonaId, Persona>> = { investor, homebuyer, landlord, developer, broker }

export const findPersona = (id: string): Persona | undefined =>
  Object.hasOwn(PERSONAS, id) ? PERSONAS[id as PersonaId] : undefined

export const PersonaRecord = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  input_schema: Type.Record(Type.String(), Type.Unknown(), { description: 'JSON Schema of the request body' }),
  verdicts: Type.Array(Type.String()),
  confidence_levels: Type.Array(Type.String()),
})

export const PersonaCatalogue = Type.Object({
  ok: Type.Literal(true),
  count: Type.Integer(),
  personas: Type.Array(PersonaRecord),
})
export type PersonaCatalogue = Static<typeof PersonaCatalogue>

/** The GET /briefings/personas body. TypeBox schemas are JSON Schema in their wire form; the JSON round trip drops TypeBox's symbols. */
export function personaCatalogue(): PersonaCatalogue {
  const personas = Object.values(PERSONAS).map((p) => ({
    id: p.id,
    name: p.name,
    description: p.description,
    // As sent: every spelling accepted (`zona-3`, `gt`), the schema of the OpenAPI document's request body.
    input_schema: JSON.parse(JSON.stringify(wireForm(p.schema))) as Record<string, unknown>,
    verdicts: [...p.verdicts],
    confidence_levels: [...CONFIDENCE_LEVELS],
  }))
  return { ok: true, count: personas.length, personas }
}
