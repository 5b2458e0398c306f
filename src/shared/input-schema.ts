import { type SchemaOptions, type Static, type TLiteral, type TObject, type TOptional, type TSchema, type TString, type TUnion, Type } from '@sinclair/typebox'
import { type ValueError, ValueErrorType } from '@sinclair/typebox/errors'
import { Value } from '@sinclair/typebox/value'
import { type FieldError, invalidRequest } from './errors.ts'
import { checker } from './validate.ts'

/**
 * Schemas of what clients send (query strings, paths, JSON bodies) and the steps that turn what was
 * sent into the schema's type: case folding → defaults → the check → messages for people. The
 * schema is the single description: the parser applies it, its TypeScript type comes from it and the
 * OpenAPI document shows its wire form (`wireForm`).
 *
 * Case folding: a schema marked with `anyCaseOf` or `spelledAnyOf` accepts its values in any
 * letter case (ASCII letters; `spelledAnyOf`: in every spelling its pattern admits) and the value
 * becomes the canonical spelling before the check; its wire form is that pattern, e.g.
 * `^(?:[Gg][Tt]|[Ss][Vv])$`.
 */

const ANY_CASE = Symbol.for('mirador.input.anyCase')
const EXPECTED = Symbol.for('mirador.input.expected')

type AnyCase = {
  /** The wire pattern: every spelling accepted. */
  pattern: string
  matches: RegExp
  /** A spelling the pattern accepts → the canonical one. */
  fold(text: string): string
  /** The canonical values, when the schema is a closed set. */
  values?: readonly string[]
}
type Marks = { [ANY_CASE]?: AnyCase; [EXPECTED]?: string }
type Described = TSchema & Marks & { description?: string; default?: unknown; examples?: unknown[] }

const REGEX_SYNTAX = /[\\^$.*+?()[\]{}|]/

/** `Zona` → `[Zz][Oo][Nn][Aa]`: the text in any case of its ASCII letters, as a regular expression. */
export const lettersInAnyCase = (text: string): string =>
  [...text].map((c) => (/^[A-Za-z]$/.test(c) ? `[${c.toUpperCase()}${c.toLowerCase()}]` : REGEX_SYNTAX.test(c) ? `\\${c}` : c)).join('')

const marked = <S extends TSchema>(schema: S, marks: Marks): S => ({ ...schema, ...marks })

const rule = (pattern: string, fold: (text: string) => string, values?: readonly string[]): AnyCase => ({
  pattern,
  matches: new RegExp(pattern),
  fold,
  ...(values ? { values } : {}),
})

/** One of `values`, sent in any letter case; the parsed value is the spelling in `values`. */
export function anyCaseOf<T extends string>(values: readonly T[], options: SchemaOptions = {}): TUnion<TLiteral<T>[]> {
  const byLowerCase = new Map(values.map((value) => [value.toLowerCase(), value]))
  const pattern = `^(?:${values.map(lettersInAnyCase).join('|')})$`
  const schema = Type.Union(
    values.map((value) => Type.Literal(value)),
    options,
  )
  return marked(schema, { [ANY_CASE]: rule(pattern, (text) => byLowerCase.get(text.toLowerCase()) ?? text, values) })
}

/**
 * A string sent in any of the spellings the wire `pattern` accepts, read as the canonical one `fold`
 * gives before the check (e.g. `zona-3`, `ZONA 3` → `Zona 3`); the document shows `pattern`.
 */
export function spelledAnyOf<S extends TString>(schema: S, pattern: string, fold: (text: string) => string): S {
  return marked(schema, { [ANY_CASE]: rule(pattern, fold) })
}

/** The message of a bad value, for a schema whose form words say best (e.g. `Expected "Zona N", e.g. Zona 10`). */
export const expecting = <S extends TSchema>(schema: S, message: string): S => marked(schema, { [EXPECTED]: message })

/** An optional property that is `value` when absent: present in the parsed type, not required on the wire. */
export const defaulted = <S extends TSchema>(schema: S, value: Static<S>) =>
  Type.Optional({ ...schema, default: value }) as unknown as TOptional<S & { default: Static<S> }>

type DefaultedKeys<P> = { [K in keyof P]: P[K] extends { default: unknown } ? K : never }[keyof P]
/** What parsing an object schema gives: its type, with every defaulted property present. */
export type Parsed<T extends TObject> = Static<T> & { [K in DefaultedKeys<T['properties']>]-?: Static<T['properties'][K]> }

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** `value` with every property whose schema accepts any letter case spelled canonically (a copy: the input is not changed). */
export function foldCase(schema: TSchema, value: unknown): unknown {
  const anyCase = (schema as Described)[ANY_CASE]
  if (anyCase) return typeof value === 'string' && anyCase.matches.test(value) ? anyCase.fold(value) : value
  const properties = (schema as Partial<TObject>).properties
  if (!properties || !isPlainObject(value)) return value
  const folded = { ...value }
  for (const [name, property] of Object.entries(properties)) {
    if (Object.hasOwn(folded, name)) folded[name] = foldCase(property, folded[name])
  }
  return folded
}

/** A schema as sent on the wire, for documents: values accepted in any letter case become their pattern. */
export function wireForm(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(wireForm)
  if (schema === null || typeof schema !== 'object') return schema
  const { [ANY_CASE]: anyCase, description, default: fallback, examples } = schema as Described
  if (!anyCase) return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, wireForm(value)]))
  const values = anyCase.values ? `one of ${anyCase.values.join(', ')}, in any letter case` : 'in any letter case'
  return {
    type: 'string',
    pattern: anyCase.pattern,
    description: description ? (anyCase.values ? `${description} (${values})` : `${description}, ${values}`) : values,
    ...(fallback !== undefined ? { default: fallback } : {}),
    ...(examples ?? anyCase.values ? { examples: examples ?? anyCase.values } : {}),
  }
}

type Bounds = { minimum?: number; maximum?: number; exclusiveMinimum?: number; exclusiveMaximum?: number }

function bounds({ minimum, maximum, exclusiveMinimum, exclusiveMaximum }: Bounds): string {
  if (minimum !== undefined && maximum !== undefined) return ` from ${minimum} to ${maximum}`
  const low = exclusiveMinimum !== undefined ? `greater than ${exclusiveMinimum}` : minimum !== undefined ? `at least ${minimum}` : ''
  const high = exclusiveMaximum !== undefined ? `less than ${exclusiveMaximum}` : maximum !== undefined ? `at most ${maximum}` : ''
  return [low, high].filter(Boolean).map((part, i) => (i === 0 ? ` ${part}` : ` and ${part}`)).join('')
}

/** What a schema expects, for people: `Expected an integer from 1 to 200`, `Expected one of: GT, SV (any letter case)`. */
export function expectation(schema: TSchema): string {
  const { [EXPECTED]: expected, [ANY_CASE]: anyCase } = schema as Described
  if (expected) return expected
  const literals = (schema as { anyOf?: { const?: unknown }[] }).anyOf
  if (literals?.length && literals.every((member) => member.const !== undefined)) {
    return `Expected one of: ${literals.map((member) => String(member.const)).join(', ')}${anyCase ? ' (any letter case)' : ''}`
  }
  switch (schema.type) {
    case 'integer':
      return `Expected an integer${bounds(schema as Bounds)}`
    case 'number':
      return `Expected a number${bounds(schema as Bounds)}`
    case 'string':
      return 'Expected text'
    case 'boolean':
      return 'Expected true or false'
    case 'object':
      return 'Expected an object'
    case 'array':
      return 'Expected a list'
    default:
      return 'Expected a value of the documented type'
  }
}

const lowerFirst = (text: string) => `${text[0]!.toLowerCase()}${text.slice(1)}`

function messageOf(error: ValueError): string {
  switch (error.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return `Required: ${lowerFirst(expectation(error.schema))}`
    case ValueErrorType.ObjectAdditionalProperties:
      return `Unknown field; the fields are ${Object.keys((error.schema as TObject).properties).join(', ')}`
    default:
      return expectation(error.schema)
  }
}

/** One message per bad field of `value` (`root` names the value itself), in the order of the schema's properties. */
export function inputErrors(schema: TSchema, value: unknown, root: string): FieldError[] {
  const messages = new Map<string, string>()
  for (const error of checker(schema).Errors(value)) {
    const field = error.path.replace(/^\//, '').replaceAll('/', '.') || root
    if (!messages.has(field)) messages.set(field, messageOf(error))
  }
  const order = Object.keys((schema as Partial<TObject>).properties ?? {})
  const rank = (field: string) => (order.includes(field) ? order.indexOf(field) : order.length)
  return [...messages].sort(([a], [b]) => rank(a) - rank(b)).map(([field, message]) => ({ field, message }))
}

/** The `invalid_request` naming every bad field of `what` (`query`, `body`…). */
export const invalidInput = (what: string, details: FieldError[]) =>
  invalidRequest(`invalid ${what}: ${details.map((d) => `${d.field}: ${d.message}`).join('; ')}`, details)

/** A JSON value (e.g. a request body) read by its schema: case folded, defaults applied, checked; else invalid_request. */
export function parseInput<T extends TObject>(schema: T, value: unknown, what: string): Parsed<T> {
  const prepared = isPlainObject(value) ? Value.Default(schema, foldCase(schema, value)) : value
  if (checker(schema).Check(prepared)) return prepared as Parsed<T>
  throw invalidInput(what, inputErrors(schema, prepared, what))
}
