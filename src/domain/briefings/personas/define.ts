import { type Static, type TObject, type TProperties, Type } from '@sinclair/typebox'
import { anyCaseOf, parseInput } from '../../../shared/input-schema.ts'
import { type Assessment, type Language, LANGUAGES } from '../analysis.ts'
import type { EstimateSubject, ZoneFacts } from '../facts.ts'
import { COUNTRIES, type Country, PROPERTY_TYPES } from '../../market/vocabulary.ts'
import { ZoneInput } from '../../market/zone-name.ts'

export const PERSONA_IDS = ['investor', 'homebuyer', 'landlord', 'developer', 'broker'] as const
export type PersonaId = (typeof PERSONA_IDS)[number]

export const oneOf = <T extends string>(values: readonly T[], options: { description?: string; default?: T } = {}) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    options,
  )

export const PropertyTypeInput = oneOf(PROPERTY_TYPES, { description: 'property type' })
export const UsdAmount = (description: string) => Type.Number({ exclusiveMinimum: 0, maximum: 1e10, description })

/** The input every persona shares, plus its own optional fields; unknown fields are refused. */
function personaSchema<P extends string, X extends TProperties>(profiles: readonly P[], extra: X) {
  return Type.Object(
    {
      zone: ZoneInput,
      profile: oneOf(profiles, { description: 'who the briefing is for' }),
      // Accepted in any letter case, as in query strings (`?country=gt`).
      country: Type.Optional(anyCaseOf(COUNTRIES, { description: 'country code', default: 'GT' })),
      language: Type.Optional(oneOf(LANGUAGES, { description: 'language of the briefing', default: 'es' })),
      ...extra,
    },
    { additionalProperties: false },
  )
}

/** A validated input with its defaults applied: the canonical form the cache key is built from. */
export type BriefingInput = { zone: string; profile: string; country: Country; language: Language } & Record<string, unknown>

type InputOf<P extends string, X extends TProperties> = Static<ReturnType<typeof personaSchema<P, X>>> & {
  country: Country
  language: Language
}

/** Words a briefing uses for one persona, per language. */
export type PersonaText<P extends string, V extends string> = {
  title: string
  profiles: Record<P, string>
  /** A short gloss of each verdict code. */
  verdicts: Record<V, string>
  /** What to do next, per verdict. */
  advice: Record<V, string>
  /** One more line per profile (what this verdict means for that kind of reader). */
  profileAdvice: Record<P, string>
}

export interface Persona {
  readonly id: PersonaId
  readonly name: string
  readonly description: string
  readonly profiles: readonly string[]
  /** Verdict vocabulary, most favourable (for brokers: highest price) first. */
  readonly verdicts: readonly string[]
  /** The request body schema (TypeBox, hence JSON Schema). */
  readonly schema: ReturnType<typeof personaSchema>
  /** The persona's rules in words, for the AI writer's prompt. */
  readonly rules: string
  readonly text: Record<Language, PersonaText<string, string>>
  /** Validates a request body and applies the defaults; throws invalid_request naming each bad field. */
  parse(body: unknown): BriefingInput
  /** The property the input describes, which the briefing is judged against an estimate of; null when it describes none. */
  estimateSubject(input: BriefingInput): EstimateSubject | null
  assess(input: BriefingInput, facts: ZoneFacts): Assessment
}

type Definition<I extends string, P extends string, V extends string, X extends TProperties> = {
  id: I
  name: string
  description: string
  profiles: readonly P[]
  verdicts: readonly V[]
  extra: X
  rules: string
  text: Record<Language, PersonaText<P, V>>
  /** The property the input describes, for the facts' estimate; a persona without it never has one. */
  estimate?(input: InputOf<P, X>): EstimateSubject | null
  assess(input: InputOf<P, X>, facts: ZoneFacts): Assessment & { verdict: V }
}

/** One persona, defined once: the schema, vocabulary, words and rules all come from this call. */
export function definePersona<I extends PersonaId, P extends string, V extends string, X extends TProperties>(
  definition: Definition<I, P, V, X>,
): Persona & { id: I } {
  const schema = personaSchema(definition.profiles, definition.extra)
  return {
    id: definition.id,
    name: definition.name,
    description: definition.description,
    profiles: definition.profiles,
    verdicts: definition.verdicts,
    schema: schema as unknown as Persona['schema'],
    rules: definition.rules,
    text: definition.text as Record<Language, PersonaText<string, string>>,
    parse: (body) => parseInput(schema as TObject, body, 'body') as unknown as BriefingInput,
    // parse() is the only way to obtain a BriefingInput for this persona, so the casts are sound.
    estimateSubject: (input) => definition.estimate?.(input as unknown as InputOf<P, X>) ?? null,
    assess: (input, facts) => definition.assess(input as unknown as InputOf<P, X>, facts),
  }
}
